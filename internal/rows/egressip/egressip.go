// Package egressip computes, as pure functions, the Northbound rows that
// make the pods an EgressIP selects leave the cluster from its egress IPs,
// for one network in one zone (every zone is one node and renders only its
// own node's rows).
//
// # Paths
//
// A selected pod's traffic is rerouted, by its source address, toward the
// gateway router of a node holding one of the object's egress IPs, where it
// is SNATed to that egress IP; several egress IPs mean several next hops,
// which OVN balances per connection (ECMP on the 5-tuple), so new
// connections of one pod spread over all of them — also for a pod on an
// egress node itself, which the seed's Layer2 story was written for.
//
//   - Layer3 (and the default network): the reroute policies
//     (ReroutePriority) are on the network's cluster router. In the pod's
//     zone a remote egress node's next hop is its cluster router's transit
//     switch address, the local one the local gateway router's join address.
//     The egress node's zone routes the remote pods' traffic, which arrives
//     on its cluster router from the transit switch, to its own gateway
//     router's join address with a source route for the network's subnets:
//     OVN routes before it applies policies, and the router's own source
//     route covers only its node's slice, so a policy there would come too
//     late. A subnet, not each pod's /32: source routes rank by their
//     prefix length against the destination routes, so a /32 would beat the
//     node's own slice and the other nodes' /24s, and a selected pod's
//     traffic to a pod of the egress node would loop through its gateway
//     router; the subnet's loses to all of them and catches only what has
//     no other route, the traffic leaving the cluster.
//   - Layer2: the policies are on the network's transit router, and every
//     next hop is an egress node's gateway router's peer address on the
//     transit router (seed 000: "the transit node peer ip as the next hop"):
//     the transit router reaches a remote gateway router directly, so the
//     egress node's zone needs no policy, and nothing depends on an
//     external gateway address. Where either end is at the old topology
//     (no transit router; docs/topology.md, "Changing a topology"), the
//     next hop is the egress node's join address, which both versions
//     reach over the switch; a zone at the old topology puts its policies
//     on its gateway router, and its egress node's own pods leave there.
//   - On the egress node's gateway router, one SNAT per selected pod
//     address to the egress IP the node holds (SNATPriority, above the
//     network's subnet SNAT), limited to the external port of the uplink
//     whose subnet holds the egress IP. With several uplinks, a reroute
//     policy (ReroutePriority) on the gateway router also sends the pod's
//     traffic to that uplink's next hops only: the egress IP exists on no
//     other segment, and the node's other bridges SNAT to its own address
//     there.
//
// Traffic that stays in the cluster never takes that path: where a zone has
// reroute policies, allow policies (AllowPriority, the seed's 102) let the
// network's traffic to its own subnets, to its join subnets and to the
// nodes' addresses be routed as usual.
//
// # Inputs
//
// Objects come in the order the caller resolves conflicts by (oldest
// first): a pod address two objects select egresses by the first, and the
// second gets a problem. An assignment to a node whose ID is unknown, or an
// egress IP of another family than a pod address, contributes nothing for
// it; a problem says so where the whole object is left without a path.
//
// # Ownership
//
// The rows of one network's EgressIPs in a zone are one ovsdbsync owner
// (Owner), which contributes its policies and source routes to the router
// (columns "policies" and "static_routes") and its NATs to the gateway
// router (column "nat"); the network owns both routers.
package egressip

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// ReroutePriority is the priority of the policies sending a selected pod's
// traffic toward its egress nodes: ovn-kubernetes' 100, below everything
// the topology, primary links and connects reroute, and below AllowPriority.
const ReroutePriority = 100

// AllowPriority is the priority of the policies that keep the network's
// traffic within the cluster off the egress path (the seed's 102).
const AllowPriority = 102

// SNATPriority is the priority of an egress SNAT on the gateway router:
// above the network's subnet SNAT (0), which a user-defined network's
// outport match would otherwise tie with.
const SNATPriority = 100

// ObjectKey is the external ID naming the EgressIP a row serves ("" on the
// network's allow policies, which serve all of them).
const ObjectKey = "k8s.ovn.org/egressip"

// NetworkKey is the external ID naming the network of every row.
const NetworkKey = "k8s.ovn.org/egressip-network"

// OwnerPrefix starts the ovsdbsync owner (and reconcile key) of a network's
// EgressIP rows in a zone.
const OwnerPrefix = "egressip:"

// Owner is the ovsdbsync owner of network's EgressIP rows.
func Owner(network string) string { return OwnerPrefix + network }

// Assignment is one egress IP of an object and the node holding it (its
// status item).
type Assignment struct {
	Node string
	IP   netip.Addr
}

