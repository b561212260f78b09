// Package gateway computes, as a pure function, the OpenFlow table of a
// node's external bridge (br-ex) in shared gateway mode: which packets go to
// the host, which to the physical interface, and which to the gateway router
// of which network (each network's gateway router reaches br-ex through its
// own patch port, with the node's address and MAC on its external port).
//
// The node agent (internal/node/gatewayflows) gathers the input (patch ports from
// OVS, networks from NADs, services from the API) and writes the result with
// one `ovs-ofctl replace-flows`, so the bridge holds exactly these flows.
// docs/gateway.md draws the paths.
package gateway

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Conntrack zones of the external bridge. OVN's ovn-controller allocates its
// zones upward from 1; the user-defined networks' gateway routers SNAT in
// topology.GatewaySNATZone(ID) (61441..65535); these take the slot of ID 0
// (the default network keeps the zone OVN gives it) and the one below.
const (
	// NodeZone is where br-ex SNATs every network's egress to the node's
	// address and marks it with the network.
	NodeZone = topology.GatewaySNATZoneBase
	// HostServiceZone is where br-ex SNATs the host's connections to
	// services to the host masquerade address.
	HostServiceZone = topology.GatewaySNATZoneBase - 1
)

// Mark is the conntrack mark br-ex gives the node-address SNAT of a
// network's egress (in NodeZone), so replies find their gateway router: the
// network ID plus one, never 0 (0 is the host's own connections).
func Mark(id int) int { return id + 1 }

// Network is one network's gateway router as br-ex sees it.
type Network struct {
	Name string
	ID   int
	// Patch is the OpenFlow port number of the network's patch port on
	// br-ex (ovn-controller creates it for the network's localnet port).
	Patch int
}

// Port is one service port reached from outside.
type Port struct {
	// Protocol is "tcp", "udp" or "sctp".
	Protocol string
	// Port is the service port (on external IPs); NodePort is the node port
	// (on the node's addresses), 0 when none.
	Port, NodePort int
}

// Service is one service as br-ex steers it.
type Service struct {
	// Name is "<namespace>/<name>" (for sorting and comments).
	Name string
	// Network is the name of the service's network (one of Input.Networks).
	Network    string
	ClusterIPs []netip.Addr
	// ExternalIPs are spec.externalIPs and status.loadBalancer.ingress IPs.
	ExternalIPs []netip.Addr
	Ports       []Port
}

// Input is everything the table depends on.
type Input struct {
	// Physical is the OpenFlow port number of the uplink (eth0).
	Physical int
	// NodeIPs are the node's addresses on the external network: the host's
	// and every gateway router's.
	NodeIPs []netip.Addr
	// MAC is the gateway routers' external MAC (the bridge's own).
	MAC string
	// HostMasqueradeIPs are what the host's connections to services are
	// SNATed to (config.Cluster.HostMasqueradeIPs), one per family.
	HostMasqueradeIPs []netip.Addr
	// MasqueradeNextHops are the routers' next hop toward
	// HostMasqueradeIPs (config.Cluster.MasqueradeNextHops): br-ex answers
	// the routers' ARP for it with NextHopMAC of the address (not MAC: a
	// router's switch would send a frame to its own MAC back to it).
	MasqueradeNextHops []netip.Addr
	// ServiceCIDRs are the cluster's service ranges: the host reaches the
	// default network's services through them.
	ServiceCIDRs []netip.Prefix
	// TunnelPort is the Geneve UDP port, passed between the uplink and the
	// host without conntrack (default 6081).
	TunnelPort int
	// NextHops are the node's external next hops: their BFD control
	// packets go to the default network's gateway router, which runs the
	// node's sessions for every network (topology/uplinks.go).
	NextHops []netip.Addr
	// EgressIPs are the egress IPs this node holds on this uplink
	// (EgressIP status): br-ex answers ARP and neighbour solicitations
	// for them, lets a gateway
	// router's traffic from them out (SNATed to themselves in the node zone,
	// so two networks' connections never share a tuple, and marked with
	// the network), and brings replies back to that router by the mark.
	EgressIPs []netip.Addr
	Networks  []Network
	Services  []Service
}

