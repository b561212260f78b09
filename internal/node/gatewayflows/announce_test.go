package gatewayflows

import (
	"context"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/netns"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/rows/gateway"
)

// TestEgressIPNeighbours, with a real Open vSwitch and a real kernel on the
// other end of the uplink: the external bridge, with the flows
// gateway.Build gives a node holding an IPv4 and an IPv6 egress IP, answers
// the kernel's ARP request and neighbour solicitation for them with the
// bridge's MAC; and the announcements of a take-over (gratuitous ARP,
// unsolicited neighbour advertisement) make the kernel replace another MAC
// it holds for an address.
func TestEgressIPNeighbours(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	const nodeNS, extNS, mac = "eipnd-node", "eipnd-ext", "02:00:c0:a8:4d:0a"
	ip := func(args ...string) string {
		t.Helper()
		out, err := deps.OVNCommand("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	for _, ns := range []string{nodeNS, extNS} {
		_ = deps.OVNCommand("ip", "netns", "del", ns).Run()
		ip("netns", "add", ns)
		t.Cleanup(func() { _ = deps.OVNCommand("ip", "netns", "del", ns).Run() })
	}
	ovs, err := ovnrun.StartNode(ovnrun.NodeOptions{Name: nodeNS, Dir: t.TempDir(), Netns: nodeNS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ovs.Stop)
	ip("-n", nodeNS, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", extNS)
	ip("-n", nodeNS, "link", "set", "eth0", "up")
	ip("-n", extNS, "link", "set", "eth0", "up")
	ip("-n", extNS, "addr", "add", "192.168.77.1/24", "dev", "eth0")
	ip("-n", extNS, "addr", "add", "fd00:77::1/64", "dev", "eth0", "nodad")
	if _, err := ovs.VSCtl("add-br", "br-ex", "--", "set", "Bridge", "br-ex", "datapath_type=netdev", "other_config:hwaddr="+mac,
		"--", "add-port", "br-ex", "eth0"); err != nil {
		t.Fatal(err)
	}
	port, err := ovs.VSCtl("get", "Interface", "eth0", "ofport")
	if err != nil {
		t.Fatal(err)
	}
	phys, err := strconv.Atoi(strings.TrimSpace(port))
	if err != nil || phys <= 0 {
		t.Fatalf("eth0's OpenFlow port %q", port)
	}
	r := &GatewayReconciler{Opts: node.Options{Host: cni.Host{OVSDB: ovs.DB, Command: deps.OVNCommand},
		Gateway: node.GatewayOptions{Bridge: "br-ex", Interface: "eth0"}}}
	held := []netip.Addr{netip.MustParseAddr("192.168.77.99"), netip.MustParseAddr("fd00:77::99")}
	table := gateway.Build(gateway.Input{Physical: phys, MAC: mac, NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.77.10")}, EgressIPs: held})
	if _, err := r.apply(strings.Join(table.Flows, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	neighbour := func(addr string) string {
		f := strings.Fields(ip("-n", extNS, "neigh", "show", addr))
		for i := range f {
			if f[i] == "lladdr" && i+1 < len(f) {
				return f[i+1]
			}
		}
		return ""
	}
	waitMAC := func(addr, want string, poke func()) {
		t.Helper()
		if err := proc.WaitFor(10*time.Second, 50*time.Millisecond, func() (bool, error) {
			if poke != nil {
				poke()
			}
			return neighbour(addr) == want, nil
		}); err != nil {
			t.Fatalf("the kernel has %s at %q, want %s", addr, neighbour(addr), want)
		}
	}
	// Resolution: a datagram to each address makes the kernel ask.
	for _, a := range held {
		target := netip.AddrPortFrom(a, 9).String()
		waitMAC(a.String(), mac, func() {
			if c, err := netns.Dial(context.Background(), extNS, "udp", target); err == nil {
				_, _ = c.Write([]byte("x"))
				_ = c.Close()
			}
		})
	}
	// Take-over: the kernel holds another MAC for two addresses the node
	// now announces.
	moved := []netip.Addr{netip.MustParseAddr("192.168.77.98"), netip.MustParseAddr("fd00:77::98")}
	for _, a := range moved {
		ip("-n", extNS, "neigh", "replace", a.String(), "lladdr", "02:00:00:00:00:01", "dev", "eth0", "nud", "stale")
	}
	for i := range Announcements {
		pending, err := r.announce(context.Background(), time.Now(), mac, phys, moved)
		if err != nil {
			t.Fatal(err)
		}
		if pending != (i < Announcements-1) {
			t.Errorf("announcement %d: pending %v", i+1, pending)
		}
	}
	if pending, _ := r.announce(context.Background(), time.Now(), mac, phys, moved); pending {
		t.Error("announcements still pending after all their copies")
	}
	for _, a := range moved {
		waitMAC(a.String(), mac, nil)
	}
}

// TestApplyWritesOnce: flows of every kind gateway.Build makes (egress,
// node ports, external IPs, the host's service routes, replies, egress IP
// neighbours in both families), written to a real bridge, compare equal to
// what the bridge then holds: a second apply writes nothing. A flow
// written in a form the bridge prints otherwise (load: for set_field:,
// mod_dl_dst: for set_field:...->eth_dst) made every resync rewrite the
// whole table, on every node, every five seconds.
func TestApplyWritesOnce(t *testing.T) {
	r := bridgeReconciler(t, "gwapply-node", deps.OVNCommand)
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	table := gateway.Build(gateway.Input{
		Physical: 1, MAC: "02:00:c0:a8:64:0b",
		NodeIPs:            []netip.Addr{a("192.168.100.11"), a("fd00:192:168:100::11")},
		HostMasqueradeIPs:  []netip.Addr{a("169.254.0.2"), a("fd69::2")},
		MasqueradeNextHops: []netip.Addr{a("169.254.0.4"), a("fd69::4")},
		ServiceCIDRs:       []netip.Prefix{p("10.96.0.0/16"), p("fd00:10:96::/112")},
		EgressIPs:          []netip.Addr{a("192.168.100.150"), a("fd00:192:168:100::150")},
		Networks:           []gateway.Network{{Name: "default", ID: 0, Patch: 2}, {Name: "blue", ID: 3, Patch: 5}},
		Services: []gateway.Service{
			{Name: "blue/web", Network: "blue", ClusterIPs: []netip.Addr{a("10.96.0.50"), a("fd00:10:96::50")},
				ExternalIPs: []netip.Addr{a("172.30.0.10")}, Ports: []gateway.Port{{Protocol: "tcp", Port: 80, NodePort: 30080}}},
			{Name: "default/kubernetes", Network: "default", ClusterIPs: []netip.Addr{a("10.96.0.1")}, Ports: []gateway.Port{{Protocol: "tcp", Port: 443}}},
		},
	})
	flows := strings.Join(table.Flows, "\n") + "\n"
	if changed, err := r.apply(flows); err != nil || !changed {
		t.Fatalf("first apply: changed %v, %v", changed, err)
	}
	diff := r.ofctl("diff-flows", r.mgmt(), "/dev/stdin")
	diff.Stdin = strings.NewReader(flows)
	out, _ := diff.Output()
	if changed, err := r.apply(flows); err != nil || changed {
		t.Errorf("second apply of the same flows: changed %v, %v; the bridge prints them otherwise:\n%s", changed, err, out)
	}
}
