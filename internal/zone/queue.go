package zone

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// keyQueue is the zone's feature.Queue: two channels the controller
// watches (setup.go). Without them (render, a test's bare reconciler) it
// drops every request.
type keyQueue struct {
	// keys carries keys to reconcile now.
	keys chan event.TypedGenericEvent[feature.Key]
	// later carries mappings to keys, run on the controller's event
	// goroutine.
	later chan event.TypedGenericEvent[keysFunc]
}

// keysFunc maps to keys from the caches (feature.Queue.Later).
type keysFunc func(ctx context.Context) []feature.Key

func newKeyQueue() keyQueue {
	return keyQueue{keys: make(chan event.TypedGenericEvent[feature.Key], 1024), later: make(chan event.TypedGenericEvent[keysFunc], 1024)}
}

// Add implements feature.Queue.
func (q keyQueue) Add(keys ...feature.Key) {
	for _, k := range keys {
		select {
		case q.keys <- event.TypedGenericEvent[feature.Key]{Object: k}:
		default: // full, or no controller
		}
	}
}

// Later implements feature.Queue.
func (q keyQueue) Later(keys func(ctx context.Context) []feature.Key) {
	select {
	case q.later <- event.TypedGenericEvent[keysFunc]{Object: keys}:
	default: // full, or no controller
	}
}

// beforeAfter is an event handler calling enqueue with the object before
// and after each event (nil before a create, after a delete).
func beforeAfter(enqueue func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object)) handler.TypedEventHandler[client.Object, feature.Key] {
	return handler.TypedFuncs[client.Object, feature.Key]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, nil, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[feature.Key]) {
			enqueue(ctx, q, e.Object, nil)
		},
	}
}

// keysBeforeAfter is an event handler for objects of type T requeueing
// the keys of the object before and after each event (the zero T before a
// create, after a delete).
func keysBeforeAfter[T client.Object](keys func(ctx context.Context, before, after T) []feature.Key) handler.TypedEventHandler[client.Object, feature.Key] {
	return beforeAfter(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object) {
		o, _ := before.(T)
		n, _ := after.(T)
		for _, k := range keys(ctx, o, n) {
			q.Add(k)
		}
	})
}
