package primarylinks

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func network(name, topo string, id int, subnets ...string) topology.Network {
	n := topology.Network{Name: name, ID: id, Topology: topo, Role: netconf.RolePrimary}
	for _, s := range subnets {
		n.Subnets = append(n.Subnets, netconf.Subnet{CIDR: pfx(s)})
	}
	return n
}

// summary renders a result as sorted lines an operator would read in
// ovn-nbctl's output: each row with the router it is contributed to.
func summary(t *testing.T, r Result) []string {
	t.Helper()
	router := map[string]string{} // row ID → router
	var out []string
	for _, c := range r.Contributions {
		lr, ok := c.Target.(*nbdb.LogicalRouter)
		if !ok {
			t.Fatalf("contribution to %T", c.Target)
		}
		out = append(out, fmt.Sprintf("contribute %s.%s %d", lr.Name, c.Column, len(c.Members)))
		for _, m := range c.Members {
			if prev, dup := router[m]; dup {
				t.Errorf("row %s contributed to %s and %s", m, prev, lr.Name)
			}
			router[m] = lr.Name
		}
	}
	for _, m := range r.Rows {
		id := topology.RowID(m)
		on, ok := router[id]
		if !ok {
			t.Errorf("row %s is contributed to no router", id)
		}
		switch x := m.(type) {
		case *nbdb.LogicalRouterPort:
			peer := "<nil>"
			if x.Peer != nil {
				peer = *x.Peer
			}
			out = append(out, fmt.Sprintf("%s: port %s %v mac=%s peer=%s", on, x.Name, x.Networks, x.MAC, peer))
		case *nbdb.LogicalRouterStaticRoute:
			port := "<nil>"
			if x.OutputPort != nil {
				port = *x.OutputPort
			}
			out = append(out, fmt.Sprintf("%s: route %s via %s out %s", on, x.IPPrefix, x.Nexthop, port))
		case *nbdb.LogicalRouterPolicy:
			out = append(out, fmt.Sprintf("%s: policy %d %s %s %v", on, x.Priority, x.Match, x.Action, x.Nexthops))
		default:
			out = append(out, fmt.Sprintf("%T", m))
		}
	}
	for id := range router {
		found := false
		for _, m := range r.Rows {
			found = found || topology.RowID(m) == id
		}
		if !found {
			t.Errorf("contribution names %s, not rendered", id)
		}
	}
	out = append(out, r.Problems...)
	sort.Strings(out)
	return out
}

