// Package connectrouter computes, as a pure function, the Northbound rows one
// zone needs for a ClusterNetworkConnect (seed 001, "Network Topology" and
// "Pods"): the distributed connect router with its tunnel key, a port per
// Layer3 network and node (local ones peered with the network's cluster
// router, remote ones bound to their node's chassis) and per Layer2
// network (peered with its transit router), routes to every network's
// subnets (per node for Layer3), and on each network's router a
// priority-9001 reroute of traffic toward the other networks (one per
// network and family, matching an address set of the other networks'
// subnets, so a zone holds O(networks) policies, not O(networks²)). The ports and
// policies on the networks' routers are contributions to rows the networks
// own (internal/ovsdbsync): the connect adds and removes only its own. A
// connect that lets only services cross also puts tier-0 ACLs on the
// networks' pod switches (servicesonly.go).
package connectrouter

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// ReroutePriority is the priority of the policies steering traffic toward
// connected networks (the seed's 9001): above isolation (1200) and the
// node reroute (1004).
const ReroutePriority = 9001

// External IDs on the connect's rows.
const (
	// ConnectKey names the ClusterNetworkConnect a row belongs to.
	ConnectKey = "k8s.ovn.org/cluster-network-connect"
)

// Member is a connected network with its slice of the connect subnets.
type Member struct {
	Network topology.Network
	Slice   connect.Slice
	// Active are the nodes the network is rendered on (internal/activity;
	// the zero value is every node): its links, routes and policies are
	// rendered for those nodes only, and in a zone where it is not active
	// nothing of it is.
	Active activity.Nodes
}

// Input is everything a zone's rendering of one connect depends on.
type Input struct {
	// Name is the ClusterNetworkConnect's name.
	Name string
	// TunnelKey is the connect router's datapath key.
	TunnelKey int
	Layout    connect.Layout
	// Members are the connected networks (any order).
	Members []Member
	// Nodes are all nodes; Zone names the local one's zone.
	Nodes []nodeinfo.Info
	Zone  string
	// ServicesOnly is true when the connect enables ClusterIPServiceNetwork
	// without PodNetwork: the networks' switches then drop new connections
	// to the other networks' pods and let service traffic through
	// (ServiceCIDRs). The load balancers themselves are the services'
	// (internal/rows/services), whatever the mode.
	ServicesOnly bool
	ServiceCIDRs []netip.Prefix
}

// Result is a connect's rendering in one zone.
type Result struct {
	Rows []model.Model
	// Contributions put the network-side ports and the reroute policies in
	// the networks' routers, and services-only ACLs on their pod switches.
	Contributions []ovsdbsync.Contribution
	// Problems are links left out (a node whose ID does not fit, a node
	// without a subnet of the network yet): the rest is rendered.
	Problems []string
}

// RouterName is the connect router's name.
func RouterName(cnc string) string { return "connect-router-" + cnc }

// Port names: on the connect router "<cnc>-to-<network>_<node>" (Layer3) or
// "<cnc>-to-<network>" (Layer2); the network's side is the reverse. Network
// and node names hold no "_", so the names cannot collide.
func connectPort(cnc string, n topology.Network, node string) string {
	if node == "" {
		return cnc + "-to-" + n.Name
	}
	return cnc + "-to-" + n.Name + "_" + node
}

// oldLayer2Node names a node at the old Layer2 topology ("" when none).
func oldLayer2Node(nodes []nodeinfo.Info) string {
	for _, n := range nodes {
		if n.Layer2V1 {
			return n.Name
		}
	}
	return ""
}

func networkPort(cnc string, n topology.Network, node string) string {
	if node == "" {
		return n.Name + "-to-" + cnc
	}
	return n.Name + "_" + node + "-to-" + cnc
}

