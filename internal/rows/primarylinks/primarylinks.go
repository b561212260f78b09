// Package primarylinks computes, as pure functions, the Northbound rows that
// join two primary networks of one namespace in a zone (OKEP-5252, "Multiple
// Primary UDNs in a namespace": pods on a namespace's primary networks all
// reach one another, routed at the OVN level).
//
// # Topology
//
// Every zone is one node with its own Northbound, and renders only its own
// node's rows. For each pair of primary networks (A, B) that share a
// namespace, the zone joins the two networks' routers on its node with a
// point-to-point link: two Logical_Router_Ports peered with each other, no
// switch between them. A network's side of the link is
//
//   - its cluster router (topology.Network.ClusterRouter) for Layer3: one per
//     zone, and the router the node's pods route through;
//   - its gateway router on the node (topology.Network.GatewayRouter) for
//     Layer2: the transit router is shared by all zones, and already sends
//     the local pods' traffic by source to the local gateway router.
//
// So a Layer3–Layer2 pair links cluster router ↔ gateway router (the seed's
// diagram), a Layer3–Layer3 pair cluster router ↔ cluster router, and a
// Layer2–Layer2 pair gateway router ↔ gateway router.
//
// On each side, static routes send the other network's subnets over the
// link. On a Layer3 side a reroute policy (ReroutePriority) is also needed:
// the cluster router routes the local node slice's traffic by source to the
// local gateway router, and that /24-like source route is longer than the
// other network's supernet, so it would win over the destination route. A
// Layer2 side needs no policy: its transit router sends the local pods'
// traffic to the local gateway router, where the new static route takes it
// over the link.
//
// Traffic toward the other network is thus routed into it on the source
// pod's node and then crosses only the destination network's own overlay
// (the seed's "should flow as"): a Layer2 pod on node 1 reaching a Layer3
// pod on node 2 goes Layer2 switch → Layer2 gateway router (node 1) → Layer3
// cluster router (node 1) → Layer3 transit switch → Layer3 cluster router
// (node 2) → Layer3 node switch.
//
// # Addresses
//
// The link of networks with IDs a and b takes the /31 (IPv4) or /127 (IPv6)
// at index a XOR b of each primary link subnet (config.Cluster's
// PrimaryLinkSubnets): index i is offsets 2i and 2i+1 from the subnet's
// start; the network with the lower ID takes the even address, the higher
// one the odd address. XOR is used because it needs no allocation and no
// state: both ends, every zone and every restart derive the same link from
// the two IDs alone; and the links of one router are distinct, since
// a^b == a^c implies b == c. Network IDs are 1..4095, so indexes are
// 1..4095 and a link subnet holds 2 × 4096 addresses (a /19, a /115). Links
// of unrelated pairs may get the same addresses (1^6 == 2^5): they are on
// other routers, which never route between each other over these links.
//
// Only the IP families both networks have are linked; a pair with no common
// family, a network that is not a primary Layer3 or Layer2 one, or a node
// whose routers the zone does not render yet gets a problem instead of rows.
//
// # Ownership
//
// A link is its own ovsdbsync owner (Owner), holding its two router ports,
// its static routes and its policies; it contributes them to the two
// networks' routers (columns "ports", "static_routes" and "policies"), which
// the networks own.
package primarylinks

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// ReroutePriority is the priority of the policies sending a Layer3 cluster
// router's local pods' traffic toward the other network over the link: above
// the node reroute (topology.NodeReroutePriority, 1004) and the cluster
// router's per-node source routes it must override, below the isolation
// drop toward the default network (topology.IsolationPriority, 1200), which
// must keep winning, and below a ClusterNetworkConnect's reroute
// (connectrouter.ReroutePriority, 9001).
const ReroutePriority = 1100

// LinkKey is the external ID naming the pair a row belongs to; its value is
// the two network names, lower first, joined by "|" (as in Owner).
const LinkKey = "k8s.ovn.org/primary-link"

// OwnerPrefix starts the ovsdbsync owner (and reconcile key) of a link.
const OwnerPrefix = "primary-link:"

// portPrefix starts the name of every link port (PortName).
const portPrefix = "plink_"

