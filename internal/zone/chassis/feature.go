package chassis

import (
	"context"
	"sync/atomic"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// Feature registers the other zones' chassis. It watches nothing itself:
// every Node change of another zone requeues its key (RemoteNodeKeys),
// and a change of the zone's own node every key.
type Feature struct {
	host *feature.Host
	txns atomic.Int64
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "chassis" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindChassis} }

// Watch implements feature.Feature: nothing (see Feature).
func (*Feature) Watch(*builder.TypedBuilder[feature.Key]) {}

// InitialKeys implements feature.Initializer: no object brings its key.
func (*Feature) InitialKeys() []feature.Key { return []feature.Key{feature.ChassisKey()} }

// Keys implements feature.Keyer.
func (*Feature) Keys(context.Context) ([]feature.Key, error) {
	return []feature.Key{feature.ChassisKey()}, nil
}

// RemoteNodeKeys implements feature.RemoteNodeDependent.
func (*Feature) RemoteNodeKeys(context.Context, string, func(string) bool) []feature.Key {
	return []feature.Key{feature.ChassisKey()}
}

// Reconcile implements feature.Feature: the Southbound's remote chassis
// become those of the nodes now, in one transaction.
func (f *Feature) Reconcile(ctx context.Context, _ feature.Key) (ctrl.Result, error) {
	nodes, _, err := f.host.Networks.Nodes(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	wrote, err := syncChassis(ctx, f.host.Southbound, desiredChassis(nodes, f.host.Zone))
	if wrote {
		f.txns.Add(1)
		log.FromContext(ctx).Info("registered remote chassis", "zone", f.host.Zone)
	}
	return ctrl.Result{}, err
}

// Transactions is how many Southbound transactions it has committed.
func (f *Feature) Transactions() int64 { return f.txns.Load() }
