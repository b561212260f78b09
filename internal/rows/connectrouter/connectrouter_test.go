package connectrouter

import (
	"fmt"
	"net/netip"
	"sort"
	gostrings "strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func network(name, topo, subnet string, id int) topology.Network {
	return topology.Network{Name: name, ID: id, Topology: topo, Role: netconf.RolePrimary,
		Subnets: []netconf.Subnet{{CIDR: pfx(subnet)}}}
}

// summary renders rows and contributions as sorted lines an operator would
// read in ovn-nbctl's output.
func summary(r Result) []string {
	var out []string
	for _, m := range r.Rows {
		switch x := m.(type) {
		case *nbdb.LogicalRouter:
			out = append(out, fmt.Sprintf("router %s key=%s ports=%d routes=%d", x.Name, x.Options["requested-tnl-key"], len(x.Ports), len(x.StaticRoutes)))
		case *nbdb.LogicalRouterPort:
			where := ""
			if x.Peer != nil {
				where = "peer=" + *x.Peer
			} else {
				where = "chassis=" + x.Options["requested-chassis"]
			}
			key := ""
			if k, ok := x.Options["requested-tnl-key"]; ok {
				key = " key=" + k
			}
			out = append(out, fmt.Sprintf("port %s %v %s%s", x.Name, x.Networks, where, key))
		case *nbdb.LogicalRouterStaticRoute:
			out = append(out, fmt.Sprintf("route %s via %s", x.IPPrefix, x.Nexthop))
		case *nbdb.LogicalRouterPolicy:
			out = append(out, fmt.Sprintf("policy %d %s reroute %v", x.Priority, x.Match, x.Nexthops))
		case *nbdb.ACL:
			out = append(out, fmt.Sprintf("acl %s tier%d %d %s %s", x.Direction, x.Tier, x.Priority, x.Match, x.Action))
		case *nbdb.AddressSet:
			out = append(out, fmt.Sprintf("address-set of %s %v", x.ExternalIDs[NetworkKey], x.Addresses))
		default:
			out = append(out, fmt.Sprintf("%T", m))
		}
	}
	// Matches name address sets by their contents, not their hashed names.
	for _, m := range r.Rows {
		if x, ok := m.(*nbdb.AddressSet); ok {
			for i := range out {
				out[i] = gostrings.ReplaceAll(out[i], "$"+x.Name, fmt.Sprintf("$%v", x.Addresses))
			}
		}
	}
	for _, c := range r.Contributions {
		out = append(out, fmt.Sprintf("contribute %s.%s %d", gostrings.TrimPrefix(targetName(c.Target), "router/"), c.Column, len(c.Members)))
	}
	out = append(out, r.Problems...)
	sort.Strings(out)
	return out
}