// Input is everything a zone's rendering of one link depends on.
type Input struct {
	// A and B are two primary networks (Layer3 or Layer2) sharing a
	// namespace, in any order.
	A, B topology.Network
	// Local is the zone's own node.
	Local nodeinfo.Info
	// Subnets are the primary link subnets (config.Cluster.PrimaryLinkSubnets).
	Subnets []netip.Prefix
}

// Result is a link's rendering in one zone.
type Result struct {
	// Rows are the rows the link owns: its two router ports, its static
	// routes and its policies, sorted by ID.
	Rows []model.Model
	// Contributions add the link's ports, routes and policies to the two
	// networks' routers (columns "ports", "static_routes", "policies"),
	// sorted by router and column.
	Contributions []ovsdbsync.Contribution
	// Problems say why the link, or one IP family of it, is not rendered.
	Problems []string
}

// pairKey is "<lower>|<higher>" of two network names.
func pairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "|" + b
}

// Owner is the ovsdbsync owner of the link between networks a and b:
// "primary-link:<lower name>|<higher name>" (names compared as strings), the
// same whatever the order of a and b. Network names hold no "|".
func Owner(a, b string) string { return OwnerPrefix + pairKey(a, b) }

// ParseOwner returns the two networks of a link's owner key (Owner), lower
// first; ok is false for any other key.
func ParseOwner(owner string) (a, b string, ok bool) {
	rest, found := strings.CutPrefix(owner, OwnerPrefix)
	if !found {
		return "", "", false
	}
	a, b, ok = strings.Cut(rest, "|")
	return a, b, ok && a != "" && b != ""
}

// PortName is the port on from's router toward to's router:
// "plink_<from>_to_<to>". Network names hold no "_" (they are
// "<namespace>.<udn>" or "cluster.udn.<cudn>"), so the name is unambiguous,
// and it cannot be one of the topology's ports (rtos-, trtor-, ...), a
// connect's ports ("<cnc>-to-<network>[_<node>]") or a pod's port
// ("<ns>_<pod>", "<ns>.<nad>_<ns>_<pod>").
func PortName(from, to topology.Network) string {
	return portPrefix + from.Name + "_to_" + to.Name
}

// Router is network n's side of its links on node: its cluster router for
// Layer3, its gateway router on node for Layer2 ("" for other topologies).
func Router(n topology.Network, node string) string {
	switch n.Topology {
	case netconf.TopologyLayer3:
		return n.ClusterRouter()
	case netconf.TopologyLayer2:
		return n.GatewayRouter(node)
	}
	return ""
}

// LinkAddresses returns the two ends of the link between the networks with
// IDs idA and idB, one prefix per subnet (in subnets' order): the /31 (IPv4)
// or /127 (IPv6) at index idA XOR idB, that is offsets 2i and 2i+1 from the
// subnet's start. The network with the lower ID gets the even address. It
// fails when an ID is outside 1..config.MaxNetworkID, when the IDs are
// equal, when two subnets are of one IP family, or when the index does not
// fit a subnet.
func LinkAddresses(subnets []netip.Prefix, idA, idB int) (sideA, sideB []netip.Prefix, err error) {
	for _, id := range []int{idA, idB} {
		if id < 1 || id > config.MaxNetworkID {
			return nil, nil, fmt.Errorf("network ID %d is outside 1..%d", id, config.MaxNetworkID)
		}
	}
	if idA == idB {
		return nil, nil, fmt.Errorf("two networks with ID %d", idA)
	}
	i := uint64(idA ^ idB)
	seen := map[bool]netip.Prefix{}
	for _, s := range subnets {
		if !s.IsValid() {
			return nil, nil, fmt.Errorf("invalid primary link subnet %v", s)
		}
		if q, dup := seen[s.Addr().Is4()]; dup {
			return nil, nil, fmt.Errorf("primary link subnets %s and %s are of one IP family", q, s)
		}
		seen[s.Addr().Is4()] = s
		bits := 127
		if s.Addr().Is4() {
			bits = 31
		}
		even, err1 := allocator.NthAddress(s, 2*i)
		odd, err2 := allocator.NthAddress(s, 2*i+1)
		if err1 != nil || err2 != nil {
			return nil, nil, fmt.Errorf("link index %d (network IDs %d XOR %d) does not fit the primary link subnet %s (it holds indexes up to %d)",
				i, idA, idB, s, maxIndex(s))
		}
		low, high := netip.PrefixFrom(even, bits), netip.PrefixFrom(odd, bits)
		if idA < idB {
			sideA, sideB = append(sideA, low), append(sideB, high)
		} else {
			sideA, sideB = append(sideA, high), append(sideB, low)
		}
	}
	return sideA, sideB, nil
}