// Tables of the external bridge.
const (
	tableClassify    = 0 // by ingress port
	tableFromUplink  = 1 // after the node-zone lookup: which gateway router
	tableToRouter    = 2 // host → service, after its SNAT: to reg0's port
	tableToHost      = 3 // service → host replies, after their un-SNAT
	tableToPhysical  = 4 // OVN egress, after the node SNAT
	tableNDReply     = 5 // a neighbour advertisement being made of a solicitation
	defaultGeneve    = 6081
	cookie           = "0x0de7e4a1"
	prioTunnel       = 1000
	prioBFD          = 800
	bfdPort          = 3784 // single-hop BFD control (RFC 5881)
	prioIngress      = 700
	prioHostService  = 600
	prioHostServices = 500 // the default network's service CIDR
	prioResponder    = 450
	prioNeighbor     = 400
	prioNeighborReq  = 390
	prioEgressIP     = 110 // above prioEgress: not SNATed to the node
	prioEgress       = 100
	prioFromUplink   = 50
	prioRest         = 10
	prioRouterRest   = 5
)

// Table is the bridge's flows and what could not be steered.
type Table struct {
	// Flows are in `ovs-ofctl add-flows` syntax, sorted.
	Flows []string
	// Conflicts are service addresses and ports another service claimed
	// first, in Input.Services order.
	Conflicts []Conflict
}

// Conflict is a service's external address (or node port) and port that an
// earlier service of Input.Services already claimed: br-ex sends it to the
// earlier service's network only.
type Conflict struct {
	// Service lost Address Protocol/Port to Holder ("<namespace>/<name>").
	Service, Holder string
	Address         netip.Addr
	Protocol        string
	Port            int
}

// String says what was lost to whom.
func (c Conflict) String() string {
	return fmt.Sprintf("%s %s/%d is already taken by service %s; this service's traffic to it is sent to %s's network", c.Address, strings.ToUpper(c.Protocol), c.Port, c.Holder, c.Holder)
}

// Flows returns Build(in).Flows.
func Flows(in Input) []string { return Build(in).Flows }

// Build returns the bridge's flows, sorted (the same input gives the same
// text), and the conflicts between services. Networks without a patch port
// yet, and services of networks not in Networks, are left out. Services
// claim their addresses and ports in the order given (the node agent passes
// them oldest first, as Kubernetes lets the older object keep a contested
// resource).
func Build(in Input) Table {
	if in.TunnelPort == 0 {
		in.TunnelPort = defaultGeneve
	}
	b := &builder{in: in, f: flows{}, nets: map[string]Network{}, claims: map[string]string{}}
	for _, n := range in.Networks {
		if n.Patch > 0 {
			b.nets[n.Name] = n
			b.patches = append(b.patches, n)
		}
	}
	sort.Slice(b.patches, func(i, j int) bool { return b.patches[i].ID < b.patches[j].ID })
	b.uplink()
	b.egressIPs()
	for _, n := range b.patches {
		b.router(n)
	}
	b.bfd()
	b.hostToServices()
	for _, s := range in.Services {
		b.service(s)
	}
	b.fixed()
	return Table{Flows: b.f.sorted(), Conflicts: b.conflicts}
}

// bfd: the next hops' BFD control packets to the node's address go to the
// default network's gateway router (the host runs no session with them: two
// speakers on one address would look like one flapping session to the
// peer). The router's own packets leave as its other egress does.
func (b *builder) bfd() {
	def, ok := b.defaultNetwork()
	if !ok {
		return
	}
	for _, hop := range b.in.NextHops {
		fam := familyOf(hop)
		for _, ip := range b.in.NodeIPs {
			if ip.Is4() != hop.Is4() {
				continue
			}
			b.f.add(tableClassify, prioBFD, fmt.Sprintf("in_port=%d,%s,%s=%s,%s=%s,tp_dst=%d", b.in.Physical, fam.udp, fam.src, hop, fam.dst, ip, bfdPort),
				fmt.Sprintf("output:%d", def.Patch))
		}
	}
}

