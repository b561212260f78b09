package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// Port tunnel keys on a Layer2 network's distributed switch and transit
// router. The switch's pod ports have cluster-wide keys (they exist in every
// zone: local in their node's, remote elsewhere); the infrastructure ports
// below exist in every zone under the same name and keep these keys, which
// pods never get. Transit-router ports toward gateway routers take node IDs
// (≥ 2).
const (
	// RouterPortKey is the key of stotr- on the switch and trtos- on the
	// transit router.
	RouterPortKey = 1
	// ManagementPortKey is the key of the local management port on the switch.
	ManagementPortKey = 2
	// FirstPodPortKey is the smallest key of a pod port; keys up to
	// MaxPodPortKey are cluster-manager's to allocate.
	FirstPodPortKey = 16
	// MaxPodPortKey is the largest key of a pod port. The keys above it
	// are the nodes' (NodeRouterPortKey).
	MaxPodPortKey = MaxPortKey - Layer2V1Nodes
	// Layer2V1Nodes is how many node IDs (1..Layer2V1Nodes-1) have a key
	// of their own on the switch, for the old topology's gateway router
	// port and the upgrade port that stands in for it (layer2_v1.go).
	Layer2V1Nodes = 4096
	// MaxPortKey is the largest logical port tunnel key.
	MaxPortKey = 1<<15 - 1
)

// NodeRouterPortKey is the key, on a Layer2 network's switch, of node id's
// gateway router port in the old topology (stor-GR_<network>_<node>,
// local in its zone and remote in the others) and of the upgrade port
// that stands in for it once the node has moved (stotr-<switch>-upgrade).
func NodeRouterPortKey(id int) (int, error) {
	if id < 1 || id >= Layer2V1Nodes {
		return 0, fmt.Errorf("node ID %d has no Layer2 gateway router port key (1..%d)", id, Layer2V1Nodes-1)
	}
	return MaxPodPortKey + id, nil
}

// Router policy priority rerouting pod traffic to the local node's address
// into the node's management port (seed 000's 1004).
const NodeReroutePriority = 1004

// Port is a workload's attachment to a network: a pod's interface.
type Port struct {
	// Name is the logical switch port's name.
	Name string
	// Node hosts the workload.
	Node string
	MAC  string
	// IPs are the port's addresses with the network's prefix length; none
	// when IPAM is disabled (port security then checks the MAC only).
	IPs []netip.Prefix
	// TunnelKey is the port's key on a Layer2 network's distributed switch,
	// the same in every zone (0 on other topologies).
	TunnelKey int
	// Isolated marks a default-network port of a pod whose namespace has a
	// primary user-defined network: its IP traffic is dropped except with the
	// node (probes).
	Isolated bool
	// ExternalIDs identify the workload (pod, NAD).
	ExternalIDs map[string]string
	// MigrationTarget is the node a live-migrating VM moves to (Node is
	// where it runs now), on a Layer2 network only. The port is then bound
	// to both chassis (options:requested-chassis "<node>,<target>") with
	// activation-strategy=rarp: the target's binding stays blocked until the
	// VM sends a RARP there, and OVN then marks it activated in the target
	// zone's Southbound (package kubevirt). Zones other than the two keep a
	// remote port on Node's chassis.
	MigrationTarget string
}

