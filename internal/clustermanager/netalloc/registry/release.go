package registry

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// OnRelease returns a source that fires, through mapFn, every time n
// releases network IDs or tunnel keys, so that networks waiting for one are
// retried as soon as there is room (not at their next unrelated event).
// mapFn is given no object of interest: it lists what waits.
func (n *Networks) OnRelease(mgr ctrl.Manager, mapFn handler.MapFunc) (source.Source, error) {
	events := make(chan event.GenericEvent)
	released := n.Released()
	err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-released:
				select {
				case events <- event.GenericEvent{Object: &corev1.Namespace{}}:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}))
	if err != nil {
		return nil, fmt.Errorf("release notifications: %w", err)
	}
	return source.Channel(events, handler.EnqueueRequestsFromMapFunc(mapFn)), nil
}
