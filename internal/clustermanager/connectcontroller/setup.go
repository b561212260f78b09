package connectcontroller

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// SetupWithManager registers the controller: a connect is reconciled when it
// changes, and every connect when what selection, validation or the status
// summary read changes (networks and their labels, NADs and their
// allocation, namespaces and their labels, nodes coming and going, and
// other connects). Connects are few; requeueing them all keeps the mapping
// simple and always right.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(c.all)
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusternetworkconnect").
		For(&v1.ClusterNetworkConnect{}).
		Watches(&v1.ClusterNetworkConnect{}, all, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1.ClusterUserDefinedNetwork{}, all).
		Watches(&v1.UserDefinedNetwork{}, all).
		Watches(&nadv1.NetworkAttachmentDefinition{}, all).
		Watches(&corev1.Namespace{}, all, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		// Nodes come and go, and get their IDs in annotations; status
		// heartbeats pass by.
		Watches(&corev1.Node{}, all, builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(c)))
}

func (c *Controller) all(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1.ClusterNetworkConnectList
	if err := c.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i, o := range list.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: o.Name}}
	}
	return out
}