// maxIndex is the largest link index a subnet holds.
func maxIndex(s netip.Prefix) uint64 {
	hostBits := s.Addr().BitLen() - s.Bits()
	if hostBits < 1 {
		return 0
	}
	if hostBits >= 64 {
		return 1<<63 - 1
	}
	return 1<<(hostBits-1) - 1
}

// Render returns the link's rows in the zone of in.Local, and its
// contributions to the two networks' routers. Parts that cannot be rendered
// are Problems; the error is for inputs no caller should give (one network
// twice, no local node name).
func Render(in Input) (Result, error) {
	if in.A.Name == in.B.Name {
		return Result{}, fmt.Errorf("primary link of network %q with itself", in.A.Name)
	}
	if in.Local.Name == "" {
		return Result{}, fmt.Errorf("primary link %s: no local node", pairKey(in.A.Name, in.B.Name))
	}
	// Lower ID first (then name), so the order of A and B changes nothing.
	x, y := in.A, in.B
	if y.ID < x.ID || (y.ID == x.ID && y.Name < x.Name) {
		x, y = y, x
	}
	b := &builder{pair: pairKey(x.Name, y.Name), node: in.Local.Name}
	for _, n := range []topology.Network{x, y} {
		if why := unlinkable(n); why != "" {
			b.problem("network %s: %s", n.Name, why)
		} else if why := notReady(n, in.Local); why != "" {
			b.problem("network %s: node %s: %s", n.Name, in.Local.Name, why)
		}
	}
	if len(b.problems) > 0 {
		return b.result(), nil
	}
	var subnets []netip.Prefix
	common := false
	for _, v4 := range []bool{true, false} {
		fam := familyName(v4)
		if !hasFamily(x, v4) || !hasFamily(y, v4) {
			continue
		}
		common = true
		p, ok := topology.FamilyOf(in.Subnets, familyAddr(v4))
		if !ok {
			b.problem("no primary link subnet of %s: the networks' %s subnets are not linked", fam, fam)
			continue
		}
		subnets = append(subnets, p)
	}
	if !common {
		b.problem("networks %s (%s) and %s (%s) have no IP family in common", x.Name, families(x), y.Name, families(y))
	}
	if len(subnets) == 0 {
		return b.result(), nil
	}
	ax, ay, err := LinkAddresses(subnets, x.ID, y.ID)
	if err != nil {
		b.problem("%v", err)
		return b.result(), nil
	}
	b.side(x, y, ax, ay)
	b.side(y, x, ay, ax)
	return b.result(), nil
}

// unlinkable says why n cannot take part in a primary link, or "".
func unlinkable(n topology.Network) string {
	switch {
	case n.IsDefault():
		return "the cluster default network is not linked to user-defined networks"
	case !n.IsPrimary():
		return fmt.Sprintf("not a primary network (role %q)", n.Role)
	case n.Topology == netconf.TopologyLocalnet:
		return "a Localnet network has no router to link"
	case n.Topology != netconf.TopologyLayer3 && n.Topology != netconf.TopologyLayer2:
		return fmt.Sprintf("topology %q cannot be linked", n.Topology)
	}
	return ""
}

// notReady says why the zone does not render n's side router on its node
// yet, as internal/rows/topology decides it (no node ID, no chassis, no gateway
// configuration, for Layer3 no node subnet of the network), or "".
func notReady(n topology.Network, local nodeinfo.Info) string {
	switch {
	case local.ID < allocator.FirstNodeID:
		return "no node ID yet"
	case local.ChassisID == "":
		return "no chassis ID yet"
	case local.Gateway == nil:
		return "no gateway configuration (" + nodeinfo.GatewayAnnotation + ")"
	case n.Topology == netconf.TopologyLayer3 && len(local.Subnets[n.Name]) == 0:
		return "no subnet of the network yet"
	}
	return ""
}

