package feature

import (
	"context"

	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/topology"
)

// Host is what the zone gives a feature kept in a package of its own: the
// zone's identity, its caches, its queue and its writer. The zone fills it
// before any feature runs; a feature keeps the pointer, not a copy.
type Host struct {
	// Zone is the zone's name (its node's).
	Zone    string
	Cluster config.Cluster
	// Client reads Kubernetes objects from the zone's caches (with
	// zone.Indexes).
	Client   client.Client
	Recorder record.EventRecorder
	Queue    Queue
	// Southbound is the zone's Southbound client (nil in render).
	Southbound libovsdb.Client
	// Sync writes an owner's rows and contributions in one transaction,
	// none when nothing changed (the zone's syncer behind its northd
	// gate).
	Sync func(ctx context.Context, owner string, rows []model.Model, contributions ...ovsdbsync.Contribution) (*ovsdbsync.Plan, error)
	// Owners are the owners holding rows in the zone's Northbound whose
	// names begin with prefix.
	Owners func(prefix string) (map[string]bool, error)
	// DisableNetworkConnect: ClusterNetworkConnects are left alone (their
	// CRD may be absent).
	DisableNetworkConnect bool
	// Networks looks networks and nodes up as the network feature sees
	// them.
	Networks Networks
}

// Networks is the zone's one view of networks and nodes, shared by the
// features: what a network is, where it is rendered, and the nodes.
type Networks interface {
	// Network returns the network named name (exists is false when no NAD
	// defines it any more).
	Network(ctx context.Context, name string) (n topology.Network, exists bool, err error)
	// ActiveNodes are the nodes the network is rendered for.
	ActiveNodes(ctx context.Context, n topology.Network) (activity.Nodes, error)
	// Nodes are the nodes whose annotations parse, by name, and why the
	// others do not.
	Nodes(ctx context.Context) ([]nodeinfo.Info, map[string]error, error)
	// LocalNode is the zone's node (ok is false while it has no
	// annotations).
	LocalNode(ctx context.Context) (local nodeinfo.Info, ok bool, err error)
	// NetworksByID maps network IDs to names (from the NADs' allocation).
	NetworksByID(ctx context.Context) (map[int]string, error)
}

// WithOwners returns keys with those of kinds whose owners hold rows in the
// zone's Northbound (whatever their objects say now), each once.
func (h *Host) WithOwners(keys []Key, kinds ...Kind) ([]Key, error) {
	set := make(map[Key]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	for _, kind := range kinds {
		owners, err := h.Owners(kind.Prefix())
		if err != nil {
			return nil, err
		}
		for o := range owners {
			if k, ok := ParseKey(o); ok {
				set[k] = true
			}
		}
	}
	out := make([]Key, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	return out, nil
}
