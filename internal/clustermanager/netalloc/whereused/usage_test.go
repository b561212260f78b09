package whereused

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/activity"
)

// nodeView is one node's pods by namespace, each namespace on one network.
type nodeView struct {
	pods map[string]bool // namespace -> a pod there on the node
	fail bool
}

func (v nodeView) NodePods(node string) ([]corev1.Pod, error) {
	if v.fail {
		return nil, errors.New("API server unreachable")
	}
	var out []corev1.Pod
	for _, ns := range slices.Sorted(maps.Keys(v.pods)) {
		if v.pods[ns] {
			out = append(out, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p"}, Spec: corev1.PodSpec{NodeName: node}})
		}
	}
	return out, nil
}
func (v nodeView) NamespaceNetworks(ns string) ([]string, error) { return []string{ns + ".net"}, nil }
func (v nodeView) Connected(string) ([]string, error)            { return nil, nil }
func (v nodeView) EveryNode() ([]string, error)                  { return nil, nil }
func (v nodeView) EgressNetworks(string) ([]string, error)       { return nil, nil }

// TestUsageDecide steps a node through networks it uses, stops using and
// uses again, with a clock: a slice is kept Delay after its last use, and
// released then only when the live read agrees.
func TestUsageDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	now := t0
	cache, live := nodeView{pods: map[string]bool{}}, nodeView{pods: map[string]bool{}}
	u := &Usage{
		Cache: func(context.Context) activity.NodeView { return cache },
		Live:  func(context.Context) activity.NodeView { return live },
		Delay: time.Minute,
		Now:   func() time.Time { return now },
	}
	primary := func(n string) bool { return n != "sec.net" && n != "default" }
	all := []string{"a.net", "b.net", "default", "sec.net"}
	type step struct {
		at        time.Duration
		cache     []string // namespaces with pods in the cache
		live      []string // and in the API server
		liveFails bool
		held      []string
		want      []string // networks of all to hold
		wantNext  time.Duration
		wantErr   bool
	}
	for i, s := range []step{
		{at: 0, want: []string{"default", "sec.net"}},
		{at: 0, cache: []string{"a"}, want: []string{"a.net", "default", "sec.net"}},
		{at: time.Second, held: []string{"a.net"}, want: []string{"a.net", "default", "sec.net"}, wantNext: time.Minute}, // its pod left: kept
		{at: 31 * time.Second, held: []string{"a.net"}, want: []string{"a.net", "default", "sec.net"}, wantNext: 30 * time.Second},
		{at: 61 * time.Second, held: []string{"a.net"}, live: []string{"a"}, want: []string{"a.net", "default", "sec.net"}},                   // due, but the API server has a pod
		{at: 62 * time.Second, held: []string{"a.net"}, want: []string{"a.net", "default", "sec.net"}, wantNext: time.Minute},                 // so a new period
		{at: 122 * time.Second, held: []string{"a.net"}, liveFails: true, want: []string{"a.net", "default", "sec.net"}, wantNext: LiveRetry}, // nothing released unconfirmed
		{at: 122 * time.Second, held: []string{"a.net"}, want: []string{"default", "sec.net"}},                                                // released
		{at: 123 * time.Second, cache: []string{"b"}, held: []string{"b.net", "default", "sec.net"}, want: []string{"b.net", "default", "sec.net"}},
	} {
		now = t0.Add(s.at)
		cache.pods, live.pods = map[string]bool{}, map[string]bool{}
		for _, ns := range s.cache {
			cache.pods[ns] = true
		}
		for _, ns := range s.live {
			live.pods[ns] = true
		}
		live.fail = s.liveFails
		use, next, err := u.Decide(context.Background(), "n1", s.held, primary)
		if (err != nil) != s.wantErr {
			t.Fatalf("step %d: err %v, want error %v", i, err, s.wantErr)
		}
		if err != nil {
			continue
		}
		var got []string
		for _, n := range all {
			if use(n) {
				got = append(got, n)
			}
		}
		if diff := cmp.Diff(s.want, got); diff != "" || next != s.wantNext {
			t.Errorf("step %d at %v: next %v (want %v), held (-want +got):\n%s", i, s.at, next, s.wantNext, diff)
		}
	}
	u.Forget("n1")
	if len(u.since) != 0 {
		t.Errorf("Forget left %v", u.since)
	}
}