// TestRender renders the seed's three cases (Layer3 only, Layer2 only,
// mixed) in the zone of node "worker" (ID 2) with a remote "worker2" (ID
// 3), with the seed's 192.168.0.0/16 and /24 blocks.
func TestRender(t *testing.T) {
	layout, err := connect.NewLayout([]v1.ConnectSubnet{{CIDR: "192.168.0.0/16", NetworkPrefix: 24}})
	if err != nil {
		t.Fatal(err)
	}
	blue := network("blue.net", netconf.TopologyLayer3, "103.103.0.0/16", 1)
	green := network("green.net", netconf.TopologyLayer3, "104.104.0.0/16", 2)
	yellow := network("yellow.net", netconf.TopologyLayer2, "105.105.0.0/16", 3)
	yellow.TunnelKeys = []int{16715777}
	nodes := []nodeinfo.Info{
		{Name: "worker", Zone: "worker", ID: 2, ChassisID: "ch-1", Subnets: nodeinfo.Subnets{"blue.net": {pfx("103.103.0.0/24")}, "green.net": {pfx("104.104.0.0/24")}}},
		{Name: "worker2", Zone: "worker2", ID: 3, ChassisID: "ch-2", Subnets: nodeinfo.Subnets{"blue.net": {pfx("103.103.1.0/24")}, "green.net": {pfx("104.104.1.0/24")}}},
	}
	blueM := Member{Network: blue, Slice: connect.Slice{V4: pfx("192.168.0.0/24")}}
	greenM := Member{Network: green, Slice: connect.Slice{V4: pfx("192.168.1.0/24")}}
	yellowM := Member{Network: yellow, Slice: connect.Slice{V4: pfx("192.168.2.2/31")}}
	for _, tc := range []struct {
		name    string
		members []Member
		nodes   []nodeinfo.Info
		want    []string
	}{
		{"layer3 only", []Member{greenM, blueM}, nodes, []string{
			"contribute blue.net_ovn_cluster_router.policies 1",
			"contribute blue.net_ovn_cluster_router.ports 1",
			"contribute green.net_ovn_cluster_router.policies 1",
			"contribute green.net_ovn_cluster_router.ports 1",
			"address-set of blue.net [104.104.0.0/16]",
			`policy 9001 inport == "rtos-blue.net_worker" && ip4.dst == $[104.104.0.0/16] reroute [192.168.0.5]`,
			"address-set of green.net [103.103.0.0/16]",
			`policy 9001 inport == "rtos-green.net_worker" && ip4.dst == $[103.103.0.0/16] reroute [192.168.1.5]`,
			"port blue.net_worker-to-cc [192.168.0.4/31] peer=cc-to-blue.net_worker",
			"port cc-to-blue.net_worker [192.168.0.5/31] peer=blue.net_worker-to-cc key=2",
			"port cc-to-blue.net_worker2 [192.168.0.7/31] chassis=ch-2 key=3",
			"port cc-to-green.net_worker [192.168.1.5/31] peer=green.net_worker-to-cc key=130",
			"port cc-to-green.net_worker2 [192.168.1.7/31] chassis=ch-2 key=131",
			"port green.net_worker-to-cc [192.168.1.4/31] peer=cc-to-green.net_worker",
			"route 103.103.0.0/24 via 192.168.0.4",
			"route 103.103.1.0/24 via 192.168.0.6",
			"route 104.104.0.0/24 via 192.168.1.4",
			"route 104.104.1.0/24 via 192.168.1.6",
			"router connect-router-cc key=16715800 ports=4 routes=4",
		}},
		{"layer2 only", []Member{yellowM, {Network: network("teal.net", netconf.TopologyLayer2, "106.106.0.0/16", 4), Slice: connect.Slice{V4: pfx("192.168.2.4/31")}}}, nodes, []string{
			"contribute teal.net_transit_router.policies 1",
			"contribute teal.net_transit_router.ports 1",
			"contribute yellow.net_transit_router.policies 1",
			"contribute yellow.net_transit_router.ports 1",
			"address-set of teal.net [105.105.0.0/16]",
			`policy 9001 inport == "trtos-teal.net_ovn_layer2_switch" && ip4.dst == $[105.105.0.0/16] reroute [192.168.2.5]`,
			"address-set of yellow.net [106.106.0.0/16]",
			`policy 9001 inport == "trtos-yellow.net_ovn_layer2_switch" && ip4.dst == $[106.106.0.0/16] reroute [192.168.2.3]`,
			"port cc-to-teal.net [192.168.2.5/31] peer=teal.net-to-cc key=258",
			"port cc-to-yellow.net [192.168.2.3/31] peer=yellow.net-to-cc key=257",
			"port teal.net-to-cc [192.168.2.4/31] peer=cc-to-teal.net",
			"port yellow.net-to-cc [192.168.2.2/31] peer=cc-to-yellow.net",
			"route 105.105.0.0/16 via 192.168.2.2",
			"route 106.106.0.0/16 via 192.168.2.4",
			"router connect-router-cc key=16715800 ports=2 routes=2",
		}},
		{"mixed", []Member{blueM, yellowM}, nodes, []string{
			"contribute blue.net_ovn_cluster_router.policies 1",
			"contribute blue.net_ovn_cluster_router.ports 1",
			"contribute yellow.net_transit_router.policies 1",
			"contribute yellow.net_transit_router.ports 1",
			"address-set of blue.net [105.105.0.0/16]",
			`policy 9001 inport == "rtos-blue.net_worker" && ip4.dst == $[105.105.0.0/16] reroute [192.168.0.5]`,
			"address-set of yellow.net [103.103.0.0/16]",
			`policy 9001 inport == "trtos-yellow.net_ovn_layer2_switch" && ip4.dst == $[103.103.0.0/16] reroute [192.168.2.3]`,
			"port blue.net_worker-to-cc [192.168.0.4/31] peer=cc-to-blue.net_worker",
			"port cc-to-blue.net_worker [192.168.0.5/31] peer=blue.net_worker-to-cc key=2",
			"port cc-to-blue.net_worker2 [192.168.0.7/31] chassis=ch-2 key=3",
			"port cc-to-yellow.net [192.168.2.3/31] peer=yellow.net-to-cc key=257",
			"port yellow.net-to-cc [192.168.2.2/31] peer=cc-to-yellow.net",
			"route 103.103.0.0/24 via 192.168.0.4",
			"route 103.103.1.0/24 via 192.168.0.6",
			"route 105.105.0.0/16 via 192.168.2.2",
			"router connect-router-cc key=16715800 ports=3 routes=3",
		}},
		{"a node whose ID does not fit is left out, and said so", []Member{blueM, yellowM}, append(nodes[:1:1],
			nodeinfo.Info{Name: "far", Zone: "far", ID: 200, ChassisID: "ch-9", Subnets: nodeinfo.Subnets{"blue.net": {pfx("103.103.9.0/24")}}}), []string{
			"contribute blue.net_ovn_cluster_router.policies 1",
			"contribute blue.net_ovn_cluster_router.ports 1",
			"contribute yellow.net_transit_router.policies 1",
			"contribute yellow.net_transit_router.ports 1",
			"network blue.net, node far: node ID 200 does not fit a block of 192.168.0.0/16 (/24 per network): it holds node IDs 1 to 127",
			"address-set of blue.net [105.105.0.0/16]",
			`policy 9001 inport == "rtos-blue.net_worker" && ip4.dst == $[105.105.0.0/16] reroute [192.168.0.5]`,
			"address-set of yellow.net [103.103.0.0/16]",
			`policy 9001 inport == "trtos-yellow.net_ovn_layer2_switch" && ip4.dst == $[103.103.0.0/16] reroute [192.168.2.3]`,
			"port blue.net_worker-to-cc [192.168.0.4/31] peer=cc-to-blue.net_worker",
			"port cc-to-blue.net_worker [192.168.0.5/31] peer=blue.net_worker-to-cc key=2",
			"port cc-to-yellow.net [192.168.2.3/31] peer=yellow.net-to-cc key=257",
			"port yellow.net-to-cc [192.168.2.2/31] peer=cc-to-yellow.net",
			"route 103.103.0.0/24 via 192.168.0.4",
			"route 105.105.0.0/16 via 192.168.2.2",
			"router connect-router-cc key=16715800 ports=2 routes=2",
		}},
		{"blue active only on worker2: its link there and the route to its slice, nothing of it here", []Member{
			{Network: blue, Slice: blueM.Slice, Active: activity.On("worker2")}, yellowM}, nodes, []string{
			"contribute yellow.net_transit_router.policies 1",
			"contribute yellow.net_transit_router.ports 1",
			"address-set of yellow.net [103.103.0.0/16]",
			`policy 9001 inport == "trtos-yellow.net_ovn_layer2_switch" && ip4.dst == $[103.103.0.0/16] reroute [192.168.2.3]`,
			"port cc-to-blue.net_worker2 [192.168.0.7/31] chassis=ch-2 key=3",
			"port cc-to-yellow.net [192.168.2.3/31] peer=yellow.net-to-cc key=257",
			"port yellow.net-to-cc [192.168.2.2/31] peer=cc-to-yellow.net",
			"route 103.103.1.0/24 via 192.168.0.6",
			"route 105.105.0.0/16 via 192.168.2.2",
			"router connect-router-cc key=16715800 ports=2 routes=2",
		}},
		{"blue active only here, yellow nowhere: no link to worker2, nothing of yellow", []Member{
			{Network: blue, Slice: blueM.Slice, Active: activity.On("worker")}, {Network: yellow, Slice: yellowM.Slice, Active: activity.On()}}, nodes, []string{
			"contribute blue.net_ovn_cluster_router.policies 1",
			"contribute blue.net_ovn_cluster_router.ports 1",
			"address-set of blue.net [105.105.0.0/16]",
			`policy 9001 inport == "rtos-blue.net_worker" && ip4.dst == $[105.105.0.0/16] reroute [192.168.0.5]`,
			"port blue.net_worker-to-cc [192.168.0.4/31] peer=cc-to-blue.net_worker",
			"port cc-to-blue.net_worker [192.168.0.5/31] peer=blue.net_worker-to-cc key=2",
			"route 103.103.0.0/24 via 192.168.0.4",
			"router connect-router-cc key=16715800 ports=1 routes=1",
		}},
		{"no local node: nothing", []Member{blueM, yellowM}, nodes[1:], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Render(Input{Name: "cc", TunnelKey: 16715800, Layout: layout, Members: tc.members, Nodes: tc.nodes, Zone: "worker"})
			if err != nil {
				t.Fatal(err)
			}
			sort.Strings(tc.want)
			if diff := cmp.Diff(tc.want, summary(res)); diff != "" {
				t.Errorf("(-want +got):\n%s\nall:\n%s", diff, gostrings.Join(summary(res), "\n"))
			}
			// Every contributed member is one of the rendered rows.
			ids := map[string]bool{}
			for _, r := range res.Rows {
				ids[topology.RowID(r)] = true
			}
			for _, c := range res.Contributions {
				for _, m := range c.Members {
					if !ids[m] {
						t.Errorf("contribution to %s names %s, not rendered", c.Column, m)
					}
				}
			}
		})
	}
}

