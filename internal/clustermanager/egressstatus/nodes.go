package egressstatus

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// onNodesComingAndGoing requeues every object of list (listed with c) when
// a node comes or goes: a zone's word is kept or dropped with its node.
func onNodesComingAndGoing(c client.Client, list client.ObjectList) handler.TypedEventHandler[client.Object, reconcile.Request] {
	all := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		l := list.DeepCopyObject().(client.ObjectList)
		if c.List(ctx, l) != nil {
			return
		}
		_ = meta.EachListItem(l, func(o runtime.Object) error {
			if m, ok := o.(client.Object); ok {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
			}
			return nil
		})
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, q)
		},
	}
}