// Render returns the connect's rows in the zone, and its contributions.
// A zone without a ready node renders nothing.
func Render(in Input) (Result, error) {
	var local *nodeinfo.Info
	var ready []nodeinfo.Info
	for i := range in.Nodes {
		n := in.Nodes[i]
		if n.ID < allocator.FirstNodeID || n.ChassisID == "" {
			continue
		}
		ready = append(ready, n)
		if n.Zone == in.Zone {
			local = &ready[len(ready)-1]
		}
	}
	if local == nil {
		return Result{}, nil
	}
	loc := *local
	members := append([]Member(nil), in.Members...)
	sort.Slice(members, func(i, j int) bool { return members[i].Network.Name < members[j].Network.Name })
	b := &builder{cnc: in.Name}
	cr := RouterName(in.Name)
	router := &nbdb.LogicalRouter{UUID: "lr:" + cr, Name: cr, ExternalIDs: b.ext(""),
		Options: map[string]string{"requested-tnl-key": strconv.Itoa(in.TunnelKey)}}
	// hops are each member's next hop on the connect router from its local
	// router (the connect side of its local link), for the reroutes.
	hops := map[string][]netip.Prefix{}
	for _, m := range members {
		n := m.Network
		switch n.Topology {
		case netconf.TopologyLayer3:
			for _, node := range ready {
				if !m.Active.Has(node.Name) {
					continue
				}
				link, err := in.Layout.NodeLink(m.Slice, node.ID)
				if err != nil {
					b.problem("network %s, node %s: %v", n.Name, node.Name, err)
					continue
				}
				isLocal := node.Name == loc.Name
				router.Ports = append(router.Ports, b.connectPort(connectPort(in.Name, n, node.Name), networkPort(in.Name, n, node.Name), link, node, isLocal))
				if isLocal {
					b.networkPort(n.ClusterRouter(), networkPort(in.Name, n, node.Name), connectPort(in.Name, n, node.Name), link, node.Name)
					hops[n.Name] = link.ConnectSide
				}
				subnets := node.Subnets[n.Name]
				if len(subnets) == 0 {
					b.problem("network %s, node %s: no subnet of the network yet", n.Name, node.Name)
				}
				for _, s := range subnets {
					if hop, ok := topology.FamilyOf(link.NetworkSide, s.Addr()); ok {
						router.StaticRoutes = append(router.StaticRoutes, b.route(cr, s, hop.Addr(), node.Name))
					}
				}
			}
		case netconf.TopologyLayer2:
			if !m.Active.Has(loc.Name) {
				continue // its transit router is not in this zone
			}
			if old := oldLayer2Node(ready); old != "" {
				// A 1.0 node's pods answer through their gateway router,
				// which has no way back to the connect router: the
				// network is connected once every node has moved.
				b.problem("network %s: node %s is at the old Layer2 topology (%s=%s), which has no transit router to connect; the network is connected once every node is at %s",
					n.Name, old, nodeinfo.Layer2TopologyVersionAnnotation, nodeinfo.Layer2TopologyV1, nodeinfo.Layer2TopologyV2)
				continue
			}
			link, err := in.Layout.Layer2Link(m.Slice)
			if err != nil {
				b.problem("network %s: %v", n.Name, err)
				continue
			}
			router.Ports = append(router.Ports, b.connectPort(connectPort(in.Name, n, ""), networkPort(in.Name, n, ""), link, loc, true))
			b.networkPort(n.TransitRouter(), networkPort(in.Name, n, ""), connectPort(in.Name, n, ""), link, "")
			hops[n.Name] = link.ConnectSide
			for _, s := range n.Subnets {
				if hop, ok := topology.FamilyOf(link.NetworkSide, s.CIDR.Addr()); ok {
					router.StaticRoutes = append(router.StaticRoutes, b.route(cr, s.CIDR, hop.Addr(), ""))
				}
			}
		default:
			b.problem("network %s: topology %s cannot be connected", n.Name, n.Topology)
		}
	}
	// Each network's router sends traffic from its pods toward the other
	// networks to the connect router.
	for _, m := range members {
		n := m.Network
		hop, ok := hops[n.Name]
		if !ok {
			continue
		}
		rtr := n.ClusterRouter()
		if n.Topology == netconf.TopologyLayer2 {
			rtr = n.TransitRouter()
		}
		inport := n.PodRouterPort(loc.Name)
		var ids []string
		for _, v6 := range []bool{false, true} {
			set, ok := b.connectedSet(members, n, v6)
			if !ok {
				continue
			}
			family := netip.IPv4Unspecified()
			if v6 {
				family = netip.IPv6Unspecified()
			}
			h, ok := topology.FamilyOf(hop, family)
			if !ok {
				continue
			}
			match := fmt.Sprintf("inport == %q && %s.dst == $%s", inport, ipOf(v6), set)
			id := fmt.Sprintf("policy:%s:%d:%s", rtr, ReroutePriority, match)
			b.add(&nbdb.LogicalRouterPolicy{UUID: id, Priority: ReroutePriority, Match: match, Action: nbdb.LogicalRouterPolicyActionReroute,
				Nexthops: []string{h.Addr().String()}, ExternalIDs: b.ext(loc.Name)})
			ids = append(ids, id)
		}
		if len(ids) > 0 {
			b.contribute(rtr, "policies", ids...)
		}
	}
	if in.ServicesOnly {
		b.servicesOnly(members, loc, in.ServiceCIDRs)
	}
	b.add(router)
	topology.SortRows(b.rows)
	return Result{Rows: b.rows, Contributions: b.contribs, Problems: b.problems}, nil
}

