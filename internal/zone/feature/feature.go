// Package feature is the contract between the zone controller (the host,
// internal/zone) and each kind of work it does (a feature: networks, pod
// ports, services, policies, connects, links, chassis).
//
// A feature reconciles the keys of its kinds (Key, key.go) and owns their
// rows: a key's String is the OVSDB owner of what its reconcile writes. It
// declares, next to its code:
//   - its watches: which Kubernetes objects map to which of its keys
//     (Watch);
//   - the set columns of rows other features own that it adds members to
//     (Sharer); a feature that declares none never contributes, and the
//     zone's syncer skips it when it looks for members to withdraw;
//   - the keys to plan again when a network's rows or nodes change
//     (NetworkDependent), or when another zone's node changes
//     (RemoteNodeDependent);
//   - every key it has now, for a resync (Keyer).
//
// The host gives each feature one queue, one syncer and one set of caches;
// internal/zone/setup.go lists the features, so the whole zone reads in one
// screen. Keys of a feature's kinds still held by the zone's Northbound at
// start (their object deleted while the zone was away) are reconciled once,
// so that their rows go.
package feature

import (
	"context"

	"github.com/ovn-org/libovsdb/model"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// Feature is one kind of work of the zone controller.
type Feature interface {
	// Name names the feature in logs and documents.
	Name() string
	// Kinds are the kinds of keys it reconciles.
	Kinds() []Kind
	// Watch registers its watches on the zone's controller.
	Watch(b *builder.TypedBuilder[Key])
	// Reconcile does one of its keys' work: one transaction at most, none
	// when nothing changed.
	Reconcile(ctx context.Context, key Key) (ctrl.Result, error)
}

// Share is a set column of rows other features own that a feature adds
// members to. Rows, when set, limits it to the rows it accepts (it is
// given a row of Table, or a contribution's target with only its index
// set).
type Share struct {
	Table  model.Model
	Column string
	Rows   func(model.Model) bool
}

// Sharer is a feature that contributes to rows others own.
type Sharer interface {
	Shares() []Share
}

// Keyer is a feature that lists every key it has now (a resync plans them
// all).
type Keyer interface {
	Keys(ctx context.Context) ([]Key, error)
}

// Initializer is a feature with keys that no object's event brings at
// start (the chassis, the default network).
type Initializer interface {
	InitialKeys() []Key
}

// NetworkChange is what a network's reconcile just did.
type NetworkChange struct {
	// Network is the network's name.
	Network string
	// Exists is false when the network is gone.
	Exists bool
	// Known is false the first time the zone plans the network (since it
	// started, or since the network was last gone).
	Known bool
	// Before and After are the nodes it was and is rendered for.
	Before, After activity.Nodes
	// Moved: Known, and its nodes changed.
	Moved bool
	// RowsChanged: it inserted rows (that others may contribute to), or
	// it deleted some as its nodes changed.
	RowsChanged bool
}

// NetworkDependent is a feature whose rows depend on networks' rows or
// nodes. NetworkChanged runs on the network's reconcile: it must not
// block, so it hands the keys to plan again to the host's queue (Queue).
type NetworkDependent interface {
	NetworkChanged(ctx context.Context, c NetworkChange)
}

// PortDependent is a feature whose keys wait for pods' ports to be in the
// Northbound (a NetworkPolicy's port group lists them). PortsWritten runs
// when a network or a pod just inserted ports; like NetworkChanged, it
// must not block.
type PortDependent interface {
	PortsWritten(ctx context.Context)
}

// Indexer is a feature that lists objects by fields of its own: the
// zone's cache (or render's) registers them before it starts.
type Indexer interface {
	Indexes() []kubeobj.Index
}

// RemoteNodeDependent is a feature whose rows depend on the other zones'
// nodes. changed says, for each network, whether the node's rendering on
// it may have changed (false for the networks whose slice on the node is
// all that changed, and did not).
type RemoteNodeDependent interface {
	RemoteNodeKeys(ctx context.Context, node string, changed func(network string) bool) []Key
}

// Runner is a feature with work of its own beside its reconciles (a
// refresh loop): the zone's manager starts it, and stops it by ending ctx.
type Runner interface {
	Start(ctx context.Context) error
}

// Queue is how a feature asks for keys to be reconciled from outside a
// watch: now (Add), or through a mapping run on the controller's event
// goroutine (Later), which lists what it needs from the caches there, not
// on the reconcile that asked. Both drop the request when the queue is full
// or there is no controller (render).
type Queue interface {
	Add(keys ...Key)
	Later(keys func(ctx context.Context) []Key)
}