// TestRender renders links in the zone of node "worker" (ID 2) with the
// default link subnets (169.254.128.0/19, fd69::1:0/115).
func TestRender(t *testing.T) {
	links := config.Default().PrimaryLinkSubnets
	// blue (Layer3, ID 5) and yellow (Layer2, ID 3): index 5^3 = 6, offsets
	// 12 and 13; yellow has the lower ID, so the even address.
	blue := network("ns1.blue", netconf.TopologyLayer3, 5, "11.0.0.0/16", "fd11::/60")
	yellow := network("ns1.yellow", netconf.TopologyLayer2, 3, "10.0.0.0/16", "fd10::/64")
	red := network("ns1.red", netconf.TopologyLayer3, 6, "13.0.0.0/16", "fd13::/60")             // with blue: index 3
	green := network("ns1.green", netconf.TopologyLayer3, 9, "12.0.0.0/16", "12.1.0.0/16")       // IPv4 only; with yellow: index 10
	teal := network("cluster.udn.teal", netconf.TopologyLayer2, 4, "10.1.0.0/16", "fd10:1::/64") // with yellow: index 7
	v6only := network("ns1.six", netconf.TopologyLayer2, 7, "fd20::/64")                         // no family with green
	secondary := network("ns1.sec", netconf.TopologyLayer3, 8, "14.0.0.0/16")
	secondary.Role = netconf.RoleSecondary
	localnet := network("ns1.phys", netconf.TopologyLocalnet, 10, "15.0.0.0/16")
	zero := network("ns1.zero", netconf.TopologyLayer2, 0, "16.0.0.0/16")

	worker := nodeinfo.Info{Name: "worker", Zone: "worker", ID: 2, ChassisID: "ch-1", Gateway: &nodeinfo.ParsedGateway{},
		Subnets: nodeinfo.Subnets{
			"ns1.blue":  {pfx("11.0.2.0/24"), pfx("fd11:0:0:2::/64")},
			"ns1.red":   {pfx("13.0.2.0/24"), pfx("fd13:0:0:2::/64")},
			"ns1.green": {pfx("12.0.2.0/24"), pfx("12.1.2.0/24")},
		}}
	noChassis := worker
	noChassis.ChassisID = ""
	noID := worker
	noID.ID = 0
	noBlueSlice := worker
	noBlueSlice.Subnets = nodeinfo.Subnets{}

	for _, tc := range []struct {
		name    string
		a, b    topology.Network
		local   nodeinfo.Info
		subnets []netip.Prefix
		want    []string
	}{
		{"layer3 and layer2, dual stack", blue, yellow, worker, links, []string{
			"contribute GR_ns1.yellow_worker.ports 1",
			"contribute GR_ns1.yellow_worker.static_routes 2",
			"contribute ns1.blue_ovn_cluster_router.policies 2",
			"contribute ns1.blue_ovn_cluster_router.ports 1",
			"contribute ns1.blue_ovn_cluster_router.static_routes 2",
			"GR_ns1.yellow_worker: port plink_ns1.yellow_to_ns1.blue [169.254.128.12/31 fd69::1:c/127] mac=0a:58:a9:fe:80:0c peer=plink_ns1.blue_to_ns1.yellow",
			"GR_ns1.yellow_worker: route 11.0.0.0/16 via 169.254.128.13 out plink_ns1.yellow_to_ns1.blue",
			"GR_ns1.yellow_worker: route fd11::/60 via fd69::1:d out plink_ns1.yellow_to_ns1.blue",
			"ns1.blue_ovn_cluster_router: port plink_ns1.blue_to_ns1.yellow [169.254.128.13/31 fd69::1:d/127] mac=0a:58:a9:fe:80:0d peer=plink_ns1.yellow_to_ns1.blue",
			"ns1.blue_ovn_cluster_router: route 10.0.0.0/16 via 169.254.128.12 out plink_ns1.blue_to_ns1.yellow",
			"ns1.blue_ovn_cluster_router: route fd10::/64 via fd69::1:c out plink_ns1.blue_to_ns1.yellow",
			`ns1.blue_ovn_cluster_router: policy 1100 inport == "rtos-ns1.blue_worker" && ip4.dst == {10.0.0.0/16} reroute [169.254.128.12]`,
			`ns1.blue_ovn_cluster_router: policy 1100 inport == "rtos-ns1.blue_worker" && ip6.dst == {fd10::/64} reroute [fd69::1:c]`,
		}},
		{"layer3 and layer3", red, blue, worker, links, []string{
			"contribute ns1.blue_ovn_cluster_router.policies 2",
			"contribute ns1.blue_ovn_cluster_router.ports 1",
			"contribute ns1.blue_ovn_cluster_router.static_routes 2",
			"contribute ns1.red_ovn_cluster_router.policies 2",
			"contribute ns1.red_ovn_cluster_router.ports 1",
			"contribute ns1.red_ovn_cluster_router.static_routes 2",
			"ns1.blue_ovn_cluster_router: port plink_ns1.blue_to_ns1.red [169.254.128.6/31 fd69::1:6/127] mac=0a:58:a9:fe:80:06 peer=plink_ns1.red_to_ns1.blue",
			"ns1.blue_ovn_cluster_router: route 13.0.0.0/16 via 169.254.128.7 out plink_ns1.blue_to_ns1.red",
			"ns1.blue_ovn_cluster_router: route fd13::/60 via fd69::1:7 out plink_ns1.blue_to_ns1.red",
			`ns1.blue_ovn_cluster_router: policy 1100 inport == "rtos-ns1.blue_worker" && ip4.dst == {13.0.0.0/16} reroute [169.254.128.7]`,
			`ns1.blue_ovn_cluster_router: policy 1100 inport == "rtos-ns1.blue_worker" && ip6.dst == {fd13::/60} reroute [fd69::1:7]`,
			"ns1.red_ovn_cluster_router: port plink_ns1.red_to_ns1.blue [169.254.128.7/31 fd69::1:7/127] mac=0a:58:a9:fe:80:07 peer=plink_ns1.blue_to_ns1.red",
			"ns1.red_ovn_cluster_router: route 11.0.0.0/16 via 169.254.128.6 out plink_ns1.red_to_ns1.blue",
			"ns1.red_ovn_cluster_router: route fd11::/60 via fd69::1:6 out plink_ns1.red_to_ns1.blue",
			`ns1.red_ovn_cluster_router: policy 1100 inport == "rtos-ns1.red_worker" && ip4.dst == {11.0.0.0/16} reroute [169.254.128.6]`,
			`ns1.red_ovn_cluster_router: policy 1100 inport == "rtos-ns1.red_worker" && ip6.dst == {fd11::/60} reroute [fd69::1:6]`,
		}},
		{"layer2 and layer2", teal, yellow, worker, links, []string{
			"contribute GR_cluster.udn.teal_worker.ports 1",
			"contribute GR_cluster.udn.teal_worker.static_routes 2",
			"contribute GR_ns1.yellow_worker.ports 1",
			"contribute GR_ns1.yellow_worker.static_routes 2",
			"GR_cluster.udn.teal_worker: port plink_cluster.udn.teal_to_ns1.yellow [169.254.128.15/31 fd69::1:f/127] mac=0a:58:a9:fe:80:0f peer=plink_ns1.yellow_to_cluster.udn.teal",
			"GR_cluster.udn.teal_worker: route 10.0.0.0/16 via 169.254.128.14 out plink_cluster.udn.teal_to_ns1.yellow",
			"GR_cluster.udn.teal_worker: route fd10::/64 via fd69::1:e out plink_cluster.udn.teal_to_ns1.yellow",
			"GR_ns1.yellow_worker: port plink_ns1.yellow_to_cluster.udn.teal [169.254.128.14/31 fd69::1:e/127] mac=0a:58:a9:fe:80:0e peer=plink_cluster.udn.teal_to_ns1.yellow",
			"GR_ns1.yellow_worker: route 10.1.0.0/16 via 169.254.128.15 out plink_ns1.yellow_to_cluster.udn.teal",
			"GR_ns1.yellow_worker: route fd10:1::/64 via fd69::1:f out plink_ns1.yellow_to_cluster.udn.teal",
		}},
		{"IPv4-only with a dual-stack peer: an IPv4 link only", green, yellow, worker, links, []string{
			"contribute GR_ns1.yellow_worker.ports 1",
			"contribute GR_ns1.yellow_worker.static_routes 2",
			"contribute ns1.green_ovn_cluster_router.policies 1",
			"contribute ns1.green_ovn_cluster_router.ports 1",
			"contribute ns1.green_ovn_cluster_router.static_routes 1",
			"GR_ns1.yellow_worker: port plink_ns1.yellow_to_ns1.green [169.254.128.20/31] mac=0a:58:a9:fe:80:14 peer=plink_ns1.green_to_ns1.yellow",
			"GR_ns1.yellow_worker: route 12.0.0.0/16 via 169.254.128.21 out plink_ns1.yellow_to_ns1.green",
			"GR_ns1.yellow_worker: route 12.1.0.0/16 via 169.254.128.21 out plink_ns1.yellow_to_ns1.green",
			"ns1.green_ovn_cluster_router: port plink_ns1.green_to_ns1.yellow [169.254.128.21/31] mac=0a:58:a9:fe:80:15 peer=plink_ns1.yellow_to_ns1.green",
			"ns1.green_ovn_cluster_router: route 10.0.0.0/16 via 169.254.128.20 out plink_ns1.green_to_ns1.yellow",
			`ns1.green_ovn_cluster_router: policy 1100 inport == "rtos-ns1.green_worker" && ip4.dst == {10.0.0.0/16} reroute [169.254.128.20]`,
		}},
		{"a peer's subnets of a family in one policy", blue, green, worker, links, []string{
			"contribute ns1.blue_ovn_cluster_router.policies 1",
			"contribute ns1.blue_ovn_cluster_router.ports 1",
			"contribute ns1.blue_ovn_cluster_router.static_routes 2",
			"contribute ns1.green_ovn_cluster_router.policies 1",
			"contribute ns1.green_ovn_cluster_router.ports 1",
			"contribute ns1.green_ovn_cluster_router.static_routes 1",
			"ns1.blue_ovn_cluster_router: port plink_ns1.blue_to_ns1.green [169.254.128.24/31] mac=0a:58:a9:fe:80:18 peer=plink_ns1.green_to_ns1.blue",
			"ns1.blue_ovn_cluster_router: route 12.0.0.0/16 via 169.254.128.25 out plink_ns1.blue_to_ns1.green",
			"ns1.blue_ovn_cluster_router: route 12.1.0.0/16 via 169.254.128.25 out plink_ns1.blue_to_ns1.green",
			`ns1.blue_ovn_cluster_router: policy 1100 inport == "rtos-ns1.blue_worker" && ip4.dst == {12.0.0.0/16, 12.1.0.0/16} reroute [169.254.128.25]`,
			"ns1.green_ovn_cluster_router: port plink_ns1.green_to_ns1.blue [169.254.128.25/31] mac=0a:58:a9:fe:80:19 peer=plink_ns1.blue_to_ns1.green",
			"ns1.green_ovn_cluster_router: route 11.0.0.0/16 via 169.254.128.24 out plink_ns1.green_to_ns1.blue",
			`ns1.green_ovn_cluster_router: policy 1100 inport == "rtos-ns1.green_worker" && ip4.dst == {11.0.0.0/16} reroute [169.254.128.24]`,
		}},
		{"no IPv6 link subnet: IPv4 only, and said so", blue, yellow, worker, links[:1], []string{
			"contribute GR_ns1.yellow_worker.ports 1",
			"contribute GR_ns1.yellow_worker.static_routes 1",
			"contribute ns1.blue_ovn_cluster_router.policies 1",
			"contribute ns1.blue_ovn_cluster_router.ports 1",
			"contribute ns1.blue_ovn_cluster_router.static_routes 1",
			"GR_ns1.yellow_worker: port plink_ns1.yellow_to_ns1.blue [169.254.128.12/31] mac=0a:58:a9:fe:80:0c peer=plink_ns1.blue_to_ns1.yellow",
			"GR_ns1.yellow_worker: route 11.0.0.0/16 via 169.254.128.13 out plink_ns1.yellow_to_ns1.blue",
			"ns1.blue_ovn_cluster_router: port plink_ns1.blue_to_ns1.yellow [169.254.128.13/31] mac=0a:58:a9:fe:80:0d peer=plink_ns1.yellow_to_ns1.blue",
			"ns1.blue_ovn_cluster_router: route 10.0.0.0/16 via 169.254.128.12 out plink_ns1.blue_to_ns1.yellow",
			`ns1.blue_ovn_cluster_router: policy 1100 inport == "rtos-ns1.blue_worker" && ip4.dst == {10.0.0.0/16} reroute [169.254.128.12]`,
			"primary link ns1.blue|ns1.yellow: no primary link subnet of IPv6: the networks' IPv6 subnets are not linked",
		}},
		{"no common family", green, v6only, worker, links, []string{
			"primary link ns1.green|ns1.six: networks ns1.six (IPv6) and ns1.green (IPv4) have no IP family in common",
		}},
		{"a secondary network", blue, secondary, worker, links, []string{
			`primary link ns1.blue|ns1.sec: network ns1.sec: not a primary network (role "secondary")`,
		}},
		{"a Localnet network", yellow, localnet, worker, links, []string{
			"primary link ns1.phys|ns1.yellow: network ns1.phys: a Localnet network has no router to link",
		}},
		{"layer2 side, local node without chassis", blue, yellow, noChassis, links, []string{
			"primary link ns1.blue|ns1.yellow: network ns1.blue: node worker: no chassis ID yet",
			"primary link ns1.blue|ns1.yellow: network ns1.yellow: node worker: no chassis ID yet",
		}},
		{"layer2 side, local node without ID", teal, yellow, noID, links, []string{
			"primary link cluster.udn.teal|ns1.yellow: network cluster.udn.teal: node worker: no node ID yet",
			"primary link cluster.udn.teal|ns1.yellow: network ns1.yellow: node worker: no node ID yet",
		}},
		{"layer3 side without a node subnet yet", blue, yellow, noBlueSlice, links, []string{
			"primary link ns1.blue|ns1.yellow: network ns1.blue: node worker: no subnet of the network yet",
		}},
		{"a network ID outside 1..4095", yellow, zero, worker, links, []string{
			"primary link ns1.yellow|ns1.zero: network ID 0 is outside 1..4095",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Render(Input{A: tc.a, B: tc.b, Local: tc.local, Subnets: tc.subnets})
			if err != nil {
				t.Fatal(err)
			}
			got := summary(t, res)
			if tc.want != nil {
				sort.Strings(tc.want)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s\nall:\n%s", diff, strings.Join(got, "\n"))
				}
			}
			// A and B in the other order render the same, to the row.
			swapped, err := Render(Input{A: tc.b, B: tc.a, Local: tc.local, Subnets: tc.subnets})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(res, swapped); diff != "" {
				t.Errorf("A and B swapped (-given order +swapped):\n%s", diff)
			}
			// Every row says what it belongs to.
			want := map[string]string{LinkKey: pairKey(tc.a.Name, tc.b.Name), topology.ControllerKey: topology.ZoneController, topology.NodeKey: tc.local.Name}
			for _, m := range res.Rows {
				var ext map[string]string
				switch x := m.(type) {
				case *nbdb.LogicalRouterPort:
					ext = x.ExternalIDs
				case *nbdb.LogicalRouterStaticRoute:
					ext = x.ExternalIDs
				case *nbdb.LogicalRouterPolicy:
					ext = x.ExternalIDs
				}
				if diff := cmp.Diff(want, ext); diff != "" {
					t.Errorf("row %s external IDs (-want +got):\n%s", topology.RowID(m), diff)
				}
			}
			// A re-render is identical (nothing to write on a re-plan).
			again, _ := Render(Input{A: tc.a, B: tc.b, Local: tc.local, Subnets: tc.subnets})
			if diff := cmp.Diff(res, again); diff != "" {
				t.Errorf("re-render differs:\n%s", diff)
			}
		})
	}
}

