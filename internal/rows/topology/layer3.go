package topology

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// Router policy priorities.
const (
	// IsolationPriority drops traffic from a user-defined network toward the
	// default network's subnets (pods reach the API and DNS through their
	// default-network interface, never through the UDN).
	IsolationPriority = 1200
)

// ErrNotReady is wrapped by Render when the zone's own node cannot carry the
// network yet (annotations or subnets missing); nothing is rendered.
var ErrNotReady = errors.New("the zone's node is not ready for the network")

// Input is everything a zone's rendering of one network depends on.
type Input struct {
	Network Network
	// Nodes are all nodes (parsed annotations).
	Nodes []nodeinfo.Info
	// Zone is the zone rendered (its node is the local node).
	Zone    string
	Cluster config.Cluster
	// Gateway is the gateway routers' default-route policy (ECMP, BFD);
	// nil is config.DefaultGateway().
	Gateway *config.Gateway
	// SharedBFD are the UUIDs of the zone node's BFD rows by next hop (the
	// default network's, see uplinks.go): other networks' default routes
	// refer to them.
	SharedBFD map[netip.Addr]string
	// Ports are the network's workload ports on every node (pods).
	Ports []Port
	// Active are the nodes the network is rendered for (internal/activity);
	// the zero value is every node. A zone whose node is not in it renders
	// nothing of the network, and no zone renders anything for a node not
	// in it.
	Active activity.Nodes
}

