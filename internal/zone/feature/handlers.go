package feature

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// BeforeAfter is an event handler calling enqueue with the object before
// and after each event (nil before a create, after a delete).
func BeforeAfter(enqueue func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], before, after client.Object)) handler.TypedEventHandler[client.Object, Key] {
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, nil, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.Object, nil)
		},
	}
}

// OwnKey is an event handler requeueing the one key an object names (its
// name never changes between an update's before and after).
func OwnKey(key func(o client.Object) Key) handler.TypedEventHandler[client.Object, Key] {
	return handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(_ context.Context, o client.Object) []Key {
		return []Key{key(o)}
	})
}

// KeysBeforeAfter is an event handler for objects of type T requeueing
// the keys of the object before and after each event (the zero T before a
// create, after a delete).
func KeysBeforeAfter[T client.Object](keys func(ctx context.Context, before, after T) []Key) handler.TypedEventHandler[client.Object, Key] {
	return BeforeAfter(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], before, after client.Object) {
		o, _ := before.(T)
		n, _ := after.(T)
		for _, k := range keys(ctx, o, n) {
			q.Add(k)
		}
	})
}