// TestRenderRowIDs pins the row IDs and names of one link (what ovsdbsync
// matches rows by, and what operators see).
func TestRenderRowIDs(t *testing.T) {
	blue := network("ns1.blue", netconf.TopologyLayer3, 5, "11.0.0.0/16")
	yellow := network("ns1.yellow", netconf.TopologyLayer2, 3, "10.0.0.0/16")
	local := nodeinfo.Info{Name: "worker", ID: 2, ChassisID: "ch-1", Gateway: &nodeinfo.ParsedGateway{},
		Subnets: nodeinfo.Subnets{"ns1.blue": {pfx("11.0.2.0/24")}}}
	res, err := Render(Input{A: blue, B: yellow, Local: local, Subnets: config.Default().PrimaryLinkSubnets})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range res.Rows {
		ids = append(ids, topology.RowID(m))
	}
	want := []string{
		"lrp:plink_ns1.blue_to_ns1.yellow",
		"lrp:plink_ns1.yellow_to_ns1.blue",
		`policy:ns1.blue_ovn_cluster_router:1100:inport == "rtos-ns1.blue_worker" && ip4.dst == {10.0.0.0/16}`,
		"route:GR_ns1.yellow_worker::11.0.0.0/16:169.254.128.13",
		"route:ns1.blue_ovn_cluster_router::10.0.0.0/16:169.254.128.12",
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("row IDs (-want +got):\n%s", diff)
	}
	if got := Owner("ns1.yellow", "ns1.blue"); got != "primary-link:ns1.blue|ns1.yellow" || got != Owner("ns1.blue", "ns1.yellow") {
		t.Errorf("Owner = %q, want primary-link:ns1.blue|ns1.yellow in either order", got)
	}
	if Router(blue, "worker") != "ns1.blue_ovn_cluster_router" || Router(yellow, "worker") != "GR_ns1.yellow_worker" {
		t.Errorf("Router: %s, %s", Router(blue, "worker"), Router(yellow, "worker"))
	}
}

