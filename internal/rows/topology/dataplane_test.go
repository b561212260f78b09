package topology_test

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// world is a set of real OVN zones that tests render networks into directly
// (pure renderer + sync engine, no Kubernetes), one zone per node.
type world struct {
	t      *testing.T
	cfg    config.Cluster
	nodes  []nodeinfo.Info
	zones  map[string]*ovntest.Zone
	syncer map[string]*ovsdbsync.Syncer
}

func mustPrefixes(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func newWorld(t *testing.T, nodes ...nodeinfo.Info) *world {
	w := &world{t: t, cfg: config.Default(), nodes: nodes, zones: map[string]*ovntest.Zone{}, syncer: map[string]*ovsdbsync.Syncer{}}
	for _, n := range nodes {
		z := ovntest.StartZone(t, n.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Indexes: ovsdbsync.Indexes(zone.NBTableNames...), Tables: zone.NBTables})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		s, err := zone.NewSyncer(c)
		if err != nil {
			t.Fatal(err)
		}
		w.zones[n.Name], w.syncer[n.Name] = z, s
		// The other nodes' chassis, as the zone controller registers them.
		for _, o := range nodes {
			if o.Name != n.Name {
				z.MustSBCtl("chassis-add", o.ChassisID, "geneve", o.EncapIP.String(), "--",
					"set", "chassis", o.ChassisID, "other_config:is-remote=true", "external_ids:ovn-is-interconn=true")
			}
		}
	}
	return w
}

// render writes the network (with its ports) into every zone and waits for
// northd.
func (w *world) render(n topology.Network, ports ...topology.Port) {
	w.t.Helper()
	for _, node := range w.nodes {
		res, err := topology.Render(topology.Input{Network: n, Nodes: w.nodes, Zone: node.Name, Cluster: w.cfg, Ports: ports})
		if err != nil {
			w.t.Fatal(err)
		}
		if _, err := w.syncer[node.Name].Sync(context.Background(), "net:"+n.Name, res.Rows); err != nil {
			w.t.Fatal(err)
		}
		w.zones[node.Name].MustSync()
	}
}

func testNode(name string, id int) nodeinfo.Info {
	ip := netip.MustParsePrefix("172.18.0." + string(rune('0'+id)) + "/16")
	return nodeinfo.Info{Name: name, ID: id, ChassisID: "chassis-" + name, Zone: name, PrimaryIPs: []netip.Prefix{ip}, EncapIP: ip.Addr(),
		Gateway: &nodeinfo.ParsedGateway{Uplink: nodeinfo.Uplink{MAC: "02:42:ac:12:00:0" + string(rune('0'+id)), IPs: []netip.Prefix{ip},
			NextHops: []netip.Addr{netip.MustParseAddr("172.18.0.1")}, PhysicalNetwork: "physnet"}}}
}

func l2Network() topology.Network {
	return topology.Network{Name: "ns.l2", ID: 5, Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary,
		Subnets: []netconf.Subnet{{CIDR: netip.MustParsePrefix("203.203.0.0/24")}, {CIDR: netip.MustParsePrefix("2010:100:200::/60")}},
		Join:    mustPrefixes("100.65.0.0/16", "fd99::/64"), Transit: mustPrefixes("100.88.0.0/16", "fd97::/64"), MTU: 1400,
		TunnelKeys: []int{16715776}}
}

func pod(name, node, v4, v6 string, key int) topology.Port {
	a := netip.MustParseAddr(v4)
	return topology.Port{Name: name, Node: node, MAC: allocator.MAC(a).String(),
		IPs: mustPrefixes(v4+"/24", v6+"/60"), TunnelKey: key}
}

const gwMAC = "0a:58:cb:cb:00:01" // of 203.203.0.1

// arpForGateway traces an ARP request from a pod for the gateway address and
// returns the MAC the reply carries (the reply comes back to the pod).
func arpForGateway(t *testing.T, z *ovntest.Zone, p topology.Port, v4 string) string {
	t.Helper()
	v := z.TraceExpr("ns.l2_ovn_layer2_switch", `inport == "`+p.Name+`" && eth.src == `+p.MAC+` && eth.dst == ff:ff:ff:ff:ff:ff && arp.op == 1 && arp.sha == `+p.MAC+` && arp.spa == `+v4+` && arp.tpa == 203.203.0.1`)
	out, ok := v.DeliveredTo(p.Name)
	if !ok || out.Fields["arp.op"] != "2" {
		t.Fatalf("zone %s: no ARP reply for the gateway to %s:\n%s", z.Name, p.Name, v.Trace)
	}
	return out.Fields["arp.sha"]
}