// TestRenderServicesOnly renders the seed's "Case3" (ClusterIPServiceNetwork
// without PodNetwork): the same router, ports, routes and reroutes as for
// pods, plus on each network's pod switch a pass toward the service CIDRs,
// a drop of new connections toward the other networks only (never the
// network's own subnet), and the node's allow-related.
func TestRenderServicesOnly(t *testing.T) {
	layout, err := connect.NewLayout([]v1.ConnectSubnet{{CIDR: "192.168.0.0/16", NetworkPrefix: 24}, {CIDR: "fd00:192::/112", NetworkPrefix: 120}})
	if err != nil {
		t.Fatal(err)
	}
	blue := topology.Network{Name: "blue", ID: 1, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary,
		Subnets: []netconf.Subnet{{CIDR: pfx("103.103.0.0/16")}, {CIDR: pfx("fd03::/60")}}}
	yellow := topology.Network{Name: "yellow", ID: 3, Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary,
		Subnets: []netconf.Subnet{{CIDR: pfx("105.105.0.0/16")}}}
	nodes := []nodeinfo.Info{{Name: "worker", Zone: "worker", ID: 2, ChassisID: "ch-1",
		Subnets: nodeinfo.Subnets{"blue": {pfx("103.103.0.0/24"), pfx("fd03:0:0:2::/64")}}}}
	res, err := Render(Input{Name: "cc", TunnelKey: 16715800, Layout: layout, Nodes: nodes, Zone: "worker",
		Members: []Member{
			{Network: blue, Slice: connect.Slice{V4: pfx("192.168.0.0/24"), V6: pfx("fd00:192::/120")}},
			{Network: yellow, Slice: connect.Slice{V4: pfx("192.168.1.2/31"), V6: pfx("fd00:192::102/127")}},
		},
		ServicesOnly: true, ServiceCIDRs: []netip.Prefix{pfx("10.96.0.0/16"), pfx("fd00:10:96::/112")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range summary(res) {
		if gostrings.HasPrefix(l, "acl ") || gostrings.HasPrefix(l, "address-set ") || gostrings.Contains(l, ".acls ") {
			got = append(got, l)
		}
	}
	want := []string{
		"acl from-lport tier0 4950 ip4.dst == $[105.105.0.0/16] && ct.new drop",
		"acl from-lport tier0 4950 ip4.dst == $[103.103.0.0/16] && ct.new drop",
		"acl from-lport tier0 4950 ip6.dst == $[fd03::/60] && ct.new drop",
		"acl from-lport tier0 5000 ip4.dst == 10.96.0.0/16 || ip6.dst == fd00:10:96::/112 pass",
		"acl to-lport tier0 4900 ip4.src == 103.103.0.2 allow-related",
		"acl to-lport tier0 4900 ip4.src == 105.105.0.2 allow-related",
		"acl to-lport tier0 4900 ip6.src == fd03:0:0:2::2 allow-related",
		"address-set of blue [105.105.0.0/16]",
		"address-set of yellow [103.103.0.0/16]",
		"address-set of yellow [fd03::/60]",
		"contribute switch/blue_worker.acls 4",
		"contribute switch/yellow_ovn_layer2_switch.acls 4",
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s\nall:\n%s", diff, gostrings.Join(summary(res), "\n"))
	}
	// Without ServicesOnly, no ACL.
	pods, _ := Render(Input{Name: "cc", TunnelKey: 16715800, Layout: layout, Nodes: nodes, Zone: "worker",
		Members: []Member{{Network: blue, Slice: connect.Slice{V4: pfx("192.168.0.0/24"), V6: pfx("fd00:192::/120")}}, {Network: yellow, Slice: connect.Slice{V4: pfx("192.168.1.2/31")}}}})
	for _, l := range summary(pods) {
		if gostrings.HasPrefix(l, "acl ") {
			t.Errorf("pod connectivity renders %s", l)
		}
	}
}

// TestReroutesGrowWithNetworks: each network's router gets one reroute per
// family whatever the number of networks it is connected to, matching the
// set of the others' subnets.
func TestReroutesGrowWithNetworks(t *testing.T) {
	layout, err := connect.NewLayout([]v1.ConnectSubnet{{CIDR: "192.168.0.0/16", NetworkPrefix: 24}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []nodeinfo.Info{{Name: "worker", Zone: "worker", ID: 2, ChassisID: "ch-1", Subnets: nodeinfo.Subnets{}}}
	var members []Member
	for i := range 5 {
		n := network(fmt.Sprintf("n%d", i), netconf.TopologyLayer3, fmt.Sprintf("10.%d.0.0/16", i), i+1)
		nodes[0].Subnets[n.Name] = []netip.Prefix{pfx(fmt.Sprintf("10.%d.0.0/24", i))}
		members = append(members, Member{Network: n, Slice: layout.Block(i)})
	}
	res, err := Render(Input{Name: "cc", TunnelKey: 7, Layout: layout, Members: members, Nodes: nodes, Zone: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	policies := 0
	for _, l := range summary(res) {
		if gostrings.HasPrefix(l, "policy ") {
			policies++
		}
		if gostrings.HasPrefix(l, "policy ") && gostrings.HasPrefix(l, `policy 9001 inport == "rtos-n0_worker"`) &&
			!gostrings.Contains(l, "$[10.1.0.0/16 10.2.0.0/16 10.3.0.0/16 10.4.0.0/16]") {
			t.Errorf("n0's reroute does not match the four others: %s", l)
		}
	}
	if policies != 5 {
		t.Errorf("%d reroutes for 5 networks, want 5:\n%s", policies, gostrings.Join(summary(res), "\n"))
	}
}

// TestRenderLayer2OldTopology: while any node is at the old Layer2
// topology, a Layer2 member is left out in every zone, with the reason
// (its pods on that node could not answer through the connect router);
// the Layer3 members are connected as usual.
func TestRenderLayer2OldTopology(t *testing.T) {
	layout, err := connect.NewLayout([]v1.ConnectSubnet{{CIDR: "192.168.0.0/16", NetworkPrefix: 24}})
	if err != nil {
		t.Fatal(err)
	}
	blue := network("blue.net", netconf.TopologyLayer3, "103.103.0.0/16", 1)
	yellow := network("yellow.net", netconf.TopologyLayer2, "105.105.0.0/16", 3)
	yellow.TunnelKeys = []int{16715777}
	nodes := []nodeinfo.Info{
		{Name: "worker", Zone: "worker", ID: 2, ChassisID: "ch-1", Subnets: nodeinfo.Subnets{"blue.net": {pfx("103.103.0.0/24")}}},
		{Name: "worker2", Zone: "worker2", ID: 3, ChassisID: "ch-2", Subnets: nodeinfo.Subnets{"blue.net": {pfx("103.103.1.0/24")}}, Layer2V1: true},
	}
	res, err := Render(Input{Name: "cc", TunnelKey: 16715800, Layout: layout, Nodes: nodes, Zone: "worker", Members: []Member{
		{Network: blue, Slice: connect.Slice{V4: pfx("192.168.0.0/24")}}, {Network: yellow, Slice: connect.Slice{V4: pfx("192.168.2.2/31")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 1 || !gostrings.Contains(res.Problems[0], "yellow.net: node worker2 is at the old Layer2 topology") {
		t.Errorf("problems %q, want yellow.net's naming worker2", res.Problems)
	}
	all := gostrings.Join(summary(res), "\n")
	if gostrings.Contains(all, "yellow.net-to-cc") || !gostrings.Contains(all, "blue.net_worker-to-cc") {
		t.Errorf("yellow.net connected, or blue.net not:\n%s", all)
	}
}
