package topology

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// defaultRouteLines are the gateway router's default routes and the BFD
// rows, as Describe prints them. A next hop's symmetric routes are one line
// "route <symmetric> via …" when their prefixes are symmetricPrefixes of the
// default masquerade subnets, in order; anything else is printed as is.
func defaultRouteLines(t *testing.T, res Result) []string {
	t.Helper()
	want := map[bool][]string{}
	for _, is4 := range []bool{true, false} {
		for _, p := range symmetricPrefixes(is4, config.Default().MasqueradeSubnets) {
			want[is4] = append(want[is4], p.String())
		}
	}
	var out []string
	groups := map[string][]string{} // a symmetric route's line after its prefix → prefixes
	at := map[string]int{}          // → where its line goes in out
	for _, l := range strings.Split(Describe(res.Rows), "\n") {
		l = strings.TrimSpace(l)
		f := strings.SplitN(l, " ", 3)
		switch {
		case len(f) == 3 && f[0] == "route" && strings.HasSuffix(l, "{ecmp_symmetric_reply=true}"):
			if _, ok := groups[f[2]]; !ok {
				at[f[2]] = len(out)
				out = append(out, "")
			}
			groups[f[2]] = append(groups[f[2]], f[1])
		case strings.HasPrefix(l, "route 0.0.0.0/0 ") || strings.HasPrefix(l, "route ::/0 ") || strings.HasPrefix(l, "bfd "):
			out = append(out, l)
		}
	}
	for rest, got := range groups {
		is4 := strings.Contains(got[0], ".")
		if cmp.Equal(got, want[is4], cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
			out[at[rest]] = "route <symmetric> " + rest
		} else {
			out[at[rest]] = "route " + strings.Join(got, ",") + " " + rest
		}
	}
	return out
}

// TestSymmetricPrefixes: the symmetric routes cover a family's whole space
// but the (widened) masquerade subnet, each address exactly once.
func TestSymmetricPrefixes(t *testing.T) {
	for _, tc := range []struct {
		masq []netip.Prefix
		is4  bool
		want []string
	}{
		{pfx("169.254.0.0/17"), true, []string{"0.0.0.0/1", "192.0.0.0/2", "128.0.0.0/3", "176.0.0.0/4", "160.0.0.0/5", "172.0.0.0/6", "170.0.0.0/7", "168.0.0.0/8", "169.0.0.0/9", "169.128.0.0/10", "169.192.0.0/11", "169.224.0.0/12", "169.240.0.0/13", "169.248.0.0/14", "169.252.0.0/15", "169.255.0.0/16"}},
		{pfx("10.0.0.0/8"), true, []string{"128.0.0.0/1", "64.0.0.0/2", "32.0.0.0/3", "16.0.0.0/4", "0.0.0.0/5", "12.0.0.0/6", "8.0.0.0/7", "11.0.0.0/8"}},
		{pfx("fd69::/112"), false, nil}, // checked by coverage below: 32 prefixes
		{pfx("fd69::/112"), true, []string{"0.0.0.0/0"}},
	} {
		var got []string
		for _, p := range symmetricPrefixes(tc.is4, tc.masq) {
			got = append(got, p.String())
		}
		if tc.want != nil {
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%v (IPv4 %v) (-want +got):\n%s", tc.masq, tc.is4, d)
			}
		}
	}
	// Every probe address is covered once, except within the widened subnet.
	for _, tc := range []struct {
		masq, widened netip.Prefix
		probes        []string
	}{
		{netip.MustParsePrefix("169.254.0.0/17"), netip.MustParsePrefix("169.254.0.0/16"),
			[]string{"0.0.0.0", "8.8.8.8", "169.253.255.255", "169.254.0.2", "169.254.200.1", "169.255.0.0", "255.255.255.255", "198.51.100.10"}},
		{netip.MustParsePrefix("fd69::/112"), netip.MustParsePrefix("fd69::/32"),
			[]string{"::", "2001:db8::1", "fd69::2", "fd69:0:1::1", "fd69:1::1", "fd68:ffff::1", "ffff::1"}},
	} {
		ps := symmetricPrefixes(tc.masq.Addr().Is4(), []netip.Prefix{tc.masq})
		if len(ps) != tc.widened.Bits() {
			t.Errorf("%v: %d prefixes, want %d", tc.masq, len(ps), tc.widened.Bits())
		}
		for _, s := range tc.probes {
			a := netip.MustParseAddr(s)
			n := 0
			for _, p := range ps {
				if p.Contains(a) {
					n++
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tc.widened.Contains(a)]; n != want {
				t.Errorf("%v: %s covered %d times, want %d", tc.masq, s, n, want)
			}
		}
	}
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
			"route <symmetric> via 172.18.0.1 dev rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.18.0.254 dev rtoe-" + gr + " {ecmp_symmetric_reply=true}",
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
			"route <symmetric> via 172.18.0.1 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.18.0.254 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route ::/0 via fc00::1 dev rtoe-" + gr + " bfd rtoe-" + gr,
			"bfd rtoe-" + gr + " 172.18.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " 172.18.0.254 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " fc00::1 {detect_mult=3 min_rx=300 min_tx=300}",
		},
	}, {
		name: "BFD on: a UDN's routes refer to the default network's sessions, and own none",
		net:  blue(), node: uplinks(nil, nil), policy: policy(true, true), shared: shared,
		want: []string{
			"route <symmetric> via 172.18.0.1 dev rtoe-" + udnGR + " bfd 11111111-1111-1111-1111-111111111111 {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.18.0.254 dev rtoe-" + udnGR + " bfd 22222222-2222-2222-2222-222222222222 {ecmp_symmetric_reply=true}",
			"route ::/0 via fc00::1 dev rtoe-" + udnGR + " bfd 33333333-3333-3333-3333-333333333333",
		},
	}, {
		name: "BFD on before the default network's sessions exist: routes without, waiting",
		net:  blue(), node: uplinks(nil, nil), policy: policy(true, true),
		want: []string{
			"route <symmetric> via 172.18.0.1 dev rtoe-" + udnGR + " {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.18.0.254 dev rtoe-" + udnGR + " {ecmp_symmetric_reply=true}",
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
			"route <symmetric> via 172.18.0.1 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.18.0.254 dev rtoe-" + gr + " bfd rtoe-" + gr + " {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.19.0.1 dev rtoe-" + gr + "_physnet2 bfd rtoe-" + gr + "_physnet2 {ecmp_symmetric_reply=true}",
			"bfd rtoe-" + gr + " 172.18.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + " 172.18.0.254 {detect_mult=3 min_rx=300 min_tx=300}",
			"bfd rtoe-" + gr + "_physnet2 172.19.0.1 {detect_mult=3 min_rx=300 min_tx=300}",
		},
	}, {
		name: "two bridges, a UDN: its second port, the shared sessions",
		net:  blue(), node: bridges(), policy: policy(true, true), shared: shared,
		want: []string{
			"route <symmetric> via 172.18.0.1 dev rtoe-" + udnGR + " bfd 11111111-1111-1111-1111-111111111111 {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.18.0.254 dev rtoe-" + udnGR + " bfd 22222222-2222-2222-2222-222222222222 {ecmp_symmetric_reply=true}",
			"route <symmetric> via 172.19.0.1 dev rtoe-" + udnGR + "_physnet2 bfd 44444444-4444-4444-4444-444444444444 {ecmp_symmetric_reply=true}",
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