// defaultNetwork is the default network's router, when it has a patch port.
func (b *builder) defaultNetwork() (Network, bool) {
	for _, n := range b.patches {
		if n.ID == 0 {
			return n, true
		}
	}
	return Network{}, false
}

// builder accumulates one input's flows.
type builder struct {
	in      Input
	f       flows
	nets    map[string]Network // by name, with a patch port
	patches []Network          // by ID
	// claims are the service holding each steered "proto ip port".
	claims    map[string]string
	conflicts []Conflict
}

// uplink: what arrives for the node's address. Geneve goes to the host
// without conntrack (the overlay never pays for it); anything else asks the
// node zone whether it replies to a network's egress (un-SNAT, and its
// mark). The node's neighbour requests are the host's to answer (the
// routers have the same address and MAC); replies go to every router and
// the host, whoever asked.
func (b *builder) uplink() {
	phys := b.in.Physical
	all := []string{"LOCAL"}
	for _, n := range b.patches {
		all = append(all, fmt.Sprintf("output:%d", n.Patch))
	}
	for _, ip := range b.in.NodeIPs {
		fam := familyOf(ip)
		b.f.add(tableClassify, prioTunnel, fmt.Sprintf("in_port=%d,%s,%s=%s,tp_dst=%d", phys, fam.udp, fam.dst, ip, b.in.TunnelPort), "LOCAL")
		b.f.add(tableClassify, prioTunnel, fmt.Sprintf("in_port=LOCAL,%s,%s=%s,tp_dst=%d", fam.udp, fam.src, ip, b.in.TunnelPort), fmt.Sprintf("output:%d", phys))
		b.f.add(tableClassify, prioFromUplink, fmt.Sprintf("in_port=%d,%s,%s=%s", phys, fam.ip, fam.dst, ip),
			fmt.Sprintf("ct(zone=%d,nat,table=%d)", NodeZone, tableFromUplink))
		if ip.Is4() {
			b.f.add(tableClassify, prioNeighbor, fmt.Sprintf("in_port=%d,arp,arp_op=2,arp_tpa=%s", phys, ip), strings.Join(all, ","))
			b.f.add(tableClassify, prioNeighborReq, fmt.Sprintf("in_port=%d,arp,arp_tpa=%s", phys, ip), "LOCAL")
		} else {
			b.f.add(tableClassify, prioNeighbor, fmt.Sprintf("in_port=%d,icmp6,icmp_type=136,nd_target=%s", phys, ip), strings.Join(all, ","))
			b.f.add(tableClassify, prioNeighborReq, fmt.Sprintf("in_port=%d,icmp6,icmp_type=135,nd_target=%s", phys, ip), "LOCAL")
		}
		// The host's own connections are committed (unmarked) in the node
		// zone, so the networks' SNAT never picks a tuple the host uses.
		b.f.add(tableClassify, prioEgress, fmt.Sprintf("in_port=LOCAL,%s,%s=%s", fam.ip, fam.src, ip),
			fmt.Sprintf("ct(commit,zone=%d),output:%d", NodeZone, phys))
	}
}