// TestLayer2Interconnect checks seed 000's Layer2 topology in two real zones:
// east-west across the switch's remote port, the gateway answering with the
// same MAC in both zones, egress through the local gateway router from either
// node, a remote node's join address through the transit router's remote
// port, the gateway reachable on its IPv6 link-local address, and a workload
// "migrating" from node1 to node2 keeping its gateway and leaving through
// node2's gateway router.
func TestLayer2Interconnect(t *testing.T) {
	w := newWorld(t, testNode("node1", 2), testNode("node2", 3))
	n := l2Network()
	a := pod("pod-a", "node1", "203.203.0.10", "2010:100:200::a", 16)
	b := pod("pod-b", "node2", "203.203.0.11", "2010:100:200::b", 17)
	w.render(n, a, b)
	z1, z2 := w.zones["node1"], w.zones["node2"]
	sw := "ns.l2_ovn_layer2_switch"

	// East-west: pod-a to pod-b leaves zone 1 through pod-b's remote port, and
	// enters zone 2 (from the tunnel, on pod-a's remote port) to pod-b.
	toB := ovntrace.Packet{InPort: "pod-a", EthSrc: a.MAC, EthDst: b.MAC, IPSrc: "203.203.0.10", IPDst: "203.203.0.11", Proto: "tcp", DstPort: 80}
	ovntest.ExpectDelivered(t, z1.Trace(sw, toB), "pod-b")
	if got := z1.MustNBCtl("get", "Logical_Switch_Port", "pod-b", "type"); got != "remote" {
		t.Fatalf("pod-b in zone 1 has type %s, want remote", got)
	}
	ovntest.ExpectDelivered(t, z2.Trace(sw, toB), "pod-b")

	// The gateway answers ARP with the same MAC in both zones, locally.
	if m1, m2 := arpForGateway(t, z1, a, "203.203.0.10"), arpForGateway(t, z2, b, "203.203.0.11"); m1 != gwMAC || m2 != gwMAC {
		t.Fatalf("gateway MAC in zone 1 %s, zone 2 %s; want %s in both", m1, m2, gwMAC)
	}

	// Egress from either node leaves through that node's gateway router,
	// SNATed to the network's masquerade address.
	masq, _, _ := allocator.MasqueradeIPs(w.cfg.MasqueradeSubnets[0], n.ID, config.MasqueradeReserved)
	for _, c := range []struct {
		z *ovntest.Zone
		p topology.Port
		v string
		n string
	}{{z1, a, "203.203.0.10", "node1"}, {z2, b, "203.203.0.11", "node2"}} {
		v := c.z.Trace(sw, ovntrace.Packet{InPort: c.p.Name, EthSrc: c.p.MAC, EthDst: gwMAC, IPSrc: c.v, IPDst: "8.8.8.8", Proto: "tcp", DstPort: 443})
		out, ok := v.DeliveredTo("ns.l2_breth0_" + c.n)
		if !ok || out.Fields["ip4.src"] != masq.String() {
			t.Fatalf("egress from %s: %v, want through %s's localnet port from %s\n%s", c.p.Name, v.Delivered(), c.n, masq, v.Trace)
		}
	}

	// Another node's join address: through the transit router's remote port.
	toJoin := ovntrace.Packet{InPort: "pod-a", EthSrc: a.MAC, EthDst: gwMAC, IPSrc: "203.203.0.10", IPDst: "100.65.0.3", Proto: "icmp"}
	ovntest.ExpectDelivered(t, z1.Trace(sw, toJoin), "trtor-GR_ns.l2_node2")

	// IPv6: the gateway answers on its link-local address (derived from its MAC).
	lla := allocator.LinkLocal(mustMAC(gwMAC)).String()
	v := z1.Trace(sw, ovntrace.Packet{InPort: "pod-a", EthSrc: a.MAC, EthDst: gwMAC, IPSrc: "fe80::858:cbff:fecb:a", IPDst: lla, Proto: "icmp"})
	replied := false
	for _, o := range v.Outputs {
		if o.Fields["icmp6.type"] == "129" && o.Fields["ip6.src"] == lla {
			replied = true
		}
	}
	if !replied {
		t.Fatalf("no echo reply from the gateway's link-local address %s:\n%s", lla, v.Trace)
	}

	// Migration: pod-a moves to node2, keeping its port, addresses and MAC.
	a.Node = "node2"
	w.render(n, a, b)
	if got := z1.MustNBCtl("get", "Logical_Switch_Port", "pod-a", "type"); got != "remote" {
		t.Fatalf("after moving, pod-a in zone 1 has type %s, want remote", got)
	}
	if m := arpForGateway(t, z2, a, "203.203.0.10"); m != gwMAC {
		t.Fatalf("after moving, the gateway MAC seen by pod-a is %s, want %s", m, gwMAC)
	}
	v = z2.Trace(sw, ovntrace.Packet{InPort: "pod-a", EthSrc: a.MAC, EthDst: gwMAC, IPSrc: "203.203.0.10", IPDst: "8.8.8.8", Proto: "tcp", DstPort: 443})
	if out, ok := v.DeliveredTo("ns.l2_breth0_node2"); !ok || out.Fields["ip4.src"] != masq.String() {
		t.Fatalf("after moving, pod-a's egress: %v, want through node2's gateway router\n%s", v.Delivered(), v.Trace)
	}
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// TestSecondaryIsolation: a secondary Layer2 network and a Localnet network
// reach nothing of a primary network, even toward its pods' addresses.
func TestSecondaryIsolation(t *testing.T) {
	w := newWorld(t, testNode("node1", 2), testNode("node2", 3))
	primary := l2Network()
	a := pod("pod-a", "node1", "203.203.0.10", "2010:100:200::a", 16)
	b := pod("pod-b", "node2", "203.203.0.11", "2010:100:200::b", 17)
	w.render(primary, a, b)
	sec := topology.Network{Name: "ns.sec", ID: 6, Topology: netconf.TopologyLayer2, Role: netconf.RoleSecondary}
	sa := topology.Port{Name: "pod-a-sec", Node: "node1", MAC: "02:00:00:00:00:0a", TunnelKey: 16}
	sb := topology.Port{Name: "pod-b-sec", Node: "node2", MAC: "02:00:00:00:00:0b", TunnelKey: 17}
	w.render(sec, sa, sb)
	ln := topology.Network{Name: "ns.phys", ID: 7, Topology: netconf.TopologyLocalnet, Role: netconf.RoleSecondary,
		Subnets: []netconf.Subnet{{CIDR: netip.MustParsePrefix("192.168.50.0/24")}}, PhysicalNetworkName: "physnet-tenant", VLANID: 100}
	la := topology.Port{Name: "pod-a-phys", Node: "node1", MAC: "0a:58:c0:a8:32:0a", IPs: mustPrefixes("192.168.50.10/24")}
	w.render(ln, la)
	z1 := w.zones["node1"]

	// The secondary Layer2 switch carries its own members' traffic (MAC-only
	// port security lets pods choose their addresses) ...
	ovntest.ExpectDelivered(t, z1.Trace("ns.sec_ovn_layer2_switch", ovntrace.Packet{InPort: "pod-a-sec", EthSrc: sa.MAC, EthDst: sb.MAC, IPSrc: "10.9.9.1", IPDst: "10.9.9.2"}), "pod-b-sec")
	// ... and nothing toward the primary network's pods or gateway.
	for _, dst := range []struct{ mac, ip string }{{b.MAC, "203.203.0.11"}, {gwMAC, "203.203.0.1"}, {gwMAC, "8.8.8.8"}} {
		ovntest.ExpectDropped(t, z1.Trace("ns.sec_ovn_layer2_switch", ovntrace.Packet{InPort: "pod-a-sec", EthSrc: sa.MAC, EthDst: dst.mac, IPSrc: "10.9.9.1", IPDst: dst.ip}))
	}
	// The Localnet switch sends everything not local to the physical network,
	// never into the primary network.
	v := z1.Trace("ns.phys_ovn_localnet_switch", ovntrace.Packet{InPort: "pod-a-phys", EthSrc: la.MAC, EthDst: b.MAC, IPSrc: "192.168.50.10", IPDst: "203.203.0.11"})
	ovntest.ExpectDelivered(t, v, "ns.phys_ovn_localnet_port")
	if got := z1.MustNBCtl("get", "Logical_Switch_Port", "ns.phys_ovn_localnet_port", "tag_request", "options:network_name"); got != "100\n\"physnet-tenant\"" && got != "100\nphysnet-tenant" {
		t.Fatalf("localnet port VLAN and physical network: %q", got)
	}
}
