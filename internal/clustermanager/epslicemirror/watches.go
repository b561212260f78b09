package epslicemirror

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/fairqueue"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// SetupWithManager registers the controller. A Service is reconciled when it
// changes; when one of its default slices or mirrors changes; when a pod its
// selector matches appears with, or changes, its pod-networks annotation;
// and, for every Service of the namespace, when the namespace's labels or
// NADs change (its primary network may have).
func (r *Controller) SetupWithManager(mgr ctrl.Manager) error {
	podAddrsChange := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return e.Object.GetAnnotations()[podnet.Annotation] != "" },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[podnet.Annotation] != e.ObjectNew.GetAnnotations()[podnet.Annotation]
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false }, // its default slices change
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	namespaceLabels := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !labels.Equals(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	}}
	return ctrl.NewControllerManagedBy(mgr).
		Named("endpointslice-mirror").
		For(&corev1.Service{}).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(sliceService)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.selecting), builder.WithPredicates(podAddrsChange)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceServices), builder.WithPredicates(namespaceLabels)).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(r.namespaceServices)).
		WithOptions(controller.Options{NewQueue: fairqueue.NewQueue}).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(r)))
}

// sliceService maps a default slice, or a mirror, to its Service.
func sliceService(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	name := ""
	switch l[discoveryv1.LabelManagedBy] {
	case mirror.DefaultManager:
		name = l[discoveryv1.LabelServiceName]
	case mirror.ManagedBy:
		name = l[mirror.LabelServiceName]
	}
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// selecting maps a pod to the Services of its namespace whose selector
// matches it (a pod whose labels changed leaves or joins default slices,
// which then change).
func (r *Controller) selecting(ctx context.Context, o client.Object) []reconcile.Request {
	return r.services(ctx, o.GetNamespace(), func(s *corev1.Service) bool {
		return len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(o.GetLabels()))
	})
}

// namespaceServices maps a Namespace, or a NAD, to every Service of the
// namespace.
func (r *Controller) namespaceServices(ctx context.Context, o client.Object) []reconcile.Request {
	ns := o.GetNamespace()
	if ns == "" {
		ns = o.GetName() // the Namespace itself
	}
	return r.services(ctx, ns, func(*corev1.Service) bool { return true })
}

// services returns requests for the Services of namespace ns that keep says.
func (r *Controller) services(ctx context.Context, ns string, keep func(*corev1.Service) bool) []reconcile.Request {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		log.FromContext(ctx).Error(err, "listing services; their mirrored EndpointSlices wait for their next change", "namespace", ns)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: list.Items[i].Name}})
		}
	}
	return out
}
