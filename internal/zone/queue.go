package zone

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/event"

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
