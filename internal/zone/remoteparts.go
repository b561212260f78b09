package zone

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// SyncRemote writes a network's part for some remote nodes (their rows,
// tagged with the node, topology.RenderRemote) as the network's owner
// (NetworkKey), in one transaction, leaving the network's other rows
// alone: a node that joins, leaves or changes costs each network a plan of
// its own few rows, not a re-plan of every row the network has in the
// zone. The plan's Missing is not empty when the network's transit switch
// or router is not written yet (plan the network whole); nothing is
// written then.
func SyncRemote(ctx context.Context, s *ovsdbsync.Syncer, network string, nodes []string, part topology.RemotePart) (*ovsdbsync.Plan, error) {
	p, err := s.PlanPart(feature.NetworkKey(network).String(), ovsdbsync.Part{Key: topology.NodeKey, Values: nodes, Parents: part.Parents}, part.Rows)
	if err != nil || len(p.Missing) > 0 {
		return p, err
	}
	return p, s.Apply(ctx, p)
}

// maxRemoteParts is the most remote nodes a network's reconcile plans as a
// part; when more changed at once (a zone's start, a cluster-wide change),
// one plan of the whole is cheaper.
const maxRemoteParts = 4

// maxPartPlans is how many part plans a network has between two plans of
// the whole: a plan of the whole also puts back what someone else changed
// in the network's other rows, which a part never looks at, so a network
// whose nodes keep changing still gets one now and then.
const maxPartPlans = 32

// wholePlans remembers, per network, the input of its last plan of the
// whole as far as its rows for remote nodes depend on it, so that a
// reconcile can tell which remote nodes alone changed since
// (remoteChanges). Only what was written is remembered; a failure forgets.
type wholePlans struct {
	mu sync.Mutex
	m  map[string]*wholePlan
	// off plans every network whole (a benchmark's comparison:
	// PlanWholeOnly in export_test.go).
	off atomic.Bool
}

// wholePlan is a network's input when its rows were last all planned:
// the network, the zone's own node as the network reads it, the BFD rows
// it referred to, and the remote nodes it was active on (as
// topology.RemoteOf reads them: a node where it is not active has no rows,
// whatever it is). Part plans since have updated remotes, and are counted.
type wholePlan struct {
	network topology.Network
	local   nodeinfo.Info
	shared  map[netip.Addr]string
	remotes map[string]topology.Remote
	parts   int
}

// forget drops what is remembered of the network: its next reconcile
// plans it whole.
func (w *wholePlans) forget(network string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, network)
}

// forgetAll drops what is remembered of every network (the database may
// have come back different: requestResync).
func (w *wholePlans) forgetAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.m = nil
}

// remember records the input of a plan of the whole just written.
func (w *wholePlans) remember(zone string, in topology.Input) {
	n := in.Network
	local, ok := localOf(in.Nodes, zone, n)
	if !topology.HasRemoteParts(n) || !ok || !in.Active.Has(local.Name) {
		w.forget(n.Name)
		return
	}
	p := &wholePlan{network: n, local: local, shared: in.SharedBFD, remotes: remotesOf(zone, in, nil)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*wholePlan{}
	}
	w.m[n.Name] = p
}

// remotesOf returns the remote nodes of in where its network is active,
// as the network reads them; only those named when names is not nil.
func remotesOf(zone string, in topology.Input, names []string) map[string]topology.Remote {
	out := map[string]topology.Remote{}
	for _, node := range in.Nodes {
		if node.Zone != zone && in.Active.Has(node.Name) && (names == nil || slices.Contains(names, node.Name)) {
			out[node.Name] = topology.RemoteOf(in.Network, node)
		}
	}
	return out
}

// localOf returns the zone's one node, as network n's rendering reads it
// (its slice of n alone); false when the zone has none or several.
func localOf(nodes []nodeinfo.Info, zone string, n topology.Network) (nodeinfo.Info, bool) {
	var local nodeinfo.Info
	found := 0
	for _, node := range nodes {
		if node.Zone == zone {
			local, found = node, found+1
		}
	}
	if found != 1 {
		return nodeinfo.Info{}, false
	}
	local.Subnets = nodeinfo.Subnets{n.Name: local.Subnets[n.Name]}
	return local, true
}