// Pod is a pod an object selects, with its addresses on the network.
type Pod struct {
	Namespace, Name string
	// Node is the node the pod runs on.
	Node string
	IPs  []netip.Addr
}

// Object is one EgressIP as it concerns the network: its assignments and
// the network's pods it selects.
type Object struct {
	Name        string
	Assignments []Assignment
	Pods        []Pod
}

// Input is everything a zone's rendering of one network's EgressIPs
// depends on.
type Input struct {
	// Network is a primary Layer3 or Layer2 network, or the default one.
	Network topology.Network
	// Local is the zone's own node.
	Local nodeinfo.Info
	// NodeIDs are the node IDs of the cluster's nodes, by name (egress
	// nodes and the nodes of selected pods).
	NodeIDs map[string]int
	// NodeIPs are the nodes' addresses, which the network's pods reach
	// without the egress path.
	NodeIPs []netip.Addr
	// Uplinks are the local gateway router's external ports, with their
	// subnets and next hops (the node's uplinks).
	Uplinks []Uplink
	// Objects are the EgressIPs, oldest first.
	Objects []Object
	// Rendered reports whether a node renders the network (its gateway
	// router is there); nil: every node. Traffic is never sent to an egress
	// node that does not: it would be dropped there.
	Rendered func(node string) bool
	// Layer2V1 reports whether a node is at the old Layer2 topology
	// (nodeinfo.Info.Layer2V1); nil: none is.
	Layer2V1 func(node string) bool
}

// Uplink is one of the local gateway router's external ports.
type Uplink struct {
	Port     string
	Subnets  []netip.Prefix
	NextHops []netip.Addr
}

// Result is one network's EgressIP rendering in one zone.
type Result struct {
	// Rows are the policies, source routes and NATs, sorted by ID.
	Rows []model.Model
	// Contributions add the policies and source routes to the router and
	// the NATs to the gateway router, sorted by router and column.
	Contributions []ovsdbsync.Contribution
	// Problems say what is left without an egress path, and why.
	Problems []string
}

type builder struct {
	in       Input
	rows     []model.Model
	contribs map[[2]string][]string
	problems []string
	seen     map[netip.Addr]string // pod address → the object it egresses by
	router   string                // where the policies go
	routes   map[string]bool       // source routes already rendered
}

// Render returns a network's EgressIP rows in the local zone.
func Render(in Input) Result {
	n := in.Network
	b := &builder{in: in, seen: map[netip.Addr]string{}}
	switch {
	case n.Topology == netconf.TopologyLayer3 && (n.IsPrimary() || n.IsDefault()):
		b.router = n.ClusterRouter()
	case n.Topology == netconf.TopologyLayer2 && n.IsPrimary() && in.Local.Layer2V1:
		// The old topology: the pods' gateway is the gateway router.
		b.router = n.GatewayRouter(in.Local.Name)
	case n.Topology == netconf.TopologyLayer2 && n.IsPrimary():
		b.router = n.TransitRouter()
	default:
		b.problems = append(b.problems, fmt.Sprintf("network %s: EgressIPs apply to primary Layer3 and Layer2 networks and the default network, not a %s %s network", n.Name, n.Role, n.Topology))
		return b.result()
	}
	for _, o := range in.Objects {
		b.object(o)
	}
	b.allows()
	return b.result()
}

// object renders one EgressIP's policies and NATs for the local zone.
func (b *builder) object(o Object) {
	in, n := b.in, b.in.Network
	local := in.Local.Name
	holdsHere := map[bool][]netip.Addr{} // the egress IPs the local node holds, by IPv4-ness
	for _, a := range o.Assignments {
		if a.Node == local {
			holdsHere[a.IP.Is4()] = append(holdsHere[a.IP.Is4()], a.IP)
		}
	}
	for _, p := range o.Pods {
		for _, ip := range p.IPs {
			if first, dup := b.seen[ip]; dup {
				if first != o.Name {
					b.problems = append(b.problems, fmt.Sprintf("EgressIP %s: pod %s/%s's address %s already egresses by EgressIP %s", o.Name, p.Namespace, p.Name, ip, first))
				}
				continue
			}
			hops := b.hops(o, ip.Is4())
			if len(hops) == 0 && !(b.old() && len(holdsHere[ip.Is4()]) > 0) {
				// Not claimed: a younger EgressIP with a path may take it.
				b.problems = append(b.problems, fmt.Sprintf("EgressIP %s: pod %s/%s's address %s has no egress node of its family", o.Name, p.Namespace, p.Name, ip))
				continue
			}
			b.seen[ip] = o.Name
			match := fmt.Sprintf("%s.src == %s", family(ip), ip)
			switch {
			case p.Node == local && b.old() && len(holdsHere[ip.Is4()]) > 0:
				// The old topology: a pod of an egress node leaves
				// through its own gateway router (no reroute to itself).
			case p.Node == local:
				b.policy(o.Name, match, hops)
			case n.Topology == netconf.TopologyLayer3 && len(holdsHere[ip.Is4()]) > 0:
				// A remote pod's traffic, sent here through the transit
				// switch: on to the local gateway router.
				if hop, ok := b.localGateway(ip.Is4()); ok {
					b.sourceRoutes(ip.Is4(), hop)
				}
			}
			for _, eip := range holdsHere[ip.Is4()] {
				b.snat(o.Name, ip, eip)
				break // one egress IP of a family per node (distinct nodes)
			}
		}
	}
}

