package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
)

// Remote is all a zone's rendering of a network reads of a remote node (one
// of another zone) ready for it: the node's rows (for a Layer3 network its
// port on the transit switch and the cluster router's routes to its subnets
// and to its gateway router; for a Layer2 primary network the transit
// router's port toward its gateway router and the route to its join
// address) follow from it and the network alone. Two nodes with the
// same Remote render the same rows, so a zone can tell which nodes' rows a
// Node's change alters without rendering the network (RenderRemote).
type Remote struct {
	Name      string
	Zone      string
	ID        int
	ChassisID string
	// Subnets is the node's slice of the network.
	Subnets []netip.Prefix
	// Layer2V1 reports, for a Layer2 network, that the node is at the old
	// topology (nodeinfo.Info.Layer2V1; layer2_v1.go). Its rows then
	// depend on every node's version, so no part is rendered apart.
	Layer2V1 bool
}

// RemoteOf returns what network n's rendering reads of node.
func RemoteOf(n Network, node nodeinfo.Info) Remote {
	return Remote{Name: node.Name, Zone: node.Zone, ID: node.ID, ChassisID: node.ChassisID, Subnets: node.Subnets[n.Name],
		Layer2V1: node.Layer2V1 && n.Topology == netconf.TopologyLayer2 && n.IsPrimary()}
}

// HasRemoteParts reports whether network n's rows for each remote node can
// be rendered and planned apart from the rest (RenderRemote): Layer3
// networks, and Layer2 networks with a gateway (their transit router). A
// Layer2 secondary network without one has no rows for remote nodes (its
// remote pods' ports are the pods'), a Localnet network none either.
func HasRemoteParts(n Network) bool {
	return n.Topology == netconf.TopologyLayer3 || n.Topology == netconf.TopologyLayer2 && n.HasGateway()
}

// RemotePart is the part of a network's rendering in a zone that some
// remote nodes make: their rows (tagged NodeKey=node), where they are
// listed (Parents, as ovsdbsync.Part takes them: the transit switch's
// ports, the cluster router's routes, listed even when the nodes have no
// rows so that rows they had leave them), and the nodes left out for a
// problem.
type RemotePart struct {
	Rows    []model.Model
	Parents []ovsdbsync.Contribution
	Skipped []Problem
}

// RenderRemote returns the part of Render(in)'s rows that the remote nodes
// named make, for a network with remote parts (HasRemoteParts): the rows
// of Render(in) tagged NodeKey with one of them, exactly. A Layer2 network
// with a node at the old topology has none (an error): the upgrade ports
// depend on all nodes. A node that is
// not in in.Nodes, not active or not ready has no rows. It fails for the
// zone's own node, for which the network must be rendered whole, and when
// Render would render nothing (the zone's node not active or not ready).
func RenderRemote(in Input, nodes []string) (RemotePart, error) {
	n := in.Network
	if !HasRemoteParts(n) {
		return RemotePart{}, fmt.Errorf("network %s: a %s network has no remote parts", n.Name, n.Topology)
	}
	local, remotes, skipped, err := split(n, in.Nodes, in.Zone, in.Active)
	if err != nil {
		return RemotePart{}, err // errInactive among them: the whole renders nothing
	}
	if slices.Contains(nodes, local.Name) {
		return RemotePart{}, fmt.Errorf("network %s: node %s is the zone's own", n.Name, local.Name)
	}
	if n.Topology == netconf.TopologyLayer2 {
		for _, node := range append([]nodeinfo.Info{local}, remotes...) {
			if node.Layer2V1 {
				return RemotePart{}, fmt.Errorf("network %s: node %s is at the old Layer2 topology: render the network whole", n.Name, node.Name)
			}
		}
	}
	b := &builder{n: n}
	var ports, routes []string
	for _, r := range remotes {
		if !slices.Contains(nodes, r.Name) {
			continue
		}
		var port string
		var rs []string
		if n.Topology == netconf.TopologyLayer2 {
			if port, rs, _, _, err = b.transitRouterPeer(RemoteOf(n, r), false); err != nil {
				return RemotePart{}, err
			}
		} else {
			port, rs = b.remoteNode(RemoteOf(n, r))
		}
		ports, routes = append(ports, port), append(routes, rs...)
	}
	var part RemotePart
	if n.Topology == netconf.TopologyLayer2 {
		tr := &nbdb.LogicalRouter{Name: n.TransitRouter()}
		part.Parents = []ovsdbsync.Contribution{{Target: tr, Column: "ports", Members: ports}, {Target: tr, Column: "static_routes", Members: routes}}
	} else {
		part.Parents = []ovsdbsync.Contribution{
			{Target: &nbdb.LogicalSwitch{Name: n.TransitSwitch()}, Column: "ports", Members: ports},
			{Target: &nbdb.LogicalRouter{Name: n.ClusterRouter()}, Column: "static_routes", Members: routes},
		}
	}
	part.Rows = b.rows
	SortRows(part.Rows)
	for _, p := range skipped {
		if slices.Contains(nodes, p.Node) {
			part.Skipped = append(part.Skipped, p)
		}
	}
	return part, nil
}

// remoteNode adds a remote node's rows of a Layer3 network (its port on the
// transit switch, the cluster router's routes to its subnets and, for a
// primary network, to its gateway router's join address) and returns the
// port's ID and the routes' IDs. It reads nothing of the node but r.
func (b *builder) remoteNode(r Remote) (port string, routes []string) {
	n := b.n
	cr := n.ClusterRouter()
	rt := transitIPs(n, r.ID)
	name := transitSwitchToRouter(n, r.Name)
	b.add(&nbdb.LogicalSwitchPort{UUID: lspID(name), Name: name, Type: "remote",
		Addresses:   []string{joinAddrs(PortMAC(rt), PrefixStrings(rt)...)},
		Options:     map[string]string{"requested-chassis": r.ChassisID, "requested-tnl-key": strconv.Itoa(r.ID)},
		ExternalIDs: b.ext(r.Name)})
	for _, s := range r.Subnets {
		if hop, ok := FamilyOf(rt, s.Addr()); ok {
			routes = append(routes, b.route(cr, "", s, hop.Addr().String(), "", r.Name))
		}
	}
	if n.HasGateway() {
		for _, j := range n.Join {
			grJoin, err := allocator.GatewayJoinIP(j, r.ID)
			if hop, ok := FamilyOf(rt, j.Addr()); ok && err == nil {
				routes = append(routes, b.route(cr, "", hostPrefix(grJoin.Addr()), hop.Addr().String(), "", r.Name))
			}
		}
	}
	return lspID(name), routes
}

// transitIPs are the transit switch addresses of the node with ID id.
func transitIPs(n Network, id int) []netip.Prefix {
	var out []netip.Prefix
	for _, t := range n.Transit {
		if ip, err := allocator.TransitSwitchIP(t, id); err == nil {
			out = append(out, ip)
		}
	}
	return out
}