type builder struct {
	cnc      string
	sets     map[string]bool // address sets added
	rows     []model.Model
	contribs []ovsdbsync.Contribution
	problems []string
}

func (b *builder) add(m model.Model) { b.rows = append(b.rows, m) }

func (b *builder) problem(format string, args ...any) {
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

func (b *builder) ext(node string) map[string]string {
	m := map[string]string{ConnectKey: b.cnc, topology.ControllerKey: topology.ZoneController}
	if node != "" {
		m[topology.NodeKey] = node
	}
	return m
}

// contribute adds members to a set column of a network's router.
func (b *builder) contribute(router, column string, ids ...string) {
	b.contributeTo(&nbdb.LogicalRouter{Name: router}, column, ids...)
}

// contributeTo adds members to a set column of a row a network owns,
// merging with an earlier contribution to the same row and column.
func (b *builder) contributeTo(target model.Model, column string, ids ...string) {
	for i := range b.contribs {
		c := &b.contribs[i]
		if c.Column == column && targetName(c.Target) == targetName(target) {
			c.Members = append(c.Members, ids...)
			return
		}
	}
	b.contribs = append(b.contribs, ovsdbsync.Contribution{Target: target, Column: column, Members: ids})
}

// targetName tells contribution targets apart: table and name.
func targetName(m model.Model) string {
	switch x := m.(type) {
	case *nbdb.LogicalRouter:
		return "router/" + x.Name
	case *nbdb.LogicalSwitch:
		return "switch/" + x.Name
	}
	return fmt.Sprintf("%T", m)
}

// connectPort adds a connect router port: peered with the network's side
// when local, else a remote port on the node's chassis.
func (b *builder) connectPort(name, peer string, link connect.Link, node nodeinfo.Info, local bool) string {
	lrp := &nbdb.LogicalRouterPort{UUID: "lrp:" + name, Name: name, MAC: topology.PortMAC(link.ConnectSide), Networks: topology.PrefixStrings(link.ConnectSide),
		Options: map[string]string{"requested-tnl-key": strconv.Itoa(link.PortKey)}, ExternalIDs: b.ext(node.Name)}
	if local {
		lrp.Peer = &peer
	} else {
		lrp.Options["requested-chassis"] = node.ChassisID
	}
	b.add(lrp)
	return lrp.UUID
}

// networkPort adds the network router's side of a link and contributes it
// to the router's ports.
func (b *builder) networkPort(router, name, peer string, link connect.Link, node string) {
	lrp := &nbdb.LogicalRouterPort{UUID: "lrp:" + name, Name: name, MAC: topology.PortMAC(link.NetworkSide), Networks: topology.PrefixStrings(link.NetworkSide),
		Peer: &peer, ExternalIDs: b.ext(node)}
	b.add(lrp)
	b.contribute(router, "ports", lrp.UUID)
}

func (b *builder) route(router string, prefix netip.Prefix, hop netip.Addr, node string) string {
	id := fmt.Sprintf("route:%s::%s:%s", router, prefix, hop)
	b.add(&nbdb.LogicalRouterStaticRoute{UUID: id, IPPrefix: prefix.String(), Nexthop: hop.String(), ExternalIDs: b.ext(node)})
	return id
}