func TestRenderErrors(t *testing.T) {
	blue := network("ns1.blue", netconf.TopologyLayer3, 5, "11.0.0.0/16")
	local := nodeinfo.Info{Name: "worker", ID: 2, ChassisID: "ch-1", Gateway: &nodeinfo.ParsedGateway{}}
	if _, err := Render(Input{A: blue, B: blue, Local: local, Subnets: config.Default().PrimaryLinkSubnets}); err == nil {
		t.Error("a network linked with itself: no error")
	}
	other := network("ns1.other", netconf.TopologyLayer3, 6, "12.0.0.0/16")
	if _, err := Render(Input{A: blue, B: other, Subnets: config.Default().PrimaryLinkSubnets}); err == nil {
		t.Error("no local node: no error")
	}
}

func TestLinkAddresses(t *testing.T) {
	links := config.Default().PrimaryLinkSubnets
	str := func(ps []netip.Prefix) string { return fmt.Sprint(ps) }
	for _, tc := range []struct {
		a, b         int
		sideA, sideB string
	}{
		{3, 5, "[169.254.128.12/31 fd69::1:c/127]", "[169.254.128.13/31 fd69::1:d/127]"},               // 3^5 = 6
		{5, 3, "[169.254.128.13/31 fd69::1:d/127]", "[169.254.128.12/31 fd69::1:c/127]"},               // lower ID even, whatever the order
		{1, 2, "[169.254.128.6/31 fd69::1:6/127]", "[169.254.128.7/31 fd69::1:7/127]"},                 // 1^2 = 3
		{4095, 1, "[169.254.159.253/31 fd69::1:1ffd/127]", "[169.254.159.252/31 fd69::1:1ffc/127]"},    // 4094: offsets 8188, 8189
		{4095, 2048, "[169.254.143.255/31 fd69::1:fff/127]", "[169.254.143.254/31 fd69::1:ffe/127]"},   // 2047: offsets 4094, 4095
		{2048, 2047, "[169.254.159.255/31 fd69::1:1fff/127]", "[169.254.159.254/31 fd69::1:1ffe/127]"}, // 4095: the last /31
	} {
		a, b, err := LinkAddresses(links, tc.a, tc.b)
		if err != nil {
			t.Errorf("%d, %d: %v", tc.a, tc.b, err)
			continue
		}
		if str(a) != tc.sideA || str(b) != tc.sideB {
			t.Errorf("%d, %d: %v, %v; want %s, %s", tc.a, tc.b, a, b, tc.sideA, tc.sideB)
		}
	}

	// The links of one router are distinct /31s (and /127s) inside the
	// link subnets, for every peer 1..4095.
	for _, router := range []int{1, 2, 1234, 2048, 4095} {
		seen := map[netip.Prefix]int{}
		for peer := 1; peer <= config.MaxNetworkID; peer++ {
			if peer == router {
				continue
			}
			own, other, err := LinkAddresses(links, router, peer)
			if err != nil {
				t.Fatalf("%d, %d: %v", router, peer, err)
			}
			for i := range own {
				sub := own[i].Masked()
				if sub != other[i].Masked() || own[i].Addr() == other[i].Addr() {
					t.Fatalf("%d, %d: ends %s and %s are not one /31 (/127)", router, peer, own[i], other[i])
				}
				if !links[i].Contains(own[i].Addr()) || !links[i].Contains(other[i].Addr()) || sub.Addr() == links[i].Masked().Addr() {
					t.Fatalf("%d, %d: link %s outside %s or at index 0", router, peer, sub, links[i])
				}
				if prev, dup := seen[sub]; dup {
					t.Fatalf("router %d: peers %d and %d share link %s", router, prev, peer, sub)
				}
				seen[sub] = peer
			}
		}
	}

	for _, tc := range []struct {
		subnets []netip.Prefix
		a, b    int
		want    string
	}{
		{links, 0, 5, "network ID 0 is outside 1..4095"},
		{links, 5, 4096, "network ID 4096 is outside 1..4095"},
		{links, 7, 7, "two networks with ID 7"},
		{[]netip.Prefix{pfx("10.200.0.0/24")}, 200, 100, "link index 172 (network IDs 200 XOR 100) does not fit the primary link subnet 10.200.0.0/24 (it holds indexes up to 127)"},
		{[]netip.Prefix{pfx("10.200.0.0/19"), pfx("10.201.0.0/19")}, 1, 2, "primary link subnets 10.200.0.0/19 and 10.201.0.0/19 are of one IP family"},
	} {
		_, _, err := LinkAddresses(tc.subnets, tc.a, tc.b)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v, %d, %d: err = %v, want %q", tc.subnets, tc.a, tc.b, err, tc.want)
		}
	}
	// A small subnet still holds the small indexes.
	if _, _, err := LinkAddresses([]netip.Prefix{pfx("10.200.0.0/24")}, 100, 1); err != nil {
		t.Errorf("index 101 in a /24: %v", err)
	}
}

func TestPortName(t *testing.T) {
	a := network("ns1.blue", netconf.TopologyLayer3, 1)
	b := network("cluster.udn.green", netconf.TopologyLayer2, 2)
	if got := PortName(a, b); got != "plink_ns1.blue_to_cluster.udn.green" {
		t.Errorf("PortName = %s", got)
	}
	if PortName(a, b) == PortName(b, a) {
		t.Error("both ends have one name")
	}
}

func TestParseOwner(t *testing.T) {
	a, b, ok := ParseOwner(Owner("ns.y", "ns.x"))
	if !ok || a != "ns.x" || b != "ns.y" {
		t.Errorf("ParseOwner(Owner(ns.y, ns.x)) = %q %q %v, want ns.x ns.y", a, b, ok)
	}
	for _, bad := range []string{"net:ns.x", "primary-link:ns.x", "primary-link:|ns.y", "primary-link:ns.x|"} {
		if _, _, ok := ParseOwner(bad); ok {
			t.Errorf("ParseOwner(%q) accepted", bad)
		}
	}
}