// egressIPs: the node's egress IPs. Their ARP requests and neighbour
// solicitations are answered here
// with the routers' MAC (only on the node that holds them: a second node on
// the segment never answers); what arrives for them asks the node zone, as
// for the node's address; and what a router sends from one leaves SNATed to
// itself and marked with the router's network, so the reply finds it.
func (b *builder) egressIPs() {
	phys := b.in.Physical
	for _, ip := range b.in.EgressIPs {
		fam := familyOf(ip)
		if ip.Is4() {
			b.f.add(tableClassify, prioResponder, fmt.Sprintf("in_port=%d,arp,arp_op=1,arp_tpa=%s", phys, ip), arpReply(b.in.MAC, ip))
		} else {
			// A duplicate address detection probe (from ::) is not
			// answered: the address is this node's, and the prober's own
			// DAD would have nothing to reply to.
			b.f.add(tableClassify, prioResponder+1, fmt.Sprintf("in_port=%d,icmp6,icmp_type=135,ipv6_src=::,nd_target=%s", phys, ip), "drop")
			b.f.add(tableClassify, prioResponder, fmt.Sprintf("in_port=%d,icmp6,icmp_type=135,nd_target=%s", phys, ip), naReply(b.in.MAC, ip))
			b.f.add(tableNDReply, prioResponder, fmt.Sprintf("in_port=%d,icmp6,icmp_type=136,nd_target=%s", phys, ip), naFinish(b.in.MAC))
		}
		b.f.add(tableClassify, prioFromUplink, fmt.Sprintf("in_port=%d,%s,%s=%s", phys, fam.ip, fam.dst, ip),
			fmt.Sprintf("ct(zone=%d,nat,table=%d)", NodeZone, tableFromUplink))
		for _, n := range b.patches {
			b.f.add(tableClassify, prioEgressIP, fmt.Sprintf("in_port=%d,%s,%s=%s", n.Patch, fam.ip, fam.src, ip),
				fmt.Sprintf("ct(commit,zone=%d,nat(src=%s),exec(set_field:%d->ct_mark),table=%d)", NodeZone, ip, Mark(n.ID), tableToPhysical))
		}
	}
}

// router: what one network's gateway router sends, and the replies it gets.
func (b *builder) router(n Network) {
	phys := b.in.Physical
	// Its neighbour requests go out; its ARP for the masquerade next hop is
	// answered here.
	b.f.add(tableClassify, prioNeighbor, fmt.Sprintf("in_port=%d,arp", n.Patch), fmt.Sprintf("output:%d", phys))
	b.f.add(tableClassify, prioNeighbor, fmt.Sprintf("in_port=%d,icmp6,icmp_type=135", n.Patch), fmt.Sprintf("output:%d", phys))
	for _, hop := range b.in.MasqueradeNextHops {
		if hop.Is4() {
			b.f.add(tableClassify, prioResponder, fmt.Sprintf("in_port=%d,arp,arp_op=1,arp_tpa=%s", n.Patch, hop), arpReply(NextHopMAC(hop), hop))
		}
	}
	// Egress: SNAT to the node's address in the node zone, marked with the
	// network, then out. Conntrack moves the source port when two networks'
	// connections would collide.
	for _, ip := range b.in.NodeIPs {
		b.f.add(tableClassify, prioEgress, fmt.Sprintf("in_port=%d,%s", n.Patch, familyOf(ip).ip),
			fmt.Sprintf("ct(commit,zone=%d,nat(src=%s),exec(set_field:%d->ct_mark),table=%d)", NodeZone, ip, Mark(n.ID), tableToPhysical))
	}
	// Whatever else it sends goes out, never to NORMAL, which would learn
	// the shared MAC on its port.
	b.f.add(tableClassify, prioRouterRest, fmt.Sprintf("in_port=%d", n.Patch), fmt.Sprintf("output:%d", phys))
	// Replies to its network's egress, found by mark.
	for _, state := range []string{"+trk+est", "+trk+rel"} {
		b.f.add(tableFromUplink, 100, fmt.Sprintf("ct_state=%s,ct_mark=%d", state, Mark(n.ID)), fmt.Sprintf("set_field:%s->eth_dst,output:%d", b.in.MAC, n.Patch))
	}
	// Replies to the host's connections to services.
	for _, m := range b.in.HostMasqueradeIPs {
		fam := familyOf(m)
		b.f.add(tableClassify, prioHostService, fmt.Sprintf("in_port=%d,%s,%s=%s", n.Patch, fam.ip, fam.dst, m),
			fmt.Sprintf("ct(zone=%d,nat,table=%d)", HostServiceZone, tableToHost))
	}
}

