package zone

import (
	"context"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/topology"
)

// SyncRemote writes a network's part for one remote node (its rows tagged
// with the node, topology.RenderRemote) as the network's owner
// (NetworkKey), leaving the network's other rows alone: a node that joins,
// leaves or changes costs each network a plan of its own few rows, not a
// re-plan of every row the network has in the zone. The plan's Missing is
// not empty when the network's transit switch or cluster router is not
// written yet (plan the network whole).
func SyncRemote(ctx context.Context, s *ovsdbsync.Syncer, network, node string, part topology.RemotePart) (*ovsdbsync.Plan, error) {
	p, err := s.PlanPart(NetworkKey(network), remotePart(node, part), part.Rows)
	if err != nil || len(p.Missing) > 0 {
		return p, err
	}
	return p, s.Apply(ctx, p)
}

// remotePart is the Syncer's part for a node's rows of a network.
func remotePart(node string, part topology.RemotePart) ovsdbsync.Part {
	out := ovsdbsync.Part{Key: topology.NodeKey, Value: node}
	for _, m := range part.Parents {
		out.Parents = append(out.Parents, ovsdbsync.Contribution{Target: m.Parent, Column: m.Column, Members: m.Members})
	}
	return out
}

// maxRemoteParts is the most remote nodes a network's reconcile plans part
// by part; when more changed at once (a zone's start, a cluster-wide
// change), one plan of the whole is cheaper.
const maxRemoteParts = 4

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
// it referred to, every remote node (as topology.RemoteOf reads it) and
// the nodes it was active on. Part plans since have updated remotes and
// active.
type wholePlan struct {
	network topology.Network
	local   nodeinfo.Info
	shared  map[netip.Addr]string
	remotes map[string]topology.Remote
	active  activity.Nodes
}

// forget drops what is remembered of the network: its next reconcile
// plans it whole.
func (w *wholePlans) forget(network string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, network)
}

// remember records the input of a plan of the whole just written.
func (w *wholePlans) remember(zone string, in topology.Input) {
	n := in.Network
	local, ok := localOf(in.Nodes, zone, n)
	if !topology.HasRemoteParts(n) || !ok || !in.Active.Has(local.Name) {
		w.forget(n.Name)
		return
	}
	p := &wholePlan{network: n, local: local, shared: in.SharedBFD, remotes: map[string]topology.Remote{}, active: in.Active}
	for _, node := range in.Nodes {
		if node.Zone != zone {
			p.remotes[node.Name] = topology.RemoteOf(n, node)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*wholePlan{}
	}
	w.m[n.Name] = p
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
// maxRemoteParts nodes did: a node that came, went, changed what the
// network reads of it (topology.Remote), or came into or out of the set
// the network is active on. ok is false when the network must be planned
// whole: nothing remembered, anything else changed, no node or too many.
func (w *wholePlans) remoteChanges(zone string, in topology.Input) (nodes []string, ok bool) {
	n := in.Network
	w.mu.Lock()
	p := w.m[n.Name]
	w.mu.Unlock()
	if p == nil || w.off.Load() {
		return nil, false
	}
	local, found := localOf(in.Nodes, zone, n)
	if !found || !in.Active.Has(local.Name) || !reflect.DeepEqual(local, p.local) ||
		!maps.Equal(in.SharedBFD, p.shared) || !reflect.DeepEqual(n, p.network) {
		return nil, false
	}
	seen := make(map[string]bool, len(in.Nodes))
	for _, node := range in.Nodes {
		if node.Zone == zone {
			continue
		}
		seen[node.Name] = true
		was, known := p.remotes[node.Name]
		if !known || !reflect.DeepEqual(was, topology.RemoteOf(n, node)) || p.active.Has(node.Name) != in.Active.Has(node.Name) {
			nodes = append(nodes, node.Name)
		}
	}
	for name := range p.remotes {
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

// wrote records the parts of the network just written for nodes.
func (w *wholePlans) wrote(zone string, in topology.Input, nodes []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.m[in.Network.Name]
	if p == nil {
		return
	}
	p.active = in.Active
	for _, name := range nodes {
		delete(p.remotes, name)
	}
	for _, node := range in.Nodes {
		if node.Zone != zone && slices.Contains(nodes, node.Name) {
			p.remotes[node.Name] = topology.RemoteOf(in.Network, node)
		}
	}
}

// syncRemoteParts writes the network's parts for the remote nodes that
// alone changed since its last plan of the whole (remoteChanges), one
// transaction each, and returns their plans summed; nil when the network
// must be planned whole instead (nothing written then, or only parts that
// the whole will find written). They create and delete no datapath (ports
// and routes only), so they need no turn of the northd gate.
func (r *Reconciler) syncRemoteParts(ctx context.Context, name string, in networkInput) (*ovsdbsync.Plan, error) {
	nodes, ok := r.whole.remoteChanges(r.Zone, in.Input)
	if !ok {
		return nil, nil
	}
	sum := &ovsdbsync.Plan{Owner: NetworkKey(name)}
	for _, node := range nodes {
		part, err := topology.RenderRemote(in.Input, node)
		if err != nil {
			return nil, nil // the whole says why
		}
		p, err := SyncRemote(ctx, r.Syncer, name, node, part)
		if err != nil {
			r.whole.forget(name)
			return nil, err
		}
		if len(p.Missing) > 0 {
			r.whole.forget(name)
			return nil, nil
		}
		sum.Ops = append(sum.Ops, p.Ops...)
		sum.Inserted, sum.Updated, sum.Deleted = sum.Inserted+p.Inserted, sum.Updated+p.Updated, sum.Deleted+p.Deleted
		for _, s := range part.Skipped {
			r.note(ctx, name, s.Node, s.Reason)
			in.left[s.Node] = true
		}
		if len(part.Skipped) == 0 && in.bad[node] == nil {
			in.left[node] = false
		}
	}
	r.whole.wrote(r.Zone, in.Input, nodes)
	r.resolved(ctx, name, r.stillLeft(name, in.left))
	return sum, nil
}

// stillLeft returns the nodes noted left out of the network (note) and not
// taken back in by left (false), with those left names true.
func (r *Reconciler) stillLeft(network string, left map[string]bool) map[string]bool {
	out := map[string]bool{}
	prefix := network + "/"
	r.mu.Lock()
	for key := range r.noted {
		if node, ok := strings.CutPrefix(key, prefix); ok && !strings.Contains(node, "/") {
			out[node] = true
		}
	}
	r.mu.Unlock()
	for node, l := range left {
		if l {
			out[node] = true
		} else {
			delete(out, node)
		}
	}
	return out
}
