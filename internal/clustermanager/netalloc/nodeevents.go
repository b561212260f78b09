package netalloc

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// What requeues which node (SetupWithManager).

// curOld is an event handler calling f with each object as it is and as
// it was (nil before a create, after a delete).
func curOld(f func(ctx context.Context, cur, old client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request])) handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			f(ctx, e.Object, nil, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			f(ctx, e.ObjectNew, e.ObjectOld, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			f(ctx, nil, e.Object, q)
		},
	}
}

// podNode requeues a pod's node when the pod starts or stops using it.
func podNode(cur, old client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	uses := func(o client.Object) string {
		if p, ok := o.(*corev1.Pod); ok && activity.UsesNode(p) {
			return p.Spec.NodeName
		}
		return ""
	}
	a, b := uses(cur), uses(old)
	if a == b {
		return
	}
	for _, n := range []string{a, b} {
		if n != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
		}
	}
}

// egressNodes requeues the nodes where an EgressIP's change moves the use
// of the networks of the namespaces it selects (activity.EgressChange):
// those that started or stopped holding one of its IPs, and every
// egress-assignable node when it came, went or selects others.
func (r *NodeController) egressNodes(ctx context.Context, cur, old client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	a, _ := cur.(*v1.EgressIP)
	b, _ := old.(*v1.EgressIP)
	nodes, assignable := activity.EgressChange(b, a)
	if assignable {
		more, err := activity.AssignableNodes(ctx, r.Client)
		if err != nil {
			log.FromContext(ctx).Error(err, "listing the egress-assignable nodes")
		}
		nodes = append(nodes, more...)
	}
	for _, n := range nodes {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
	}
}

// namespaceEgressNodes requeues, when a namespace's labels change and an
// EgressIP selects it before or after, the nodes that use its networks for
// EgressIPs: those holding the selecting objects' IPs and the
// egress-assignable ones.
func (r *NodeController) namespaceEgressNodes(ctx context.Context, cur, old client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var list v1.EgressIPList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing EgressIPs")
		r.addAllNodes(ctx, q)
		return
	}
	var nodes []string
	selected := false
	for i := range list.Items {
		e := &list.Items[i]
		if !selectsEither(&e.Spec.NamespaceSelector, cur, old) {
			continue
		}
		selected = true
		for _, it := range e.Status.Items {
			nodes = append(nodes, it.Node)
		}
	}
	if !selected {
		return
	}
	more, err := activity.AssignableNodes(ctx, r.Client)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing the egress-assignable nodes")
	}
	for _, n := range append(nodes, more...) {
		if n != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
		}
	}
}

// selectsEither reports whether sel selects either namespace (nil ones
// skipped).
func selectsEither(sel *metav1.LabelSelector, objs ...client.Object) bool {
	for _, o := range objs {
		if o != nil && kubeobj.Selects(sel, o.GetLabels()) {
			return true
		}
	}
	return false
}

// serviceChanged requeues every node when a Service starts or stops being
// served on every node (or one that is comes or goes).
func (r *NodeController) serviceChanged(ctx context.Context, cur, old client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	every := func(o client.Object) bool {
		s, ok := o.(*corev1.Service)
		return ok && activity.NeedsEveryNode(s)
	}
	switch {
	case !every(cur) && !every(old):
		return // neither is served on every node
	case cur != nil && old != nil && every(cur) == every(old):
		return // still served on every node
	}
	r.addAllNodes(ctx, q)
}

func (r *NodeController) allNodes(ctx context.Context, _ client.Object) []reconcile.Request {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		log.FromContext(ctx).Error(err, "listing nodes")
		return nil
	}
	out := make([]reconcile.Request, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n.Name}})
	}
	return out
}

func (r *NodeController) addAllNodes(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, req := range r.allNodes(ctx, nil) {
		q.Add(req)
	}
}

// nadChanged updates the Layer3 network set and, when it changed, requeues
// every node; with a Usage also when a NAD comes, goes or changes its
// config (it can make a namespace's pods use a network), not when only its
// annotations or status change (cluster-manager writes its network ID).
func (r *NodeController) nadChanged(ctx context.Context, o, old client.Object, deleted bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	nad, ok := o.(*nadv1.NetworkAttachmentDefinition)
	if !ok {
		return
	}
	changed := r.ObserveNAD(nad, deleted)
	if !changed && r.Usage != nil {
		prev, ok := old.(*nadv1.NetworkAttachmentDefinition)
		changed = !ok || prev.Spec.Config != nad.Spec.Config
	}
	if changed {
		r.addAllNodes(ctx, q)
	}
}

// retry has the nodes that lacked a slice where a deleted node's were freed
// reconciled again: queued, so that each gets its own result (its release
// timer, its retry while incomplete); synced in place without a queue
// (once: what their syncs free waits for their own reconciles).
func (r *NodeController) retry(ctx context.Context, nodes []string) error {
	for _, name := range nodes {
		other := &corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, other); err != nil {
			// Gone too (its own deletion frees what it held), or not
			// readable now: it takes its slice at its own next try,
			// within a minute.
			continue
		}
		if r.retries != nil {
			select {
			case r.retries <- event.TypedGenericEvent[*corev1.Node]{Object: other}:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if _, err := r.sync(ctx, other); err != nil {
			return err
		}
	}
	return nil
}