// toRouter sends the host's connections to dst (a ClusterIP, or a service
// CIDR) to a router, SNATed to the host masquerade address of its family
// (the router answers it through its external port).
func (b *builder) toRouter(priority, patch int, dst netip.Prefix) {
	fam := familyOf(dst.Addr())
	for _, m := range b.in.HostMasqueradeIPs {
		if m.Is4() == dst.Addr().Is4() {
			b.f.add(tableClassify, priority, fmt.Sprintf("in_port=LOCAL,%s,%s=%s", fam.ip, fam.dst, prefixString(dst)),
				fmt.Sprintf("set_field:%#x->reg0,ct(commit,zone=%d,nat(src=%s),table=%d)", patch, HostServiceZone, m, tableToRouter))
		}
	}
}

// hostToServices sends the host's connections to the service CIDRs to the
// default network's router (UDN ClusterIPs, above, go to their own).
func (b *builder) hostToServices() {
	def, ok := b.nets[b.defaultName()]
	if !ok {
		return
	}
	for _, c := range b.in.ServiceCIDRs {
		b.toRouter(prioHostServices, def.Patch, c.Masked())
	}
}

func (b *builder) defaultName() string {
	for _, n := range b.patches {
		if n.ID == 0 {
			return n.Name
		}
	}
	return ""
}

// service: a UDN service's ClusterIPs from the host; from outside, node
// ports on the node's addresses and service ports on external IPs, straight
// to the router and its replies straight out.
func (b *builder) service(s Service) {
	n, ok := b.nets[s.Network]
	if !ok {
		return
	}
	if n.ID != 0 {
		for _, ip := range s.ClusterIPs {
			b.toRouter(prioHostService, n.Patch, netip.PrefixFrom(ip, ip.BitLen()))
		}
	}
	for _, p := range s.Ports {
		if p.NodePort > 0 {
			for _, ip := range b.in.NodeIPs {
				b.steer(s.Name, n.Patch, p.Protocol, ip, p.NodePort)
			}
		}
		for _, ip := range s.ExternalIPs {
			b.steer(s.Name, n.Patch, p.Protocol, ip, p.Port)
		}
	}
}

// steer claims ip and port for service and steers them to patch, unless
// another service claimed them first (a Conflict).
func (b *builder) steer(service string, patch int, proto string, ip netip.Addr, port int) {
	key := fmt.Sprintf("%s %s %d", proto, ip, port)
	if holder, ok := b.claims[key]; ok {
		if holder != service {
			b.conflicts = append(b.conflicts, Conflict{Service: service, Holder: holder, Address: ip, Protocol: proto, Port: port})
		}
		return
	}
	b.claims[key] = service
	b.f.steer(b.in.Physical, patch, proto, ip, port)
}

// fixed: the tables' defaults, and plain switching for the rest
// (broadcasts, and the physical network of Localnet networks whose localnet
// ports share this bridge).
func (b *builder) fixed() {
	phys, mac := b.in.Physical, b.in.MAC
	b.f.add(tableClassify, prioRest, fmt.Sprintf("in_port=%d,dl_dst=%s", phys, mac), "LOCAL")
	b.f.add(tableClassify, prioRest, "in_port=LOCAL", fmt.Sprintf("output:%d", phys))
	b.f.add(tableClassify, 0, "", "NORMAL")
	b.f.add(tableFromUplink, 0, "", "LOCAL")
	b.f.add(tableToRouter, 0, "", fmt.Sprintf("set_field:%s->eth_dst,output:NXM_NX_REG0[]", mac))
	b.f.add(tableToHost, 100, "ct_state=+trk+est", "set_field:"+mac+"->eth_dst,LOCAL")
	b.f.add(tableToHost, 100, "ct_state=+trk+rel", "set_field:"+mac+"->eth_dst,LOCAL")
	b.f.add(tableToHost, 0, "", "drop")
	b.f.add(tableToPhysical, 0, "", fmt.Sprintf("output:%d", phys))
}

