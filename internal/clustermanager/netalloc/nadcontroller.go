package netalloc

import (
	"context"
	"errors"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/registry"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/fairqueue"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// NADController gives networks defined directly by NetworkAttachmentDefinitions
// (not rendered from a network object) their network ID and tunnel keys, as
// annotations on every NAD of the network, and releases them when the
// network's last NAD is gone.
type NADController struct {
	Client   client.Client
	Networks *registry.Networks
	Recovery *registry.Recovery
	Recorder record.EventRecorder

	mu      sync.Mutex
	network map[types.NamespacedName]string // NAD -> network name, to release on deletion
	// waiting are the NADs refused an ID or tunnel keys for want of room:
	// every release retries them.
	waiting map[types.NamespacedName]bool
}

// SetupWithManager registers the controller for NADs ovn-udn does not render.
func (r *NADController) SetupWithManager(mgr ctrl.Manager) error {
	unmanaged := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, managed := o.GetLabels()[netconf.ManagedByLabel]
		return !managed
	})
	room, err := r.Networks.OnRelease(mgr, r.waitingNADs)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("nad-allocation").
		For(&nadv1.NetworkAttachmentDefinition{}, builder.WithPredicates(unmanaged)).
		// A managed NAD appearing or going may refuse or admit the hand-made
		// NADs of its namespace (netconf.Admit): judge them again.
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(r.handMadeBeside),
			builder.WithPredicates(predicate.Not(unmanaged))).
		// An ID or tunnel keys released: the NADs that wait for room.
		WatchesRawSource(room).
		WithOptions(controller.Options{NewQueue: fairqueue.NewQueue}).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(r)))
}

// Reconcile implements reconcile.Reconciler for one NAD.
func (r *NADController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := r.Recovery.Ensure(ctx); err != nil {
		return ctrl.Result{}, err
	}
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, req.NamespacedName, nad); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.forget(ctx, req.NamespacedName)
	}
	if _, managed := nad.Labels[netconf.ManagedByLabel]; managed {
		return ctrl.Result{}, nil
	}
	c, err := netconf.Parse(nad)
	if err != nil {
		r.Recorder.Eventf(nad, corev1.EventTypeWarning, "InvalidConfig", "not rendered: %v", err)
		return ctrl.Result{}, nil
	}
	if c == nil {
		return ctrl.Result{}, nil
	}
	if nad.DeletionTimestamp != nil {
		// Going (another finalizer holds it): nothing to allocate, but
		// its network is released with its last NAD, after a restart
		// too (Recovery reserved the ID from its annotation).
		if _, _, allocated, _ := netconf.ParseAllocation(nad.Annotations); allocated {
			r.remember(req.NamespacedName, c.Name)
		}
		return ctrl.Result{}, nil
	}
	if why, err := r.refusal(ctx, nad); err != nil || why != nil {
		if why != nil {
			reason := ReasonNetworkNameNotOwned
			if errors.Is(why, netconf.ErrEgressNotAllowed) {
				reason = v1.ReasonEgressNotAllowed
			}
			r.Recorder.Eventf(nad, corev1.EventTypeWarning, reason, "not allocated, and no zone renders it: %v", why)
			log.FromContext(ctx).Info("refused NAD", "nad", req.String(), "reason", why.Error())
		}
		return ctrl.Result{}, err
	}
	if prev, had := r.remember(req.NamespacedName, c.Name); had && prev != c.Name {
		// The NAD now names another network: the one it named goes
		// with its last NAD, as on deletion.
		if err := r.releaseUnused(ctx, prev); err != nil {
			return ctrl.Result{}, err
		}
	}

	n, err := r.Networks.Allocate(c.Name, registry.TunnelKeysNeeded(c))
	r.wait(req.NamespacedName, err != nil)
	if err != nil {
		r.Recorder.Eventf(nad, corev1.EventTypeWarning, "AllocationFailed", "network %s: %v", c.Name, err)
		return ctrl.Result{}, nil
	}
	wrote, err := kubeobj.PatchAnnotations(ctx, r.Client, nad, netconf.AllocationAnnotations(n.ID, n.TunnelKeys))
	if err != nil || !wrote {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("allocated network", "nad", req.String(), "network", c.Name, "networkID", n.ID)
	return ctrl.Result{}, nil
}

// remember records the network a NAD names, to release it with its last
// NAD, and returns the one it named before.
func (r *NADController) remember(nad types.NamespacedName, network string) (prev string, had bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.network == nil {
		r.network = map[types.NamespacedName]string{}
	}
	prev, had = r.network[nad]
	r.network[nad] = network
	return prev, had
}

// wait records whether a NAD waits for room (an ID or tunnel keys).
func (r *NADController) wait(nad types.NamespacedName, waits bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !waits {
		delete(r.waiting, nad)
		return
	}
	if r.waiting == nil {
		r.waiting = map[types.NamespacedName]bool{}
	}
	r.waiting[nad] = true
}

// waitingNADs returns the NADs that wait for room.
func (r *NADController) waitingNADs(context.Context, client.Object) []reconcile.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]reconcile.Request, 0, len(r.waiting))
	for nad := range r.waiting {
		out = append(out, reconcile.Request{NamespacedName: nad})
	}
	return out
}

// handMadeBeside returns the hand-made NADs in a managed NAD's namespace.
func (r *NADController) handMadeBeside(ctx context.Context, o client.Object) []reconcile.Request {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if !netconf.Managed(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: list.Items[i].Name}})
		}
	}
	return out
}

// ReasonNetworkNameNotOwned is the Event reason on a hand-made NAD that claims
// a network name belonging to a UserDefinedNetwork or
// ClusterUserDefinedNetwork (or the default network's).
const ReasonNetworkNameNotOwned = "NetworkNameNotOwned"

// refusal returns why nad may not define its network (netconf.Admit, judged
// among the NADs of its namespace), or nil.
func (r *NADController) refusal(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) (error, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &list, client.InNamespace(nad.Namespace)); err != nil {
		return nil, err
	}
	all := []*nadv1.NetworkAttachmentDefinition{nad}
	for i := range list.Items {
		if list.Items[i].Name != nad.Name {
			all = append(all, &list.Items[i])
		}
	}
	_, refused := netconf.Admit(all)
	for _, x := range refused {
		if x.NAD == nad {
			return x.Reason, nil
		}
	}
	return nil, nil
}

// forget releases a deleted NAD's network if no other NAD carries it.
func (r *NADController) forget(ctx context.Context, key types.NamespacedName) error {
	r.mu.Lock()
	name, ok := r.network[key]
	delete(r.network, key)
	delete(r.waiting, key)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	return r.releaseUnused(ctx, name)
}

// releaseUnused releases the network name unless a NAD still defines it.
func (r *NADController) releaseUnused(ctx context.Context, name string) error {
	var all nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &all); err != nil {
		return err
	}
	for i := range all.Items {
		if c, _ := netconf.Parse(&all.Items[i]); c != nil && c.Name == name {
			return nil
		}
	}
	r.Networks.Release(name)
	log.FromContext(ctx).Info("released network", "network", name)
	return nil
}