// remoteChanges returns the remote nodes whose part of the network's rows
// may differ from what was last written, when nothing else the rows depend
// on changed since the network's last plan of the whole and at most
// maxRemoteParts nodes did: a node where the network is active that came,
// went, changed what the network reads of it (topology.Remote), or came
// into or out of the set the network is active on. ok is false when the
// network must be planned whole: nothing remembered, anything else
// changed, no node or too many, or maxPartPlans parts since the whole.
func (w *wholePlans) remoteChanges(zone string, in topology.Input) (nodes []string, ok bool) {
	n := in.Network
	w.mu.Lock()
	p := w.m[n.Name]
	w.mu.Unlock()
	if p == nil || w.off.Load() || p.parts >= maxPartPlans {
		return nil, false
	}
	local, found := localOf(in.Nodes, zone, n)
	if !found || !in.Active.Has(local.Name) || !reflect.DeepEqual(local, p.local) ||
		!maps.Equal(in.SharedBFD, p.shared) || !reflect.DeepEqual(n, p.network) {
		return nil, false
	}
	seen := make(map[string]bool, len(p.remotes))
	for _, node := range in.Nodes {
		if node.Zone == zone || !in.Active.Has(node.Name) {
			continue // not rendered now: it changed if it was then (below)
		}
		seen[node.Name] = true
		was, known := p.remotes[node.Name]
		now := topology.RemoteOf(n, node)
		if was.Layer2V1 || now.Layer2V1 {
			return nil, false // the upgrade ports depend on every node
		}
		if !known || !reflect.DeepEqual(was, now) {
			nodes = append(nodes, node.Name)
		}
	}
	for name, was := range p.remotes {
		if was.Layer2V1 {
			return nil, false
		}
		if !seen[name] {
			nodes = append(nodes, name)
		}
	}
	if len(nodes) == 0 || len(nodes) > maxRemoteParts {
		return nil, false
	}
	sort.Strings(nodes)
	return nodes, true
}

// wrote records the network's part for nodes just written.
func (w *wholePlans) wrote(zone string, in topology.Input, nodes []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.m[in.Network.Name]
	if p == nil {
		return
	}
	p.parts++
	for _, name := range nodes {
		delete(p.remotes, name)
	}
	maps.Copy(p.remotes, remotesOf(zone, in, nodes))
}

// syncRemoteParts writes the network's part for the remote nodes that
// alone changed since its last plan of the whole (remoteChanges), in one
// transaction, and returns its plan; nil when the network must be planned
// whole instead (nothing written then). A part creates and deletes no
// datapath (ports and routes only), so it needs no turn of the northd
// gate.
func (r *Reconciler) syncRemoteParts(ctx context.Context, name string, in networkInput) (*ovsdbsync.Plan, error) {
	nodes, ok := r.whole.remoteChanges(r.Zone, in.Input)
	if !ok {
		return nil, nil
	}
	part, err := topology.RenderRemote(in.Input, nodes)
	if err != nil {
		return nil, nil // the whole says why
	}
	p, err := SyncRemote(ctx, r.Syncer, name, nodes, part)
	if errors.Is(err, ovsdbsync.ErrOutsidePart) {
		// Rows of the part are held under other nodes' tags: the
		// whole, now, re-tags them.
		r.whole.forget(name)
		return nil, nil
	}
	if err != nil {
		r.whole.forget(name)
		return nil, err
	}
	if len(p.Missing) > 0 {
		r.whole.forget(name)
		return nil, nil
	}
	r.whole.wrote(r.Zone, in.Input, nodes)
	for _, s := range part.Skipped {
		r.note(ctx, name, s.Node, s.Reason)
		in.left[s.Node] = true
	}
	// Of the nodes noted left out, only those of the part can be back.
	r.resolved(ctx, name, func(node string) bool { return in.left[node] || !slices.Contains(nodes, node) }, in.renders)
	return p, nil
}
