package topology

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// defaultRouteLines are the gateway router's default routes and the BFD
// rows, as Describe prints them.
func defaultRouteLines(t *testing.T, res Result) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(Describe(res.Rows), "\n") {
		if strings.Contains(l, "route 0.0.0.0/0") || strings.Contains(l, "route ::/0") || strings.HasPrefix(l, "bfd ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

func TestDefaultRoutePolicy(t *testing.T) {
	cfg := config.Default()
	uplinks := func(ecmp, bfd *bool) nodeinfo.Info {
		n := withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24"), "default": pfx("10.244.1.0/24", "fd00:10:244:2::/64")}),
			"02:42:ac:12:00:02", pfx("172.18.0.2/16", "fc00::2/64"), "172.18.0.1", "172.18.0.254", "fc00::1")
		n.Gateway.ECMP, n.Gateway.BFD = ecmp, bfd
		return n
	}
	// A second bridge: uplink on physnet2, its own subnet and next hop.
	bridges := func() nodeinfo.Info {
		n := withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24"), "default": pfx("10.244.1.0/24")}),
			"02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1", "172.18.0.254")
		n.Gateway.Extra = []nodeinfo.Uplink{{MAC: "02:42:ac:13:00:02", IPs: pfx("172.19.0.2/16"),
			NextHops: []netip.Addr{netip.MustParseAddr("172.19.0.1")}, PhysicalNetwork: "physnet2"}}
		return n
	}
	on, off := true, false
	policy := func(ecmp, bfd bool) *config.Gateway {
		return &config.Gateway{ECMP: ecmp, BFD: bfd, BFDMinTx: 300, BFDMinRx: 300, BFDDetectMult: 3}
	}
	const gr, udnGR = "GR_node1", "GR_ns1.blue_node1"
	shared := map[netip.Addr]string{
		netip.MustParseAddr("172.19.0.1"):   "44444444-4444-4444-4444-444444444444",
		netip.MustParseAddr("172.18.0.1"):   "11111111-1111-1111-1111-111111111111",
		netip.MustParseAddr("172.18.0.254"): "22222222-2222-2222-2222-222222222222",
		netip.MustParseAddr("fc00::1"):      "33333333-3333-3333-3333-333333333333",
	}
	for _, tc := range []struct {
		name    string
		net     Network
		node    nodeinfo.Info
		policy  *config.Gateway
		shared  map[netip.Addr]string
		want    []string
		waiting []string
	}{{
		name: "default policy: ECMP through both IPv4 hops, symmetric replies, no BFD",
		net:  DefaultNetwork(cfg), node: uplinks(nil, nil),
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.18.0.254 dev rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route ::/0 via fc00::1 dev rtoe-" + gr,
		},
	}, {
		name: "ECMP off: the first hop of each family",
		net:  DefaultNetwork(cfg), node: uplinks(nil, nil), policy: policy(false, false),
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + gr,
			"route ::/0 via fc00::1 dev rtoe-" + gr,
		},
	}, {
		name: "BFD on: the default network owns one session per hop, its routes use them",
		net:  DefaultNetwork(cfg), node: uplinks(nil, nil), policy: policy(true, true),
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.18.0.254 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route ::/0 via fc00::1 dev rtoe-" + gr + " bfd rtoe-" + gr,
			"bfd rtoe-" + gr + " 172.18.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " 172.18.0.254 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " fc00::1 {detect_mult=3 min_rx=300 min_tx=300}",
		},
	}, {
		name: "BFD on: a UDN's routes refer to the default network's sessions, and own none",
		net:  blue(), node: uplinks(nil, nil), policy: policy(true, true), shared: shared,
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + udnGR + " bfd 11111111-1111-1111-1111-111111111111 {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.18.0.254 dev rtoe-" + udnGR + " bfd 22222222-2222-2222-2222-222222222222 {ecmp_symmetric_reply=true}",
			"route ::/0 via fc00::1 dev rtoe-" + udnGR + " bfd 33333333-3333-3333-3333-333333333333",
		},
	}, {
		name: "BFD on before the default network's sessions exist: routes without, waiting",
		net:  blue(), node: uplinks(nil, nil), policy: policy(true, true),
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + udnGR + " {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.18.0.254 dev rtoe-" + udnGR + " {ecmp_symmetric_reply=true}",
			"route ::/0 via fc00::1 dev rtoe-" + udnGR,
		},
		waiting: []string{"172.18.0.1", "172.18.0.254", "fc00::1"},
	}, {
		name: "the node overrides the cluster: ECMP off, BFD on",
		net:  DefaultNetwork(cfg), node: uplinks(&off, &on), policy: policy(true, false),
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + gr + " bfd rtoe-" + gr,
			"route ::/0 via fc00::1 dev rtoe-" + gr + " bfd rtoe-" + gr,
			"bfd rtoe-" + gr + " 172.18.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " fc00::1 {detect_mult=3 min_rx=300 min_tx=300}",
		},
	}, {
		name: "two bridges: ECMP over both uplinks' next hops, each out its own port, BFD on the default router's port of each",
		net:  DefaultNetwork(cfg), node: bridges(), policy: policy(true, true),
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.18.0.254 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.19.0.1 dev rtoe-" + gr + "_physnet2 bfd rtoe-" + gr + "_physnet2 {ecmp_symmetric_reply=true}",
			"bfd rtoe-" + gr + " 172.18.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " 172.18.0.254 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + "_physnet2 172.19.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
		},
	}, {
		name: "two bridges, a UDN: its second port, the shared sessions",
		net:  blue(), node: bridges(), policy: policy(true, true), shared: shared,
		want: []string{
			"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + udnGR + " bfd 11111111-1111-1111-1111-111111111111 {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.18.0.254 dev rtoe-" + udnGR + " bfd 22222222-2222-2222-2222-222222222222 {ecmp_symmetric_reply=true}",
			"route 0.0.0.0/0 via 172.19.0.1 dev rtoe-" + udnGR + "_physnet2 bfd 44444444-4444-4444-4444-444444444444 {ecmp_symmetric_reply=true}",
		},
	}, {
		name: "two bridges, ECMP off: the first uplink's first hop only",
		net:  blue(), node: bridges(), policy: policy(false, false),
		want: []string{"route 0.0.0.0/0 via 172.18.0.1 dev rtoe-" + udnGR},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Render(Input{Network: tc.net, Nodes: []nodeinfo.Info{tc.node}, Zone: "node1", Cluster: cfg, Gateway: tc.policy, SharedBFD: tc.shared})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, defaultRouteLines(t, res)); d != "" {
				t.Errorf("default routes (-want +got):\n%s", d)
			}
			var waiting []string
			for _, h := range res.WaitingForBFD {
				waiting = append(waiting, h.String())
			}
			if d := cmp.Diff(tc.waiting, waiting); d != "" {
				t.Errorf("waiting for BFD (-want +got):\n%s", d)
			}
			assertReferencesResolve(t, res)
		})
	}
}

