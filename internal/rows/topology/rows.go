package topology

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
)

// External IDs on every row ovn-udn renders (besides ovsdbsync's owner and
// ID keys), so operators can tell what a row belongs to.
const (
	NetworkKey  = "k8s.ovn.org/network"
	TopologyKey = "k8s.ovn.org/topology"
	RoleKey     = "k8s.ovn.org/role"
	NodeKey     = "k8s.ovn.org/node"
	// ControllerKey names the controller that owns the row.
	ControllerKey = "k8s.ovn.org/owner-controller"
	// ZoneController is ControllerKey's value for zone controllers.
	ZoneController = "zone"
)

// Problem is a node left out of a network's rendering, and why.
type Problem struct {
	Node   string
	Reason string
}

// Result is a network's rendering in one zone.
type Result struct {
	// Rows are the desired rows, with IDs in their UUID fields (see
	// internal/ovsdbsync).
	Rows []model.Model
	// Skipped lists remote nodes left out (their annotations are not ready).
	Skipped []Problem
	// WaitingForBFD are next hops whose default routes go without BFD
	// until the default network's shared BFD row exists (Input.SharedBFD).
	WaitingForBFD []netip.Addr
}

// builder accumulates rows with the network's external IDs.
type builder struct {
	n    Network
	rows []model.Model
	// podSwitch is the switch workload ports attach to (the node switch of a
	// Layer3 network, the distributed switch of a Layer2 one).
	podSwitch *nbdb.LogicalSwitch
	// gatewayRouter is the local gateway router (primary networks).
	gatewayRouter *nbdb.LogicalRouter
	// gw is the default-route policy, sharedBFD the BFD rows other
	// networks' routes refer to (Input); waitingForBFD the next hops whose
	// shared row is missing.
	gw            config.Gateway
	sharedBFD     map[netip.Addr]string
	waitingForBFD []netip.Addr
	// skipped are remote nodes left out for a reason found while
	// rendering (Result.Skipped).
	skipped []Problem
}

// skip leaves remote node out, saying why.
func (b *builder) skip(node, reason string) {
	b.skipped = append(b.skipped, Problem{Node: node, Reason: reason})
}

// loadBalancerGroup renders the network's cluster load balancer group (its
// members are the services', see internal/rows/services) and has the pod switch
// and the gateway router use it.
func (b *builder) loadBalancerGroup() {
	if !b.n.HasServices() {
		return
	}
	id := "lbg:" + b.n.ClusterLBGroup()
	b.add(&nbdb.LoadBalancerGroup{UUID: id, Name: b.n.ClusterLBGroup()})
	if b.podSwitch != nil {
		b.podSwitch.LoadBalancerGroup = []string{id}
	}
	if b.gatewayRouter != nil {
		b.gatewayRouter.LoadBalancerGroup = []string{id}
	}
}

func (b *builder) ext(node string) map[string]string {
	m := map[string]string{
		NetworkKey:    b.n.Name,
		TopologyKey:   b.n.Topology,
		RoleKey:       b.n.Role,
		ControllerKey: ZoneController,
	}
	if node != "" {
		m[NodeKey] = node
	}
	return m
}

func (b *builder) add(m ...model.Model) { b.rows = append(b.rows, m...) }

// IDs of rows; references between desired rows use them.
func lsID(name string) string  { return "ls:" + name }
func lrID(name string) string  { return "lr:" + name }
func lspID(name string) string { return "lsp:" + name }

// PortRowID is the ID of a logical switch port's row among a network's
// desired rows (what refers to the port without a database, as render does).
func PortRowID(name string) string { return lspID(name) }
func lrpID(name string) string     { return "lrp:" + name }

func routeID(router, policy, prefix, nexthop string) string {
	return fmt.Sprintf("route:%s:%s:%s:%s", router, policy, prefix, nexthop)
}

func natID(router, typ, logical string) string {
	return fmt.Sprintf("nat:%s:%s:%s", router, typ, logical)
}

func policyID(router string, priority int, match string) string {
	return fmt.Sprintf("policy:%s:%d:%s", router, priority, match)
}

// switchPort adds a port of type router peering with routerPort.
func (b *builder) routerTypePort(name, routerPort, node string, options map[string]string) string {
	opts := map[string]string{"router-port": routerPort}
	for k, v := range options {
		opts[k] = v
	}
	b.add(&nbdb.LogicalSwitchPort{UUID: lspID(name), Name: name, Type: "router", Addresses: []string{"router"},
		Options: opts, ExternalIDs: b.ext(node)})
	return lspID(name)
}

