package zone

import (
	"context"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// clocks time what the zone's metrics report as latencies: a pod's wait
// for its annotation (from the first event showing it scheduled and not
// annotated) and a network's wait for its rows (from its NAD's creation).
// Only what happens while this process runs is timed: a pod annotated or a
// network rendered by an earlier run is not observed again.
type clocks struct {
	mu       sync.Mutex
	pods     map[types.UID]time.Time
	networks map[string]bool
}

// sawPod notes when a pod of the zone's node waiting for its annotation was
// first seen (Reconciler.sawPod picks those), and forgets deleted pods. A
// pod's entry goes when its annotation is written, in annotated: the watch
// event showing the annotation may arrive before the write returns.
func (c *clocks) sawPod(pod *corev1.Pod, deleted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if deleted {
		delete(c.pods, pod.UID)
		return
	}
	if c.pods == nil {
		c.pods = map[types.UID]time.Time{}
	}
	if _, ok := c.pods[pod.UID]; !ok {
		c.pods[pod.UID] = time.Now()
	}
}

// annotated returns how long a pod waited for the annotation just written,
// when the wait started in this process.
func (c *clocks) annotated(uid types.UID) (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.pods[uid]
	delete(c.pods, uid)
	return time.Since(t), ok
}

// firstRender reports whether this is the first time the network's rows
// were inserted in this process.
func (c *clocks) firstRender(network string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.networks[network] {
		return false
	}
	if c.networks == nil {
		c.networks = map[string]bool{}
	}
	c.networks[network] = true
	return true
}

// forgetNetwork forgets that a network was rendered: one created again
// under its name is timed again.
func (c *clocks) forgetNetwork(network string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.networks, network)
}

// sawPod passes a pod event to the clocks: deletions always, a pod waiting
// for its annotation when it is on the zone's node (the node is looked up
// only for those, not for the many events of annotated pods).
func (r *Reconciler) sawPod(ctx context.Context, pod *corev1.Pod, deleted bool) {
	if deleted {
		r.clocks.sawPod(pod, true)
		return
	}
	if pod.Spec.NodeName == "" || pod.Annotations[podnet.Annotation] != "" {
		return
	}
	if local, ok, err := r.localNode(ctx); err == nil && ok && local.Name == pod.Spec.NodeName {
		r.clocks.sawPod(pod, false)
	}
}

// observeAnnotation records a pod's wait for its first annotation.
func (r *Reconciler) observeAnnotation(pod *corev1.Pod) {
	if d, ok := r.clocks.annotated(pod.UID); ok {
		metrics.PodAnnotationSeconds.WithLabelValues(r.Zone).Observe(d.Seconds())
	}
}

// observeNetworkReady records, on a network's first insert in this process,
// the time since its oldest NAD was created.
func (r *Reconciler) observeNetworkReady(ctx context.Context, network string) {
	if !r.clocks.firstRender(network) {
		return
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.MatchingFields{feature.NetworkNameIndex: network}); err != nil || len(nads.Items) == 0 {
		return
	}
	oldest := nads.Items[0].CreationTimestamp.Time
	for _, n := range nads.Items[1:] {
		if n.CreationTimestamp.Time.Before(oldest) {
			oldest = n.CreationTimestamp.Time
		}
	}
	metrics.NetworkReadySeconds.WithLabelValues(r.Zone).Observe(time.Since(oldest).Seconds())
}

// podPortsByNetwork counts the pod ports in the zone's Northbound cache by
// network (ovn_udn_pods).
func (r *Reconciler) podPortsByNetwork() (map[string]int, error) {
	ports, err := ovsdb.List(context.Background(), r.NB, func(p *nbdb.LogicalSwitchPort) bool { return p.ExternalIDs[PodExternalID] != "" })
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, p := range ports {
		out[p.ExternalIDs[topology.NetworkKey]]++
	}
	return out, nil
}