// TestUplinkBridgePorts: a further uplink gives every gateway router an
// external switch, localnet port (on the uplink's physical network) and
// external port (the node's address and MAC on that uplink) of its own.
func TestUplinkBridgePorts(t *testing.T) {
	cfg := config.Default()
	n := withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24"), "default": pfx("10.244.1.0/24")}),
		"02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1")
	n.Gateway.Extra = []nodeinfo.Uplink{{MAC: "02:42:ac:13:00:02", IPs: pfx("172.19.0.2/16"),
		NextHops: []netip.Addr{netip.MustParseAddr("172.19.0.1")}, PhysicalNetwork: "physnet2"}}
	res, err := Render(Input{Network: blue(), Nodes: []nodeinfo.Info{n}, Zone: "node1", Cluster: cfg})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(Describe(res.Rows), "\n") {
		if strings.Contains(l, "ext_") || strings.Contains(l, "rtoe-") || strings.Contains(l, "breth0_") || strings.Contains(l, "etor-") {
			if !strings.Contains(l, "route ") {
				got = append(got, strings.TrimSpace(l))
			}
		}
	}
	want := []string{
		"port rtoe-GR_ns1.blue_node1 mac 02:42:ac:12:00:02 networks 172.18.0.2/16",
		"port rtoe-GR_ns1.blue_node1_physnet2 mac 02:42:ac:13:00:02 networks 172.19.0.2/16",
		// SNAT only toward the outside, on either uplink.
		`nat snat 10.128.0.0/16 -> 169.254.0.22 match outport == {"rtoe-GR_ns1.blue_node1", "rtoe-GR_ns1.blue_node1_physnet2"}`,
		"switch ext_ns1.blue_node1",
		"port etor-GR_ns1.blue_node1 type router addresses [router] {router-port=rtoe-GR_ns1.blue_node1}",
		"port ns1.blue_breth0_node1 type localnet addresses [unknown] {network_name=physnet}",
		"switch ext_ns1.blue_node1_physnet2",
		"port etor-GR_ns1.blue_node1_physnet2 type router addresses [router] {router-port=rtoe-GR_ns1.blue_node1_physnet2}",
		"port ns1.blue_breth0_node1_physnet2 type localnet addresses [unknown] {network_name=physnet2}",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("external side (-want +got):\n%s", d)
	}
	if name := blue().UplinkLocalnetPort("node1", 1, "physnet2"); !strings.Contains(Describe(res.Rows), name) {
		t.Errorf("UplinkLocalnetPort %s is not a rendered port", name)
	}
	assertReferencesResolve(t, res)
}
