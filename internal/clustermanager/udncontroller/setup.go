package udncontroller

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/fairqueue"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// SetupWithManager registers both reconcilers and the watches that requeue
// them: a network is reconciled when it changes, and when anything its
// decision depends on changes (its NADs and any primary NAD of its namespaces,
// the namespaces' labels, the pods that keep it in use, other networks that
// compete for a namespace or a VRF).
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	udnRoom, err := c.Networks.OnRelease(mgr, c.udnsWaiting)
	if err != nil {
		return err
	}
	cudnRoom, err := c.Networks.OnRelease(mgr, c.cudnsWaiting)
	if err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("userdefinednetwork").
		For(&v1.UserDefinedNetwork{}).
		// One tenant's burst of networks must not hold back another's.
		WithOptions(controller.Options{NewQueue: fairqueue.NewQueue}).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(c.udnsForNAD)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(c.udnsInNamespace)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.udnsForPod), builder.WithPredicates(podChanges)).
		Watches(&v1.ClusterUserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(c.failingUDNs)).
		// A network waiting for room: another of its namespace went, or any
		// network's ID was released.
		Watches(&v1.UserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(c.udnsWaitingIn)).
		WatchesRawSource(udnRoom).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(&UDNReconciler{c}))); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusteruserdefinednetwork").
		For(&v1.ClusterUserDefinedNetwork{}).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(c.cudnsForNamespaceOf)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(c.allCUDNs)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(c.cudnsForNamespaceOf), builder.WithPredicates(podChanges)).
		Watches(&v1.ClusterUserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(c.failingCUDNs)).
		Watches(&v1.UserDefinedNetwork{}, handler.EnqueueRequestsFromMapFunc(c.cudnsForNamespaceOf)).
		WatchesRawSource(cudnRoom).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(&CUDNReconciler{c})))
}

// podChanges passes pod events that can change whether a network is in use:
// creation, deletion, and updates of phase, networks annotation or deletion.
var podChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return o.Status.Phase != n.Status.Phase ||
			o.Annotations[netconf.NetworksAnnotation] != n.Annotations[netconf.NetworksAnnotation] ||
			(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	},
}

// requests lists objects of one kind and returns the keys of those keep accepts.
func requests[T any, L interface {
	client.ObjectList
	*LT
}, LT any](ctx context.Context, c client.Client, items func(*LT) []T, keep func(*T) bool, opts ...client.ListOption) []reconcile.Request {
	list := L(new(LT))
	if err := c.List(ctx, list, opts...); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, it := range items(list) {
		if keep != nil && !keep(&it) {
			continue
		}
		o := any(&it).(client.Object)
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}})
	}
	return out
}

func udnItems(l *v1.UserDefinedNetworkList) []v1.UserDefinedNetwork                { return l.Items }
func cudnItems(l *v1.ClusterUserDefinedNetworkList) []v1.ClusterUserDefinedNetwork { return l.Items }

func (c *Controller) udnsIn(ctx context.Context, ns string) []reconcile.Request {
	return requests[v1.UserDefinedNetwork, *v1.UserDefinedNetworkList](ctx, c.Client, udnItems, nil, client.InNamespace(ns))
}

// udnsForNAD requeues the UDN a NAD is named after (its owner, or the UDN a
// foreign NAD blocks) and, for a primary NAD, the primary UDNs of its
// namespace, whose primary-network decision it may change.
func (c *Controller) udnsForNAD(ctx context.Context, o client.Object) []reconcile.Request {
	primary := true
	if nad, ok := o.(*nadv1.NetworkAttachmentDefinition); ok {
		if conf, err := netconf.Parse(nad); err == nil && (conf == nil || !conf.IsPrimary()) {
			primary = false
		}
	}
	return requests[v1.UserDefinedNetwork, *v1.UserDefinedNetworkList](ctx, c.Client, udnItems, func(u *v1.UserDefinedNetwork) bool {
		return u.Name == o.GetName() || (primary && u.Spec.Flat().Role == v1.Primary)
	}, client.InNamespace(o.GetNamespace()))
}

// udnsForPod requeues the UDNs of a pod's namespace whose decision depends on
// pods: those being deleted (in use?) and primary ones not yet created (pods
// already there?).
func (c *Controller) udnsForPod(ctx context.Context, o client.Object) []reconcile.Request {
	return requests[v1.UserDefinedNetwork, *v1.UserDefinedNetworkList](ctx, c.Client, udnItems, func(u *v1.UserDefinedNetwork) bool {
		return u.DeletionTimestamp != nil ||
			(u.Spec.Flat().Role == v1.Primary && !meta.IsStatusConditionTrue(u.Status.Conditions, v1.ConditionNetworkCreated))
	}, client.InNamespace(o.GetNamespace()))
}

func (c *Controller) udnsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return c.udnsIn(ctx, o.GetName())
}

// failingUDNs requeues UDNs whose condition is False: a change to a CUDN may
// resolve the primary-network conflict that holds them back.
func (c *Controller) failingUDNs(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests[v1.UserDefinedNetwork, *v1.UserDefinedNetworkList](ctx, c.Client, udnItems, func(u *v1.UserDefinedNetwork) bool {
		return meta.IsStatusConditionFalse(u.Status.Conditions, v1.ConditionNetworkCreated)
	})
}

// cudnsForNamespaceOf requeues the CUDNs that select o's namespace or own a NAD
// there (o a NAD, a pod or a UDN of that namespace): a pod leaving a
// namespace no longer selected may let its CUDN's NAD go.
func (c *Controller) cudnsForNamespaceOf(ctx context.Context, o client.Object) []reconcile.Request {
	ns := &corev1.Namespace{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: o.GetNamespace()}, ns); err != nil {
		ns.Name = o.GetNamespace()
	}
	// The CUDNs' NADs there, by name (a CUDN's NAD is named after its
	// network); o itself when it is one, as a deleted one is listed no more.
	nads := map[string]bool{}
	if _, isNAD := o.(*nadv1.NetworkAttachmentDefinition); isNAD {
		nads[o.GetName()] = true
	}
	var list nadv1.NetworkAttachmentDefinitionList
	if err := c.Client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingLabels{netconf.OwnerKindLabel: "ClusterUserDefinedNetwork"}); err == nil {
		for _, n := range list.Items {
			nads[n.Name] = true
		}
	}
	return requests[v1.ClusterUserDefinedNetwork, *v1.ClusterUserDefinedNetworkList](ctx, c.Client, cudnItems, func(cu *v1.ClusterUserDefinedNetwork) bool {
		return nads[netconf.CUDNNetworkName(cu.Name)] || selects(cu, ns.Labels)
	})
}

func (c *Controller) allCUDNs(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests[v1.ClusterUserDefinedNetwork, *v1.ClusterUserDefinedNetworkList](ctx, c.Client, cudnItems, nil)
}

// failingCUDNs requeues CUDNs whose condition is False: another CUDN's change
// may free the VRF or namespace they wait for.
func (c *Controller) failingCUDNs(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests[v1.ClusterUserDefinedNetwork, *v1.ClusterUserDefinedNetworkList](ctx, c.Client, cudnItems, func(cu *v1.ClusterUserDefinedNetwork) bool {
		return meta.IsStatusConditionFalse(cu.Status.Conditions, v1.ConditionNetworkCreated)
	})
}
