package zone

import (
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// keyLocks lets one reconcile of a key run at a time, others in parallel,
// and keeps nothing once the key is idle.
func TestKeyLocks(t *testing.T) {
	var k keyLocks
	var inside [2]atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []feature.Key{feature.NetworkKey("a"), feature.PodKey("ns", "b")}[i%2]
			unlock := k.lock(key)
			defer unlock()
			if n := inside[i%2].Add(1); n != 1 {
				t.Errorf("%d reconciles of %s at once", n, key)
			}
			inside[i%2].Add(-1)
		}()
	}
	wg.Wait()
	if len(k.m) != 0 {
		t.Fatalf("%d keys kept after every reconcile ended", len(k.m))
	}
}

// TestNodeInitialListRequeuesNothing: a Node of the informer's initial list
// passes no event (every key comes from its own object at start; each Node
// requeueing every key made a restart plan every key once per node), a Node
// created later passes, and so does a change of what zones render from.
func TestNodeInitialListRequeuesNothing(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{nodeinfo.ChassisIDAnnotation: "a"}}}
	if nodeChanges.Create(event.CreateEvent{Object: n, IsInInitialList: true}) {
		t.Error("a Node of the initial list passes")
	}
	if !nodeChanges.Create(event.CreateEvent{Object: n}) {
		t.Error("a Node created after the start does not pass")
	}
	m := n.DeepCopy()
	m.Annotations[nodeinfo.ChassisIDAnnotation] = "b"
	if !nodeChanges.Update(event.UpdateEvent{ObjectOld: n, ObjectNew: m}) {
		t.Error("a Node's new chassis does not pass")
	}
}

// owners spells keys as their OVSDB owners (nil for none), for tables of
// expected keys written as the databases hold them.
func owners(keys []feature.Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}