func hasFamily(n topology.Network, v4 bool) bool {
	for _, s := range n.Subnets {
		if s.CIDR.Addr().Is4() == v4 {
			return true
		}
	}
	return false
}

func familyAddr(v4 bool) netip.Addr {
	if v4 {
		return netip.IPv4Unspecified()
	}
	return netip.IPv6Unspecified()
}

func familyName(v4 bool) string {
	if v4 {
		return "IPv4"
	}
	return "IPv6"
}

// families names n's IP families for messages.
func families(n topology.Network) string {
	var out []string
	for _, v4 := range []bool{true, false} {
		if hasFamily(n, v4) {
			out = append(out, familyName(v4))
		}
	}
	if len(out) == 0 {
		return "no subnets"
	}
	return strings.Join(out, ", ")
}

type builder struct {
	pair, node string
	rows       []model.Model
	contribs   map[[2]string][]string // router, column → members
	problems   []string
}

func (b *builder) problem(format string, args ...any) {
	b.problems = append(b.problems, "primary link "+b.pair+": "+fmt.Sprintf(format, args...))
}

func (b *builder) ext() map[string]string {
	return map[string]string{LinkKey: b.pair, topology.ControllerKey: topology.ZoneController, topology.NodeKey: b.node}
}

func (b *builder) contribute(router, column string, ids ...string) {
	if len(ids) == 0 {
		return
	}
	if b.contribs == nil {
		b.contribs = map[[2]string][]string{}
	}
	k := [2]string{router, column}
	b.contribs[k] = append(b.contribs[k], ids...)
}

// side renders x's end of the link toward y: x's port (own addresses),
// routes to y's subnets through y's end (peer addresses), and on a Layer3
// cluster router the reroute of the local pods' traffic toward y.
func (b *builder) side(x, y topology.Network, own, peer []netip.Prefix) {
	rtr := Router(x, b.node)
	port, peerPort := PortName(x, y), PortName(y, x)
	lrp := &nbdb.LogicalRouterPort{UUID: "lrp:" + port, Name: port, MAC: topology.PortMAC(own),
		Networks: topology.PrefixStrings(own), Peer: &peerPort, ExternalIDs: b.ext()}
	b.rows = append(b.rows, lrp)
	b.contribute(rtr, "ports", lrp.UUID)

	var routes []string
	for _, s := range y.Subnets {
		hop, ok := topology.FamilyOf(peer, s.CIDR.Addr())
		if !ok {
			continue
		}
		out := port
		id := fmt.Sprintf("route:%s::%s:%s", rtr, s.CIDR, hop.Addr())
		b.rows = append(b.rows, &nbdb.LogicalRouterStaticRoute{UUID: id, IPPrefix: s.CIDR.String(), Nexthop: hop.Addr().String(),
			OutputPort: &out, ExternalIDs: b.ext()})
		routes = append(routes, id)
	}
	b.contribute(rtr, "static_routes", routes...)

	if x.Topology != netconf.TopologyLayer3 {
		return
	}
	var policies []string
	for _, hop := range peer {
		var dsts []string
		for _, s := range y.Subnets {
			if s.CIDR.Addr().Is4() == hop.Addr().Is4() {
				dsts = append(dsts, s.CIDR.String())
			}
		}
		if len(dsts) == 0 {
			continue
		}
		match := fmt.Sprintf("inport == %q && %s.dst == {%s}", x.PodRouterPort(b.node), topology.IPMatch(hop), strings.Join(dsts, ", "))
		id := fmt.Sprintf("policy:%s:%d:%s", rtr, ReroutePriority, match)
		b.rows = append(b.rows, &nbdb.LogicalRouterPolicy{UUID: id, Priority: ReroutePriority, Match: match,
			Action: nbdb.LogicalRouterPolicyActionReroute, Nexthops: []string{hop.Addr().String()}, ExternalIDs: b.ext()})
		policies = append(policies, id)
	}
	b.contribute(rtr, "policies", policies...)
}

// result sorts the rows, contributions and their members.
func (b *builder) result() Result {
	topology.SortRows(b.rows)
	return Result{Rows: b.rows, Contributions: topology.RouterContributions(b.contribs), Problems: b.problems}
}