// layer2 renders a Layer2 network (seed 000): the distributed switch, and for
// primary networks the transit router holding the gateway address (the same
// IP and MAC in every zone), peered with the local gateway router over the
// node's /31 (/127), with a remote port toward every other node's gateway
// router. A zone whose node is at the old topology renders that instead
// (layer2V1), and toward nodes still at it the upgrade ports
// (upgradePorts).
func layer2(b *builder, local nodeinfo.Info, remotes []nodeinfo.Info, cfg config.Cluster) error {
	n := b.n
	sw := n.Layer2Switch()
	ls := &nbdb.LogicalSwitch{UUID: lsID(sw), Name: sw, ExternalIDs: b.ext(""),
		OtherConfig: map[string]string{"requested-tnl-key": strconv.Itoa(allocator.TransitSwitchKey(n.ID)), "interconn-ts": sw}}
	b.add(ls)
	b.podSwitch = ls
	if !n.HasGateway() {
		return nil
	}
	// A secondary network's gateway carries its egress only: no
	// management port (the host reaches it by no interface), no rerouting
	// to it, and only the 2.0 topology (there was never a 1.0 one).
	secondary := !n.IsPrimary()
	if secondary {
		local.Layer2V1 = false
		remotes = slices.Clone(remotes)
		for i := range remotes {
			remotes[i].Layer2V1 = false
		}
	}
	if len(n.TunnelKeys) == 0 {
		return fmt.Errorf("network %s: no transit-router tunnel key", n.Name)
	}
	var gws, mgmt []netip.Prefix
	for _, s := range n.Subnets {
		gw, m, err := gatewayAndManagement(s.CIDR)
		if err != nil {
			return fmt.Errorf("network %s: subnet %s: %w", n.Name, s.CIDR, err)
		}
		gws, mgmt = append(gws, gw), append(mgmt, m)
	}
	if local.Layer2V1 {
		return layer2V1(b, ls, local, remotes, cfg, gws, mgmt)
	}
	tr := n.TransitRouter()
	trtos, stotr := "trtos-"+sw, "stotr-"+sw
	ls.Ports = append(ls.Ports, b.routerTypePort(stotr, trtos, "", keyOption(RouterPortKey)))
	if !secondary {
		ls.Ports = append(ls.Ports, b.managementPortWith(n.ManagementPort(local.Name), local.Name, mgmt, keyOption(ManagementPortKey)))
	}

	// The gateway port: the subnet's first address, the same in every zone; a
	// distributed gateway port on the local chassis, for the management-port
	// SNAT below.
	gc := &nbdb.GatewayChassis{UUID: "gc:" + trtos + "-" + local.ChassisID, Name: trtos + "-" + local.ChassisID,
		ChassisName: local.ChassisID, Priority: 1, ExternalIDs: b.ext(local.Name)}
	b.add(gc)
	trtosNetworks := gws
	trPorts := []string{b.routerPort(trtos, "", trtosNetworks, keyOption(RouterPortKey))}
	trtosRow := b.rows[len(b.rows)-1].(*nbdb.LogicalRouterPort)
	trtosRow.GatewayChassis = []string{gc.UUID}

	// Peer links to every node's gateway router; routes to each node's join
	// address through its gateway router's side of the link. A node still
	// at the old topology has no transit router: the upgrade ports reach
	// its gateway router over the switch instead.
	var trRoutes []string
	var localGW []netip.Prefix // the local gateway router's side of the link
	var localRouterSide []netip.Prefix
	var old []nodeinfo.Info
	for i, node := range append([]nodeinfo.Info{local}, remotes...) {
		if node.Layer2V1 {
			old = append(old, node)
			continue
		}
		port, routes, routerSide, gwSide, err := b.transitRouterPeer(RemoteOf(n, node), i == 0)
		if err != nil {
			return err
		}
		if i == 0 {
			localGW, localRouterSide = gwSide, routerSide
		}
		trPorts = append(trPorts, port)
		trRoutes = append(trRoutes, routes...)
	}
	if len(old) > 0 {
		port, lsps, routes, masq, err := b.upgradePorts(local, old, cfg)
		if err != nil {
			return err
		}
		if port != "" {
			ls.Ports = append(ls.Ports, lsps...)
			trPorts, trRoutes = append(trPorts, port), append(trRoutes, routes...)
			trtosRow.Networks = PrefixStrings(append(append([]netip.Prefix{}, gws...), masq...))
		}
	}
	// The network's egress leaves through the local gateway router.
	for _, s := range n.Subnets {
		if hop, ok := FamilyOf(localGW, s.CIDR.Addr()); ok {
			trRoutes = append(trRoutes, b.route(tr, nbdb.LogicalRouterStaticRoutePolicySrcIP, s.CIDR, hop.Addr().String(), "", local.Name))
		}
	}
	// Pods reach their node's address through the node's management port.
	var trPolicies, trNATs []string
	if !secondary {
		trPolicies = b.nodeReroutes(tr, trtos, local, primaryAddrs(local), mgmt)
	}
	trPolicies = append(trPolicies, b.isolation(tr, cfg)...)
	// Traffic toward the management port is SNATed on the transit router to
	// the network's management masquerade address (seed 000, "NAT").
	if !secondary {
		trNATs = b.managementSNAT(tr, lrpID(trtos), local, mgmt, cfg)
	}
	b.add(&nbdb.LogicalRouter{UUID: lrID(tr), Name: tr, Ports: trPorts, StaticRoutes: trRoutes, Policies: trPolicies, Nat: trNATs,
		Options: map[string]string{"requested-tnl-key": strconv.Itoa(n.TunnelKeys[0])}, ExternalIDs: b.ext("")})

	// The local gateway router: its side of the link also holds its join
	// address; back to the network through the transit router.
	gr := n.GatewayRouter(local.Name)
	grJoin := b.joinIPs(local.ID)
	rtotr, peer := "rtotr-"+gr, "trtor-"+gr
	grPorts := []string{lrpID(rtotr)}
	b.add(&nbdb.LogicalRouterPort{UUID: lrpID(rtotr), Name: rtotr, MAC: PortMAC(grJoin),
		Networks: PrefixStrings(append(append([]netip.Prefix{}, grJoin...), localGW...)), Peer: &peer, ExternalIDs: b.ext(local.Name),
		Options: gatewayMTU(n)})
	var grRoutes []string
	for _, s := range n.Subnets {
		if hop, ok := FamilyOf(localRouterSide, s.CIDR.Addr()); ok {
			grRoutes = append(grRoutes, b.route(gr, "", s.CIDR, hop.Addr().String(), rtotr, local.Name))
		}
	}
	b.layer2GatewayRouter(local, gr, grJoin, grPorts, grRoutes, nil, nil, cfg)
	return nil
}