// prefixString writes a host prefix as its address (the flows' form).
func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// steer sends a service port's traffic from the uplink to a router, and the
// router's replies from it back to the uplink.
func (f flows) steer(phys, patch int, proto string, ip netip.Addr, port int) {
	fam := familyOf(ip)
	p := proto
	if !ip.Is4() {
		p += "6"
	}
	f.add(tableClassify, prioIngress, fmt.Sprintf("in_port=%d,%s,%s=%s,tp_dst=%d", phys, p, fam.dst, ip, port), fmt.Sprintf("output:%d", patch))
	f.add(tableClassify, prioIngress, fmt.Sprintf("in_port=%d,%s,%s=%s,tp_src=%d", patch, p, fam.src, ip, port), fmt.Sprintf("output:%d", phys))
}

// NextHopMAC is the MAC br-ex answers for a masquerade next hop: derived
// from its address as OVN-Kubernetes derives MACs (169.254.0.4 →
// 0a:58:a9:fe:00:04).
func NextHopMAC(hop netip.Addr) string { return allocator.MAC(hop).String() }

// arpReply turns an ARP request into the reply "ip is at mac" and sends it
// back where it came from.
func arpReply(mac string, ip netip.Addr) string {
	return strings.Join([]string{
		"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]", "set_field:" + mac + "->eth_src",
		"set_field:2->arp_op",
		"move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[]", "move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[]",
		"set_field:" + mac + "->arp_sha", "set_field:" + ip.String() + "->arp_spa",
		"IN_PORT",
	}, ",")
}

// naReply starts turning a neighbour solicitation for ip into the solicited
// advertisement "ip is at mac" (flags Solicited and Override, the
// link-layer address option a target's instead of a source's), and
// naFinish, in the next table, ends it: OVS takes the target link-layer
// address only in a flow that matches an advertisement, which the packet
// is only after the first half. The option's address is set under both
// its names, whichever the datapath writes first. OVS keeps the ICMPv6
// checksum right as it rewrites.
func naReply(mac string, ip netip.Addr) string {
	return strings.Join([]string{
		"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]", "set_field:" + mac + "->eth_src",
		"move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[]", "set_field:" + ip.String() + "->ipv6_src",
		"set_field:255->nw_ttl",
		"set_field:" + mac + "->nd_sll",
		"set_field:136->icmpv6_type", "set_field:0->icmpv6_code",
		"set_field:0x60000000->nd_reserved", "set_field:2->nd_options_type",
		fmt.Sprintf("resubmit(,%d)", tableNDReply),
	}, ",")
}

func naFinish(mac string) string {
	return "set_field:" + mac + "->nd_tll,IN_PORT"
}

// family holds the match field names of an IP family.
type family struct{ ip, udp, src, dst string }

func familyOf(a netip.Addr) family {
	if a.Is4() {
		return family{"ip", "udp", "nw_src", "nw_dst"}
	}
	return family{"ipv6", "udp6", "ipv6_src", "ipv6_dst"}
}

// flows is a set of flows keyed by their match (table, priority, match), so
// a duplicate match keeps one flow.
type flows map[string]string

func (f flows) add(table, priority int, match, actions string) {
	key := fmt.Sprintf("table=%d,priority=%d", table, priority)
	if match != "" {
		key += "," + match
	}
	f[key] = actions
}

func (f flows) sorted() []string {
	out := make([]string, 0, len(f))
	for k, a := range f {
		out = append(out, "cookie="+cookie+","+k+",actions="+a)
	}
	sort.Strings(out)
	return out
}