// routerPort adds a router port holding addresses; its MAC is derived from the
// first IPv4 address (else the first address).
func (b *builder) routerPort(name, node string, networks []netip.Prefix, options map[string]string) string {
	b.add(&nbdb.LogicalRouterPort{UUID: lrpID(name), Name: name, MAC: PortMAC(networks), Networks: PrefixStrings(networks),
		Options: options, ExternalIDs: b.ext(node)})
	return lrpID(name)
}

// route adds a static route and returns its ID.
func (b *builder) route(router, policy string, prefix netip.Prefix, nexthop string, outputPort string, node string) string {
	return b.routeRow(router, policy, prefix, nexthop, outputPort, node).UUID
}

// routeRow is route, returning the row (added already: callers may set
// more columns, such as options and bfd).
func (b *builder) routeRow(router, policy string, prefix netip.Prefix, nexthop string, outputPort string, node string) *nbdb.LogicalRouterStaticRoute {
	id := routeID(router, policy, prefix.String(), nexthop)
	r := &nbdb.LogicalRouterStaticRoute{UUID: id, IPPrefix: prefix.String(), Nexthop: nexthop, ExternalIDs: b.ext(node)}
	if policy == nbdb.LogicalRouterStaticRoutePolicySrcIP {
		p := policy
		r.Policy = &p
	}
	if outputPort != "" {
		r.OutputPort = &outputPort
	}
	b.add(r)
	return r
}

// PortMAC is the MAC of a port holding these addresses: derived from the first
// IPv4 address, else the first one.
func PortMAC(networks []netip.Prefix) string {
	for _, p := range networks {
		if p.Addr().Is4() {
			return allocator.MAC(p.Addr()).String()
		}
	}
	if len(networks) == 0 {
		return ""
	}
	return allocator.MAC(networks[0].Addr()).String()
}

// PrefixStrings renders prefixes as strings (a row's networks column).
func PrefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// hostPrefix returns addr as a full-length prefix (/32 or /128).
func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// nth returns address n of prefix p with p's length (n=1: the gateway), or
// an error when p is too small to have it.
func nth(p netip.Prefix, n uint64) (netip.Prefix, error) {
	a, err := allocator.NthAddress(p, n)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, p.Bits()), nil
}

// gatewayAndManagement returns the addresses of a subnet's gateway (offset 1)
// and management port (offset 2), or an error when the subnet is too small
// to have them.
func gatewayAndManagement(s netip.Prefix) (gw, mgmt netip.Prefix, err error) {
	if gw, err = nth(s, 1); err != nil {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("no gateway address: %w", err)
	}
	if mgmt, err = nth(s, 2); err != nil {
		return netip.Prefix{}, netip.Prefix{}, fmt.Errorf("no management port address: %w", err)
	}
	return gw, mgmt, nil
}

// IPMatch is "ip4" or "ip6" for a prefix (an OVN match's protocol).
func IPMatch(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "ip4"
	}
	return "ip6"
}

// SortRows orders rows by ID, so renderings are stable for diffs and goldens.
func SortRows(rows []model.Model) {
	sort.SliceStable(rows, func(i, j int) bool { return RowID(rows[i]) < RowID(rows[j]) })
}

// RowID returns the ID (UUID field) of a desired row.
func RowID(m model.Model) string {
	if r, ok := m.(interface{ GetUUID() string }); ok {
		return r.GetUUID()
	}
	return fmt.Sprintf("%T", m)
}

// joinAddrs renders "MAC addr addr" for a port's addresses column.
func joinAddrs(mac string, addrs ...string) string {
	return strings.Join(append([]string{mac}, addrs...), " ")
}

// gatewayMTU is the options of a gateway router's port towards the network
// (rtotr- on Layer2, seed 000; rtoj- on Layer3): gateway_mtu = the network's
// MTU, so a packet from outside too large for the network (the underlay's
// MTU is larger by the tunnel's overhead) is answered with ICMP
// "fragmentation needed" / "packet too big" by the gateway router, and the
// sender's path MTU discovery works, instead of being lost in the overlay.
func gatewayMTU(n Network) map[string]string {
	return map[string]string{"gateway_mtu": strconv.Itoa(n.MTU)}
}

// RouterContributions turns members gathered by (router name, column) into
// contributions to those Logical_Routers, sorted by router and column, each
// with its members sorted: what a feature that adds rows to the networks'
// routers returns.
func RouterContributions(members map[[2]string][]string) []ovsdbsync.Contribution {
	keys := make([][2]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	var out []ovsdbsync.Contribution
	for _, k := range keys {
		m := append([]string(nil), members[k]...)
		sort.Strings(m)
		out = append(out, ovsdbsync.Contribution{Target: &nbdb.LogicalRouter{Name: k[0]}, Column: k[1], Members: m})
	}
	return out
}