// keyOption is the options of a port with tunnel key k.
func keyOption(k int) map[string]string {
	return map[string]string{"requested-tnl-key": strconv.Itoa(k)}
}

// joinIPs are the join addresses of node id's gateway router.
func (b *builder) joinIPs(id int) []netip.Prefix { return b.n.JoinIPs(id) }

// JoinIPs are the join addresses of node id's gateway router on network n.
func (n Network) JoinIPs(id int) []netip.Prefix {
	var out []netip.Prefix
	for _, j := range n.Join {
		if ip, err := allocator.GatewayJoinIP(j, id); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

// Layer2V1GatewayMAC is the MAC a Layer2 primary network's pods on node
// id have their gateway at in the old topology (1.0): that of the node's
// gateway router port rtos-GR_<network>_<node>, derived from its join
// address. In 2.0 it is the transit router's, PortMAC of the gateways,
// the same on every node.
func (n Network) Layer2V1GatewayMAC(id int) string { return PortMAC(n.JoinIPs(id)) }

// layer2GatewayRouter adds a Layer2 network's local gateway router: its
// ports toward the network (ports) and the outside, its routes, policies
// and NATs (the external ones added here).
func (b *builder) layer2GatewayRouter(local nodeinfo.Info, gr string, grJoin []netip.Prefix, ports, routes, policies, nats []string, cfg config.Cluster) {
	extPorts, extRoutes, extNATs := b.external(local, gr, cfg)
	opts := b.gatewayRouterOptions(local)
	// The port toward the network holds two networks, and router_ip would
	// take the address of the one the next hop is in: in the transit
	// topology the /31's, which the transit router drops as a source (its
	// broadcast). Load-balanced traffic from outside (NodePort,
	// externalTrafficPolicy Cluster) leaves from the join address instead,
	// as ovn-kubernetes does.
	var joinIPs []string
	for _, j := range grJoin {
		joinIPs = append(joinIPs, j.Addr().String())
	}
	if len(joinIPs) > 0 {
		opts["lb_force_snat_ip"] = strings.Join(joinIPs, " ")
	}
	b.gatewayRouter = &nbdb.LogicalRouter{UUID: lrID(gr), Name: gr, Ports: append(ports, extPorts...),
		StaticRoutes: append(routes, extRoutes...), Policies: policies, Nat: append(nats, extNATs...),
		Options:     opts,
		ExternalIDs: b.ext(local.Name)}
	b.add(b.gatewayRouter)
}

// nodeReroutes adds the policies of router sending what the network's pods
// (entering by inport) send to the local node's addresses into the node's
// management port (seed 000's 1004), and returns their IDs.
func (b *builder) nodeReroutes(router, inport string, local nodeinfo.Info, addrs []netip.Addr, mgmt []netip.Prefix) []string {
	var out []string
	for _, ip := range addrs {
		m, ok := FamilyOf(mgmt, ip)
		if !ok {
			continue
		}
		match := fmt.Sprintf("inport == %q && %s.dst == %s", inport, IPMatch(netip.PrefixFrom(ip, ip.BitLen())), ip)
		id := policyID(router, NodeReroutePriority, match)
		b.add(&nbdb.LogicalRouterPolicy{UUID: id, Priority: NodeReroutePriority, Match: match,
			Action: nbdb.LogicalRouterPolicyActionReroute, Nexthops: []string{m.Addr().String()}, ExternalIDs: b.ext(local.Name)})
		out = append(out, id)
	}
	return out
}

// managementSNAT adds router's SNAT of the network's traffic toward the
// management port (matched by its MAC) to the network's management
// masquerade address, through gatewayPort when it is not "" (a distributed
// router), and returns the NATs' IDs.
func (b *builder) managementSNAT(router, gatewayPort string, local nodeinfo.Info, mgmt []netip.Prefix, cfg config.Cluster) []string {
	n := b.n
	var out []string
	for _, s := range n.Subnets {
		m, ok := FamilyOf(cfg.MasqueradeSubnets, s.CIDR.Addr())
		if !ok {
			continue
		}
		_, mp, err := allocator.MasqueradeIPs(m, n.ID, config.MasqueradeReserved)
		if err != nil {
			continue
		}
		id := natID(router, nbdb.NATTypeSNAT, s.CIDR.String())
		nat := &nbdb.NAT{UUID: id, Type: nbdb.NATTypeSNAT, LogicalIP: s.CIDR.String(), ExternalIP: mp.String(),
			Match: "eth.dst == " + PortMAC(mgmt), ExternalIDs: b.ext(local.Name)}
		if gatewayPort != "" {
			gp := gatewayPort
			nat.GatewayPort = &gp
		} else {
			// A gateway router has the egress SNAT of the same subnet.
			nat.UUID = natID(router, nbdb.NATTypeSNAT, s.CIDR.String()+"/management")
		}
		b.add(nat)
		out = append(out, nat.UUID)
	}
	return out
}

// localnet renders a Localnet network: a switch per zone wired to the
// physical network by a localnet port (tagged when the network has a VLAN).
// Workloads on other nodes are reached through the physical network.
func localnet(b *builder, local nodeinfo.Info) {
	n := b.n
	sw := n.LocalnetSwitch()
	ln := n.prefix() + "ovn_localnet_port"
	lsp := &nbdb.LogicalSwitchPort{UUID: lspID(ln), Name: ln, Type: "localnet", Addresses: []string{"unknown"},
		Options: map[string]string{"network_name": n.PhysicalNetworkName}, ExternalIDs: b.ext("")}
	if n.VLANID > 0 {
		tag := n.VLANID
		lsp.TagRequest = &tag
	}
	b.add(lsp)
	ls := &nbdb.LogicalSwitch{UUID: lsID(sw), Name: sw, Ports: []string{lsp.UUID}, ExternalIDs: b.ext("")}
	b.add(ls)
	b.podSwitch = ls
}

// managementPortWith is managementPort with options.
func (b *builder) managementPortWith(name, node string, addrs []netip.Prefix, options map[string]string) string {
	id := b.managementPort(name, node, addrs)
	b.rows[len(b.rows)-1].(*nbdb.LogicalSwitchPort).Options = options
	return id
}

// IsolatedPortGroup holds the default-network ports of pods whose namespace
// has a primary user-defined network.
const IsolatedPortGroup = "udn_isolated_pods"

// isolatePods renders the port group of the local isolated ports and its
// ACLs: their IP traffic is dropped, except with the node's management port
// (kubelet probes and their replies).
func (b *builder) isolatePods(local nodeinfo.Info) error {
	var acls []string
	acl := func(direction string, priority int, match, action string) {
		id := fmt.Sprintf("acl:%s:%s:%d:%s", IsolatedPortGroup, direction, priority, match)
		b.add(&nbdb.ACL{UUID: id, Direction: direction, Priority: priority, Match: match, Action: action, ExternalIDs: b.ext(local.Name)})
		acls = append(acls, id)
	}
	for _, s := range local.Subnets[b.n.Name] {
		_, m, err := nodeSliceAddresses(s)
		if err != nil {
			return fmt.Errorf("network %s: node %s: %w", b.n.Name, local.Name, err)
		}
		mgmt := m.Addr()
		ip := IPMatch(s)
		acl(nbdb.ACLDirectionFromLport, IsolationAllowPriority, fmt.Sprintf("inport == @%s && %s.dst == %s", IsolatedPortGroup, ip, mgmt), nbdb.ACLActionAllowRelated)
		acl(nbdb.ACLDirectionToLport, IsolationAllowPriority, fmt.Sprintf("outport == @%s && %s.src == %s", IsolatedPortGroup, ip, mgmt), nbdb.ACLActionAllowRelated)
	}
	acl(nbdb.ACLDirectionFromLport, IsolationDropPriority, fmt.Sprintf("inport == @%s && ip", IsolatedPortGroup), nbdb.ACLActionDrop)
	acl(nbdb.ACLDirectionToLport, IsolationDropPriority, fmt.Sprintf("outport == @%s && ip", IsolatedPortGroup), nbdb.ACLActionDrop)
	b.add(&nbdb.PortGroup{UUID: "pg:" + IsolatedPortGroup, Name: IsolatedPortGroup, ACLs: acls, ExternalIDs: b.ext(local.Name)})
	return nil
}

// ACL priorities of the isolation of pods with a primary user-defined network
// on the default network.
const (
	IsolationAllowPriority = 1001
	IsolationDropPriority  = 1000
)

// transitRouterPeer adds a Layer2 primary network's transit router port
// toward node r's gateway router (peered with it when r is the local node,
// else bound to r's chassis) and the route to r's join address through it,
// and returns the port's ID, the routes' IDs and both sides' addresses of
// the link. It reads nothing of the node but r.
func (b *builder) transitRouterPeer(r Remote, local bool) (port string, routes []string, routerSide, gwSide []netip.Prefix, err error) {
	n := b.n
	for _, t := range n.Transit {
		rs, gs, err := allocator.TransitPeers(t, r.ID)
		if err != nil {
			return "", nil, nil, nil, fmt.Errorf("network %s: node %s: %w", n.Name, r.Name, err)
		}
		routerSide, gwSide = append(routerSide, rs), append(gwSide, gs)
	}
	gr := n.GatewayRouter(r.Name)
	name := "trtor-" + gr
	lrp := &nbdb.LogicalRouterPort{UUID: lrpID(name), Name: name, MAC: PortMAC(routerSide), Networks: PrefixStrings(routerSide),
		Options: map[string]string{"requested-tnl-key": strconv.Itoa(r.ID)}, ExternalIDs: b.ext(r.Name)}
	if local {
		peer := "rtotr-" + gr
		lrp.Peer = &peer
	} else {
		lrp.Options["requested-chassis"] = r.ChassisID
	}
	b.add(lrp)
	for _, j := range n.Join {
		joinIP, err := allocator.GatewayJoinIP(j, r.ID)
		if hop, ok := FamilyOf(gwSide, j.Addr()); ok && err == nil {
			routes = append(routes, b.route(n.TransitRouter(), "", hostPrefix(joinIP.Addr()), hop.Addr().String(), "", r.Name))
		}
	}
	return lrp.UUID, routes, routerSide, gwSide, nil
}

// primaryAddrs are the node's primary addresses.
func primaryAddrs(local nodeinfo.Info) []netip.Addr {
	var out []netip.Addr
	for _, p := range local.PrimaryIPs {
		out = append(out, p.Addr())
	}
	return out
}

// hostAddrs are every address the node's host holds on its uplinks (the
// gateway routers' external addresses) and its primary ones, once each:
// those a pod of the default network reaches the host at.
func hostAddrs(local nodeinfo.Info) []netip.Addr {
	out := primaryAddrs(local)
	if local.Gateway != nil {
		for _, a := range local.Gateway.Addresses() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}
