package feature

import (
	"context"

	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/northdgate"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// The field indexes of the host's cache that features list with
// (zone.Indexes registers them; a feature's own are its Indexer's).
const (
	// NetworkNameIndex lists NADs by their config's network name.
	NetworkNameIndex = "spec.config.name"
	// PodNodeIndex lists pods by their node.
	PodNodeIndex = "spec.nodeName"
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
	// Northbound and Southbound are the zone's database clients (nil in
	// render).
	Northbound, Southbound libovsdb.Client
	// Syncer writes the zone's Northbound, owner by owner (nil in render).
	Syncer *ovsdbsync.Syncer
	// Gate orders writes that create or delete datapaths (nil: none).
	Gate *northdgate.Gate
	// DisableNetworkConnect: ClusterNetworkConnects are left alone (their
	// CRD may be absent).
	DisableNetworkConnect bool
	// RenderEverywhere: every network is rendered on every node, not only
	// where it is used.
	RenderEverywhere bool
	// Networks looks networks and nodes up as the network feature sees
	// them.
	Networks Networks
	// DNSServer is where names in rules are resolved, host:port ("": no
	// resolution, as in render).
	DNSServer string
	// PortsWritten tells the features waiting for workload ports
	// (PortDependent) that some were just inserted (nil: nobody waits).
	PortsWritten func(context.Context)
}

// External IDs identifying a workload's port.
const (
	PodExternalID = "k8s.ovn.org/pod"
	NADExternalID = "k8s.ovn.org/nad"
)

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
	// UsableLocalNode is LocalNode, with a *NotRendered error while the
	// zone's node exists but its annotations do not parse.
	UsableLocalNode(ctx context.Context) (local nodeinfo.Info, ok bool, err error)
	// NetworksByID maps network IDs to names (from the NADs' allocation).
	NetworksByID(ctx context.Context) (map[int]string, error)
	// NetworkNamespaces are the namespaces holding a user-defined
	// network's NADs.
	NetworkNamespaces(ctx context.Context, network string) ([]string, error)
	// UsedOn reports whether n is rendered on node.
	UsedOn(ctx context.Context, n topology.Network, node string) (bool, error)

	// NamespacePrimaries are a namespace's primary networks (podnet's
	// rule, oldest first); ok is false while they cannot be told.
	NamespacePrimaries(ctx context.Context, namespace string) (p []podnet.Primary, ok bool, err error)
	// PrimaryNetworks are the names of NamespacePrimaries.
	PrimaryNetworks(ctx context.Context, namespace string) (names []string, ok bool, err error)
	// Scope is the namespace's primary networks and the zone's node; ok is
	// false when there is nothing to render (no network, no node), and the
	// error a *NotRendered while its network is undecided.
	Scope(ctx context.Context, namespace string) (sc Scope, ok bool, err error)
	// RenderedHere keeps the networks of sc rendered on the zone's node.
	RenderedHere(ctx context.Context, sc Scope) (Scope, error)

	// ServicePeers are the networks whose pods reach n's ClusterIP
	// services through connects.
	ServicePeers(ctx context.Context, n topology.Network) ([]topology.Network, error)
	// PodPeers are the names of the networks whose pods reach network's
	// pods: connected to it for pods, or linked to it in a namespace.
	PodPeers(ctx context.Context, network string) (map[string]bool, error)
	// PeersHere keeps the networks rendered on node.
	PeersHere(ctx context.Context, nets []topology.Network, node string) ([]topology.Network, error)
}

// Sync writes an owner's rows and contributions in one transaction, none
// when nothing changed, through the northd gate: for owners that make or
// remove datapaths (routers, switches).
func (h *Host) Sync(ctx context.Context, owner string, rows []model.Model, contributions ...ovsdbsync.Contribution) (*ovsdbsync.Plan, error) {
	return h.Gate.Sync(ctx, h.Syncer, owner, rows, contributions...)
}

// Owners are the owners holding rows in the zone's Northbound whose names
// begin with prefix.
func (h *Host) Owners(prefix string) (map[string]bool, error) { return h.Syncer.Owners(prefix) }

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