// old reports whether the zone renders a Layer2 network in the old
// topology: the policies are then the gateway router's.
func (b *builder) old() bool {
	return b.in.Network.Topology == netconf.TopologyLayer2 && b.in.Local.Layer2V1
}

// hops are the next hops toward o's egress nodes of one IP family, sorted.
func (b *builder) hops(o Object, v4 bool) []string {
	n, in := b.in.Network, b.in
	set := map[string]bool{}
	for _, a := range o.Assignments {
		if a.IP.Is4() != v4 {
			continue
		}
		if in.Rendered != nil && !in.Rendered(a.Node) {
			b.problems = append(b.problems, fmt.Sprintf("EgressIP %s: egress node %s does not render network %s (none of its pods there)", o.Name, a.Node, n.Name))
			continue
		}
		if a.Node == in.Local.Name && n.Topology == netconf.TopologyLayer3 {
			if hop, ok := b.localGateway(v4); ok {
				set[hop] = true
			}
			continue
		}
		if b.old() && a.Node == in.Local.Name {
			continue // the old topology: egress pods of this node leave here (object)
		}
		id, ok := in.NodeIDs[a.Node]
		if !ok {
			b.problems = append(b.problems, fmt.Sprintf("EgressIP %s: egress node %s has no node ID yet", o.Name, a.Node))
			continue
		}
		t, ok := topology.FamilyOf(n.Transit, a.IP)
		if !ok {
			continue
		}
		switch n.Topology {
		case netconf.TopologyLayer3:
			if ip, err := allocator.TransitSwitchIP(t, id); err == nil {
				set[ip.Addr().String()] = true
			}
		case netconf.TopologyLayer2:
			if in.Local.Layer2V1 || in.Layer2V1 != nil && in.Layer2V1(a.Node) {
				// Either end at the old topology: the join address, which
				// both reach over the switch (docs/topology.md, "Changing a
				// topology").
				for _, j := range n.Join {
					if ip, err := allocator.GatewayJoinIP(j, id); err == nil && j.Addr().Is4() == v4 {
						set[ip.Addr().String()] = true
					}
				}
				continue
			}
			if _, gw, err := allocator.TransitPeers(t, id); err == nil {
				set[gw.Addr().String()] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// localGateway is the local gateway router's join address of one family.
func (b *builder) localGateway(v4 bool) (string, bool) {
	for _, j := range b.in.Network.Join {
		if j.Addr().Is4() != v4 {
			continue
		}
		if ip, err := allocator.GatewayJoinIP(j, b.in.Local.ID); err == nil {
			return ip.Addr().String(), true
		}
	}
	return "", false
}

func (b *builder) policy(object, match string, hops []string) {
	id := fmt.Sprintf("policy:%s:%d:%s", b.router, ReroutePriority, match)
	b.rows = append(b.rows, &nbdb.LogicalRouterPolicy{UUID: id, Priority: ReroutePriority, Match: match,
		Action: nbdb.LogicalRouterPolicyActionReroute, Nexthops: hops, ExternalIDs: b.ext(object)})
	b.contribute(b.router, "policies", id)
}

// sourceRoutes routes what leaves the cluster from the network's subnets
// of one family to the local gateway router (once per zone).
func (b *builder) sourceRoutes(v4 bool, hop string) {
	for _, s := range b.in.Network.Subnets {
		if s.CIDR.Addr().Is4() != v4 {
			continue
		}
		id := fmt.Sprintf("route:%s:src-ip:%s:%s", b.router, s.CIDR, hop)
		if b.routes[id] {
			continue
		}
		if b.routes == nil {
			b.routes = map[string]bool{}
		}
		b.routes[id] = true
		policy := nbdb.LogicalRouterStaticRoutePolicySrcIP
		b.rows = append(b.rows, &nbdb.LogicalRouterStaticRoute{UUID: id, IPPrefix: s.CIDR.String(), Nexthop: hop, Policy: &policy, ExternalIDs: b.ext("")})
		b.contribute(b.router, "static_routes", id)
	}
}

func (b *builder) snat(object string, pod, eip netip.Addr) {
	n, local := b.in.Network, b.in.Local.Name
	gr := n.GatewayRouter(local)
	var up *Uplink
	for i, u := range b.in.Uplinks {
		for _, s := range u.Subnets {
			if s.Masked().Contains(eip) {
				up = &b.in.Uplinks[i]
			}
		}
	}
	if up == nil {
		b.problems = append(b.problems, fmt.Sprintf("EgressIP %s: %s is on none of node %s's uplinks", object, eip, local))
		return
	}
	logical := netip.PrefixFrom(pod, pod.BitLen()).String()
	id := "nat:" + gr + ":snat:" + logical
	// With a match, OVN orders SNATs by priority, not by the logical IP's
	// length: SNATPriority puts it above the subnet SNAT.
	nat := &nbdb.NAT{UUID: id, Type: nbdb.NATTypeSNAT, LogicalIP: logical, ExternalIP: eip.String(), Priority: SNATPriority,
		Match: fmt.Sprintf("outport == %q", up.Port), ExternalIDs: b.ext(object)}
	b.rows = append(b.rows, nat)
	b.contribute(gr, "nat", id)
	if len(b.in.Uplinks) < 2 {
		return
	}
	var hops []string
	for _, h := range up.NextHops {
		if h.Is4() == pod.Is4() {
			hops = append(hops, h.String())
		}
	}
	if len(hops) == 0 {
		b.problems = append(b.problems, fmt.Sprintf("EgressIP %s: node %s's uplink %s has no next hop of %s's family", object, local, up.Port, pod))
		return
	}
	sort.Strings(hops)
	match := fmt.Sprintf("%s.src == %s", family(pod), pod)
	pid := fmt.Sprintf("policy:%s:%d:%s", gr, ReroutePriority, match)
	b.rows = append(b.rows, &nbdb.LogicalRouterPolicy{UUID: pid, Priority: ReroutePriority, Match: match,
		Action: nbdb.LogicalRouterPolicyActionReroute, Nexthops: hops, ExternalIDs: b.ext(object)})
	b.contribute(gr, "policies", pid)
}

// allows keeps the network's traffic within the cluster off the egress
// path, where the zone reroutes any.
func (b *builder) allows() {
	if len(b.contribs[[2]string{b.router, "policies"}]) == 0 {
		return
	}
	n := b.in.Network
	for _, v4 := range []bool{true, false} {
		var subnets []string
		for _, s := range n.Subnets {
			if s.CIDR.Addr().Is4() == v4 {
				subnets = append(subnets, s.CIDR.String())
			}
		}
		if len(subnets) == 0 {
			continue
		}
		fam := "ip6"
		if v4 {
			fam = "ip4"
		}
		src := fmt.Sprintf("%s.src == {%s}", fam, strings.Join(subnets, ", "))
		dsts := [][]string{subnets}
		var join, nodes []string
		for _, j := range n.Join {
			if j.Addr().Is4() == v4 {
				join = append(join, j.String())
			}
		}
		for _, a := range b.in.NodeIPs {
			if a.Is4() == v4 {
				nodes = append(nodes, a.String())
			}
		}
		sort.Strings(nodes)
		dsts = append(dsts, join, nodes)
		for _, d := range dsts {
			if len(d) == 0 {
				continue
			}
			match := fmt.Sprintf("%s && %s.dst == {%s}", src, fam, strings.Join(d, ", "))
			id := fmt.Sprintf("policy:%s:%d:%s", b.router, AllowPriority, match)
			b.rows = append(b.rows, &nbdb.LogicalRouterPolicy{UUID: id, Priority: AllowPriority, Match: match,
				Action: nbdb.LogicalRouterPolicyActionAllow, ExternalIDs: b.ext("")})
			b.contribute(b.router, "policies", id)
		}
	}
}

func (b *builder) ext(object string) map[string]string {
	m := map[string]string{NetworkKey: b.in.Network.Name, topology.ControllerKey: topology.ZoneController, topology.NodeKey: b.in.Local.Name}
	if object != "" {
		m[ObjectKey] = object
	}
	return m
}

func (b *builder) contribute(router, column string, ids ...string) {
	if b.contribs == nil {
		b.contribs = map[[2]string][]string{}
	}
	k := [2]string{router, column}
	b.contribs[k] = append(b.contribs[k], ids...)
}

// result sorts the rows, contributions and their members.
func (b *builder) result() Result {
	topology.SortRows(b.rows)
	var problems []string // each once, in order
	seen := map[string]bool{}
	for _, p := range b.problems {
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	return Result{Rows: b.rows, Contributions: topology.RouterContributions(b.contribs), Problems: problems}
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "ip4"
	}
	return "ip6"
}
