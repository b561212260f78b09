package zone

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// renderedAnnotations are the Node annotations a zone renders from; a Node
// event changing none of them requeues nothing (nodeChanges).
var renderedAnnotations = []string{nodeinfo.NodeIDAnnotation, nodeinfo.NodeSubnetsAnnotation, nodeinfo.ChassisIDAnnotation,
	nodeinfo.ZoneAnnotation, nodeinfo.PrimaryIfAddrAnnotation, nodeinfo.EncapIPAnnotation, nodeinfo.GatewayAnnotation,
	nodeinfo.Layer2TopologyVersionAnnotation}

// nodeEvents requeues what a Node's change can alter. The zone's own node
// is every key of the zone (services included), but of the networks only
// those whose slice on it changed when the subnets are all that changed.
// Another node is what the features say it concerns
// (feature.RemoteNodeDependent): the chassis, its pods (their remote ports
// follow its chassis), connects and links, and only the networks that
// render it: those whose last plan's node set holds it (activity; a
// network not planned yet, or being planned, counts), and when only its
// subnets changed, only those whose slice on it changed. With slices everywhere every Layer3 network's slice
// is in every node's subnets annotation, so without that a network created
// in a cluster of 500 nodes re-planned every key of every zone once per
// node annotated.
func (r *Reconciler) nodeEvents() handler.TypedEventHandler[client.Object, feature.Key] {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], old, cur *corev1.Node) {
		for _, k := range r.nodeKeys(ctx, old, cur) {
			q.Add(k)
		}
	}
	node := func(o any) *corev1.Node {
		n, _ := o.(*corev1.Node)
		return n
	}
	return handler.TypedFuncs[client.Object, feature.Key]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, nil, node(e.Object))
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, node(e.ObjectOld), node(e.ObjectNew))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, node(e.Object), nil)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, nil, node(e.Object))
		},
	}
}

// nodeKeys are the keys a Node's change (old nil: created; cur nil:
// deleted) requeues (nodeEvents).
func (r *Reconciler) nodeKeys(ctx context.Context, old, cur *corev1.Node) []feature.Key {
	var name string
	local := false
	for _, n := range []*corev1.Node{old, cur} {
		if n != nil {
			name = n.Name
			local = local || n.Name == r.Zone || n.Annotations[nodeinfo.ZoneAnnotation] == r.Zone
		}
	}
	if name == "" {
		return nil
	}
	changed, every := slicesChanged(old, cur, func(network string) bool {
		n, ok, err := r.network(ctx, network)
		return err != nil || !ok || n.Topology == netconf.TopologyLayer2
	})
	if local {
		keys, err := r.Keys(ctx)
		if err != nil {
			return nil
		}
		if every {
			return keys
		}
		return r.localSliceKeys(ctx, keys, changed)
	}
	var keys []feature.Key
	for _, f := range r.features {
		if dep, ok := f.(feature.RemoteNodeDependent); ok {
			keys = append(keys, dep.RemoteNodeKeys(ctx, name, changed)...)
		}
	}
	return keys
}

// networksRendering returns the keys of the networks whose rendering of
// node may have changed: those changed says may, of those that render the
// node (a network not planned yet, or being planned, may).
func (r *Reconciler) networksRendering(networks []string, node string, changed func(network string) bool) []feature.Key {
	var keys []feature.Key
	for _, n := range networks {
		if !changed(n) {
			continue
		}
		if set, known, planning := r.active.lookup(n); known && !planning && !set.Has(node) && !r.active.waits(n, node) {
			continue // not rendered with the node, nor waiting for its slice
		}
		keys = append(keys, feature.NetworkKey(n))
	}
	return keys
}

// localSliceKeys filters the zone's keys for a change of its own node's
// subnets alone: the networks whose slice changed, and the pods and
// services of their namespaces (a pod attaches to its own namespace's
// NADs only, podnet.ParsePod; every pod and service when the default
// network's slice changed); the chassis, policies, connects and links as
// they are.
func (r *Reconciler) localSliceKeys(ctx context.Context, keys []feature.Key, changed func(network string) bool) []feature.Key {
	everyNamespace := changed(nodeinfo.DefaultNetwork)
	namespaces := map[string]bool{}
	if !everyNamespace {
		networks, err := r.Networks(ctx)
		if err != nil {
			return keys
		}
		for _, n := range networks {
			if !changed(n) {
				continue
			}
			nss, err := r.networkNamespaces(ctx, n)
			if err != nil {
				return keys
			}
			for _, ns := range nss {
				namespaces[ns] = true
			}
		}
	}
	return slices.DeleteFunc(keys, func(k feature.Key) bool {
		switch k.Kind {
		case feature.KindNetwork:
			return !changed(k.Network)
		case feature.KindPod, feature.KindService:
			return !everyNamespace && !namespaces[k.Namespace]
		}
		return false
	})
}

// slicesChanged tells, for a Node's change, whether a network's rendering
// of the node may have changed: always, unless the node's subnets and its
// Layer2 topology version are all that changed among what zones render
// from, and then for the networks whose slice on the node changed and,
// when the version changed, the networks layer2 says are Layer2 ones (a
// version renders nothing else differently; nil: every network).
//
// every reports the first case (anything else changed, or the node came
// or went).
func slicesChanged(old, cur *corev1.Node, layer2 func(network string) bool) (changed func(network string) bool, every bool) {
	all := func(string) bool { return true }
	if old == nil || cur == nil {
		return all, true
	}
	for _, k := range renderedAnnotations {
		if k != nodeinfo.NodeSubnetsAnnotation && k != nodeinfo.Layer2TopologyVersionAnnotation && old.Annotations[k] != cur.Annotations[k] {
			return all, true
		}
	}
	a, err1 := nodeinfo.ParseSubnets(old.Annotations[nodeinfo.NodeSubnetsAnnotation])
	b, err2 := nodeinfo.ParseSubnets(cur.Annotations[nodeinfo.NodeSubnetsAnnotation])
	if err1 != nil || err2 != nil {
		return all, true
	}
	v1 := func(n *corev1.Node) bool {
		return n.Annotations[nodeinfo.Layer2TopologyVersionAnnotation] == nodeinfo.Layer2TopologyV1
	}
	flipped := v1(old) != v1(cur)
	if flipped && layer2 == nil {
		return all, true
	}
	return func(network string) bool { return !slices.Equal(a[network], b[network]) || flipped && layer2(network) }, false
}

// nodeChanges passes Node events that can change a zone's rendering.
var nodeChanges = predicate.Funcs{
	// A Node of the informer's initial list requeues nothing: at start
	// every key comes from its own object's initial event (a network's
	// NAD, a pod, a service...) or from the database's owners, and each
	// Node requeueing every key again, one after the other, made a
	// restart plan every key once per node (20 times at 1000 × 20).
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc: func(e event.UpdateEvent) bool {
		for _, k := range renderedAnnotations {
			if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
				return true
			}
		}
		return false
	},
}