// Render returns the rows the zone needs for the input's network. Remote nodes
// that are not ready are left out (Result.Skipped), and so are those where the
// network is not active; a local node that is not ready is an error wrapping
// ErrNotReady, and one where the network is not active renders nothing.
func Render(in Input) (Result, error) {
	n := in.Network
	local, remotes, skipped, err := split(n, in.Nodes, in.Zone, in.Active)
	if errors.Is(err, errInactive) {
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	b := &builder{n: n, gw: config.GatewayOrDefault(in.Gateway), sharedBFD: in.SharedBFD}
	switch n.Topology {
	case netconf.TopologyLayer3:
		if err := layer3(b, local, remotes, in.Cluster); err != nil {
			return Result{}, err
		}
	case netconf.TopologyLayer2:
		if err := layer2(b, local, remotes, in.Cluster); err != nil {
			return Result{}, err
		}
	case netconf.TopologyLocalnet:
		localnet(b, local)
	default:
		return Result{}, fmt.Errorf("network %s: unknown topology %q", n.Name, n.Topology)
	}
	b.loadBalancerGroup()
	if n.IsDefault() {
		if err := b.isolatePods(local); err != nil {
			return Result{}, err
		}
	}
	SortRows(b.rows)
	rows := b.rows
	if len(in.Ports) > 0 {
		ports := renderPorts(n, local, remotes, in.Ports)
		merged, err := Merge(rows, ports)
		if err != nil {
			return Result{}, err
		}
		rows, skipped = merged, append(skipped, ports.Skipped...)
	}
	return Result{Rows: rows, Skipped: append(skipped, b.skipped...), WaitingForBFD: b.waitingForBFD}, nil
}

// errInactive: the network is not active on the zone's node (Input.Active).
var errInactive = errors.New("the network is not active on the zone's node")

// split finds the zone's node and the remote nodes ready for n among those
// where it is active; errInactive when the zone's node is not one of them.
func split(n Network, nodes []nodeinfo.Info, zone string, active activity.Nodes) (local nodeinfo.Info, remotes []nodeinfo.Info, skipped []Problem, err error) {
	found, inactive := false, false
	for _, node := range nodes {
		if node.Zone == zone && !active.Has(node.Name) {
			if found || inactive {
				return local, nil, nil, fmt.Errorf("zone %s has two nodes (%s, %s); one node per zone is supported", zone, local.Name, node.Name)
			}
			local, inactive = node, true
			continue
		}
		if !active.Has(node.Name) {
			continue
		}
		problem := readiness(n, node)
		if node.Zone == zone {
			if found || inactive {
				return local, nil, nil, fmt.Errorf("zone %s has two nodes (%s, %s); one node per zone is supported", zone, local.Name, node.Name)
			}
			if problem == "" && n.HasGateway() && node.Gateway == nil {
				problem = "no gateway configuration (" + nodeinfo.GatewayAnnotation + ")"
			}
			if problem != "" {
				return local, nil, nil, fmt.Errorf("node %s: %s: %w", node.Name, problem, ErrNotReady)
			}
			local, found = node, true
			continue
		}
		if problem != "" {
			skipped = append(skipped, Problem{Node: node.Name, Reason: problem})
			continue
		}
		remotes = append(remotes, node)
	}
	if inactive {
		return local, nil, nil, errInactive
	}
	if !found {
		return local, nil, nil, fmt.Errorf("no node of zone %s: %w", zone, ErrNotReady)
	}
	return local, remotes, skipped, nil
}

// readiness says what a node lacks to take part in network n, or "".
func readiness(n Network, node nodeinfo.Info) string {
	switch {
	case node.ID < allocator.FirstNodeID:
		return "no node ID yet"
	case node.ChassisID == "":
		return "no chassis ID"
	case n.Topology == netconf.TopologyLayer3 && len(node.Subnets[n.Name]) == 0:
		return "no subnet of the network yet"
	}
	return ""
}

// FamilyOf returns the prefix of list in a's IP family.
func FamilyOf(list []netip.Prefix, a netip.Addr) (netip.Prefix, bool) {
	for _, p := range list {
		if p.Addr().Is4() == a.Is4() {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// layer3 renders a Layer3 network: the cluster router, the local node's
// switch, the transit switch with a remote port per remote node and routes to
// their subnets, and for primary networks the join switch, the gateway router
// and its external switch. It fails when a node subnet of the local node is
// too small for its gateway, management port and pods.
func layer3(b *builder, local nodeinfo.Info, remotes []nodeinfo.Info, cfg config.Cluster) error {
	n := b.n
	cr := n.ClusterRouter()
	var crPorts, crRoutes, crPolicies []string

	// The local node's switch: router port at the first address of each node
	// subnet, management port at the second.
	nodeSubnets := local.Subnets[n.Name]
	sw := n.NodeSwitch(local.Name)
	var gws, mgmt []netip.Prefix
	for _, s := range nodeSubnets {
		gw, m, err := nodeSliceAddresses(s)
		if err != nil {
			return fmt.Errorf("network %s: node %s: %w", n.Name, local.Name, err)
		}
		gws, mgmt = append(gws, gw), append(mgmt, m)
	}
	crPorts = append(crPorts, b.routerPort(routerToSwitch(sw), local.Name, gws, nil))
	swPorts := []string{b.routerTypePort(switchToRouter(sw), routerToSwitch(sw), local.Name, nil)}
	if n.IsPrimary() {
		swPorts = append(swPorts, b.managementPort(n.ManagementPort(local.Name), local.Name, mgmt))
	}
	nodeSwitch := &nbdb.LogicalSwitch{UUID: lsID(sw), Name: sw, Ports: swPorts, ExternalIDs: b.ext(local.Name)}
	b.add(nodeSwitch)
	b.podSwitch = nodeSwitch

	// The transit switch: this zone's router port, and a remote port for every
	// other node, whose subnets are routed to it.
	ts := n.TransitSwitch()
	rtots := routerToTransitSwitch(n, local.Name)
	crPorts = append(crPorts, b.routerPort(rtots, local.Name, transitIPs(n, local.ID), nil))
	tsPorts := []string{b.routerTypePort(transitSwitchToRouter(n, local.Name), rtots, local.Name,
		map[string]string{"requested-tnl-key": strconv.Itoa(local.ID)})}
	for _, r := range remotes {
		port, routes := b.remoteNode(RemoteOf(n, r))
		tsPorts = append(tsPorts, port)
		crRoutes = append(crRoutes, routes...)
	}
	b.add(&nbdb.LogicalSwitch{UUID: lsID(ts), Name: ts, Ports: tsPorts, ExternalIDs: b.ext(""),
		OtherConfig: map[string]string{"requested-tnl-key": strconv.Itoa(allocator.TransitSwitchKey(n.ID)), "interconn-ts": ts}})

	if n.HasGateway() {
		crJoinPort, crJoinRoutes := b.gateway(local, cfg)
		crPorts = append(crPorts, crJoinPort)
		crRoutes = append(crRoutes, crJoinRoutes...)
		crPolicies = append(crPolicies, b.isolation(cr, cfg)...)
	}
	if n.IsDefault() {
		// A pod reaching its own node's address meets the host through the
		// management port (ovn-k8s-mp0), not the gateway router, which
		// holds that address too and answers only pings. The node's
		// NodePorts and external IPs are served on the node switch for
		// them (services.Render). A user-defined network's management port
		// has no host side yet (issue 52): its pods still meet their
		// gateway router there.
		crPolicies = append(crPolicies, b.nodeReroutes(cr, routerToSwitch(sw), local, hostAddrs(local), mgmt)...)
	}
	b.add(&nbdb.LogicalRouter{UUID: lrID(cr), Name: cr, Ports: crPorts, StaticRoutes: crRoutes, Policies: crPolicies,
		ExternalIDs: b.ext("")})
	return nil
}

// nodeSliceAddresses returns the gateway and management-port addresses of a
// node's slice of a Layer3 network, or an error when the slice cannot also
// hold a pod (allocator.CheckNodeSlice).
func nodeSliceAddresses(s netip.Prefix) (gw, mgmt netip.Prefix, err error) {
	if err := allocator.CheckNodeSlice(s); err != nil {
		return netip.Prefix{}, netip.Prefix{}, err
	}
	return gatewayAndManagement(s)
}

// managementPort adds the node's port on the network, at the given addresses.
func (b *builder) managementPort(name, node string, addrs []netip.Prefix) string {
	var ips []string
	for _, a := range addrs {
		ips = append(ips, a.Addr().String())
	}
	b.add(&nbdb.LogicalSwitchPort{UUID: lspID(name), Name: name, Addresses: []string{joinAddrs(PortMAC(addrs), ips...)},
		ExternalIDs: b.ext(node)})
	return lspID(name)
}

// gateway renders a Layer3 primary network's join switch, gateway router and
// external switch on the local node. It returns the cluster router's join port
// and the routes the cluster router needs to send local egress to the gateway
// router.
func (b *builder) gateway(local nodeinfo.Info, cfg config.Cluster) (string, []string) {
	n := b.n
	cr, gr, join := n.ClusterRouter(), n.GatewayRouter(local.Name), n.JoinSwitch()
	var crJoin, grJoin []netip.Prefix
	for _, j := range n.Join {
		crJoin = append(crJoin, allocator.RouterJoinIP(j))
		if ip, err := allocator.GatewayJoinIP(j, local.ID); err == nil {
			grJoin = append(grJoin, ip)
		}
	}
	crPort := b.routerPort(routerToJoin(cr), "", crJoin, nil)
	grPorts := []string{b.routerPort(routerToJoin(gr), local.Name, grJoin, gatewayMTU(n))}
	b.add(&nbdb.LogicalSwitch{UUID: lsID(join), Name: join, ExternalIDs: b.ext(""), Ports: []string{
		b.routerTypePort(joinToRouter(cr), routerToJoin(cr), "", nil),
		b.routerTypePort(joinToRouter(gr), routerToJoin(gr), local.Name, nil),
	}})

	// Egress of the local node's pods goes to the local gateway router.
	var crRoutes []string
	for _, s := range local.Subnets[n.Name] {
		if hop, ok := FamilyOf(grJoin, s.Addr()); ok {
			crRoutes = append(crRoutes, b.route(cr, nbdb.LogicalRouterStaticRoutePolicySrcIP, s, hop.Addr().String(), "", local.Name))
		}
	}

	// The gateway router: back to the network's subnets through the cluster
	// router, out through the node's next hops, egress SNATed.
	var grRoutes, nats []string
	for _, s := range n.Subnets {
		if hop, ok := FamilyOf(crJoin, s.CIDR.Addr()); ok {
			grRoutes = append(grRoutes, b.route(gr, "", s.CIDR, hop.Addr().String(), "", local.Name))
		}
	}
	portsToExt, routes, natIDs := b.external(local, gr, cfg)
	grPorts = append(grPorts, portsToExt...)
	grRoutes = append(grRoutes, routes...)
	nats = append(nats, natIDs...)
	b.gatewayRouter = &nbdb.LogicalRouter{UUID: lrID(gr), Name: gr, Ports: grPorts, StaticRoutes: grRoutes, Nat: nats,
		Options:     b.gatewayRouterOptions(local),
		ExternalIDs: b.ext(local.Name)}
	b.add(b.gatewayRouter)
	return crPort, crRoutes
}

// external renders a gateway router's external side: per uplink of the node
// an external switch with its localnet port and the router's external port
// at the node's address on that uplink; the default routes through every
// uplink's next hops (uplinks.go); the route back to the host masquerade
// address (through the first uplink, the host's own bridge); and the SNAT
// of the network's subnets (to the network's masquerade address, or for the
// default network to the node's first-uplink address: each further bridge
// then SNATs every network's egress to the node's address on it).
func (b *builder) external(local nodeinfo.Info, gr string, cfg config.Cluster) (ports, routes, nats []string) {
	n := b.n
	g := local.Gateway
	var exits []exit
	var outports []string
	for i, u := range g.Uplinks() {
		suffix := uplinkSuffix(i, u.PhysicalNetwork)
		rtoe, ext := n.UplinkExternalPort(local.Name, i, u.PhysicalNetwork), n.ExternalSwitch(local.Name)+suffix
		ports = append(ports, lrpID(rtoe))
		outports = append(outports, fmt.Sprintf("%q", rtoe))
		b.add(&nbdb.LogicalRouterPort{UUID: lrpID(rtoe), Name: rtoe, MAC: u.MAC, Networks: PrefixStrings(u.IPs), ExternalIDs: b.ext(local.Name)})
		ln := n.UplinkLocalnetPort(local.Name, i, u.PhysicalNetwork)
		b.add(&nbdb.LogicalSwitchPort{UUID: lspID(ln), Name: ln, Type: "localnet", Addresses: []string{"unknown"},
			Options: map[string]string{"network_name": u.PhysicalNetwork}, ExternalIDs: b.ext(local.Name)})
		b.add(&nbdb.LogicalSwitch{UUID: lsID(ext), Name: ext, ExternalIDs: b.ext(local.Name), Ports: []string{
			lspID(ln), b.routerTypePort(externalToRouter(gr)+suffix, rtoe, local.Name, nil),
		}})
		for _, hop := range u.NextHops {
			exits = append(exits, exit{hop: hop, port: rtoe})
		}
	}
	routes = append(routes, b.defaultRoutes(local, gr, exits)...)
	rtoe := routerToExternal(gr)
	// Replies to the host's connections to services (br-ex SNATs them to
	// the host masquerade address) go back out the first uplink's external
	// port, to a next hop br-ex answers ARP for.
	for _, host := range cfg.HostMasqueradeIPs() {
		hop, ok := FamilyOf(prefixesOf(cfg.MasqueradeNextHops()), host)
		if !ok || !hasAddrFamily(g.IPs, host) {
			continue
		}
		routes = append(routes, b.route(gr, "", netip.PrefixFrom(host, host.BitLen()), hop.Addr().String(), rtoe, local.Name))
	}
	for _, s := range n.Subnets {
		var external netip.Addr
		if n.IsDefault() {
			p, ok := FamilyOf(g.IPs, s.CIDR.Addr())
			if !ok {
				continue
			}
			external = p.Addr()
		} else {
			m, ok := FamilyOf(cfg.MasqueradeSubnets, s.CIDR.Addr())
			if !ok {
				continue
			}
			ip, _, err := allocator.MasqueradeIPs(m, n.ID, config.MasqueradeReserved)
			if err != nil {
				continue
			}
			external = ip
		}
		id := natID(gr, nbdb.NATTypeSNAT, s.CIDR.String())
		nat := &nbdb.NAT{UUID: id, Type: nbdb.NATTypeSNAT, LogicalIP: s.CIDR.String(), ExternalIP: external.String(),
			ExternalIDs: b.ext(local.Name)}
		if !n.IsDefault() {
			// Only what leaves for the outside: a user-defined network's
			// gateway router also routes between the primary networks of a
			// namespace (internal/rows/primarylinks), unNATed.
			nat.Match = "outport == {" + strings.Join(outports, ", ") + "}"
		}
		b.add(nat)
		nats = append(nats, id)
	}
	return ports, routes, nats
}

// gatewayRouterOptions are the options of a network's gateway router on the
// local node: bound to the node's chassis; load-balanced traffic SNATed to
// the address of the port it leaves by (so replies of a node port or of the
// host's connection to a service served on another node come back through
// this router; load balancers with skip_snat, externalTrafficPolicy Local,
// keep the client's address); a user-defined network SNATs in its own
// conntrack zone (gateway.NetworkZone), distinct on every node, since br-ex
// then SNATs every network to the same node address.
func (b *builder) gatewayRouterOptions(local nodeinfo.Info) map[string]string {
	o := map[string]string{
		"chassis":                       local.ChassisID,
		"always_learn_from_arp_request": "false",
		"dynamic_neigh_routers":         "true",
		"lb_force_snat_ip":              "router_ip",
	}
	if !b.n.IsDefault() {
		o["snat-ct-zone"] = strconv.Itoa(GatewaySNATZone(b.n.ID))
	}
	return o
}

// GatewaySNATZoneBase + a network ID is the conntrack zone of a user-defined
// network's gateway router SNAT: 61441..65535, above the zones
// ovn-controller allocates (upward from 1). The node's external bridge uses
// the slot of ID 0 and the one below (internal/rows/gateway).
const GatewaySNATZoneBase = 61440

// GatewaySNATZone is the SNAT conntrack zone of network id's gateway routers.
func GatewaySNATZone(id int) int { return GatewaySNATZoneBase + id }

// hasAddrFamily reports whether some prefix has a's IP family.
func hasAddrFamily(ps []netip.Prefix, a netip.Addr) bool {
	_, ok := FamilyOf(ps, a)
	return ok
}

// prefixesOf turns addresses into host prefixes.
func prefixesOf(as []netip.Addr) []netip.Prefix {
	out := make([]netip.Prefix, len(as))
	for i, a := range as {
		out[i] = netip.PrefixFrom(a, a.BitLen())
	}
	return out
}

// hasFamily reports whether the network has a subnet of a's IP family.
func (b *builder) hasFamily(a netip.Addr) bool {
	for _, s := range b.n.Subnets {
		if s.CIDR.Addr().Is4() == a.Is4() {
			return true
		}
	}
	return false
}

// isolation renders the policies that keep a user-defined network's traffic
// away from the default network's subnets and join subnet.
func (b *builder) isolation(router string, cfg config.Cluster) []string {
	if b.n.IsDefault() {
		return nil
	}
	var ids []string
	var targets []netip.Prefix
	for _, s := range cfg.ClusterSubnets {
		targets = append(targets, s.CIDR)
	}
	targets = append(targets, cfg.DefaultJoinSubnets...)
	for _, t := range targets {
		if !b.hasFamily(t.Addr()) {
			continue
		}
		match := fmt.Sprintf("%s.dst == %s", IPMatch(t), t)
		id := policyID(router, IsolationPriority, match)
		b.add(&nbdb.LogicalRouterPolicy{UUID: id, Priority: IsolationPriority, Match: match,
			Action: nbdb.LogicalRouterPolicyActionDrop, ExternalIDs: b.ext("")})
		ids = append(ids, id)
	}
	return ids
}
