package dot

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

func ptr[T any](v T) *T { return &v }

// tinyRows are a network "net" in zone n1, hand-built: a gateway router
// joined to a cluster router, a node switch with a pod, a transit switch
// with another node's port, an external switch with a localnet port, and a
// transit router linked to the gateway router directly (peer) and to another
// node's gateway router.
func tinyRows() []model.Model {
	node := map[string]string{topology.NodeKey: "n1"}
	return []model.Model{
		&nbdb.LogicalRouter{UUID: "lr:GR_net_n1", Name: "GR_net_n1", Options: map[string]string{"chassis": "ch1"},
			Ports: []string{"lrp:rtoj-GR_net_n1", "lrp:rtoe-GR_net_n1", "lrp:rtotr-GR_net_n1"}},
		&nbdb.LogicalRouterPort{UUID: "lrp:rtoj-GR_net_n1", Name: "rtoj-GR_net_n1", Networks: []string{"100.65.0.2/16"}},
		&nbdb.LogicalRouterPort{UUID: "lrp:rtoe-GR_net_n1", Name: "rtoe-GR_net_n1", Networks: []string{"172.18.0.10/16"}},
		&nbdb.LogicalRouterPort{UUID: "lrp:rtotr-GR_net_n1", Name: "rtotr-GR_net_n1", Networks: []string{"100.88.0.5/31"}, Peer: ptr("trtor-GR_net_n1")},
		&nbdb.LogicalRouter{UUID: "lr:net_ovn_cluster_router", Name: "net_ovn_cluster_router",
			Ports: []string{"lrp:rtoj-net_ovn_cluster_router", "lrp:rtos-net_n1"}, StaticRoutes: []string{"route:1", "route:2"}},
		&nbdb.LogicalRouterPort{UUID: "lrp:rtoj-net_ovn_cluster_router", Name: "rtoj-net_ovn_cluster_router", Networks: []string{"100.65.0.1/16"}},
		&nbdb.LogicalRouterPort{UUID: "lrp:rtos-net_n1", Name: "rtos-net_n1", Networks: []string{"fd00::1/64", "10.1.0.1/24"}},
		&nbdb.LogicalRouterStaticRoute{UUID: "route:1", IPPrefix: "10.1.1.0/24", Nexthop: "100.88.0.3"},
		&nbdb.LogicalRouterStaticRoute{UUID: "route:2", IPPrefix: "10.1.0.0/24", Nexthop: "100.88.0.3", Policy: ptr(nbdb.LogicalRouterStaticRoutePolicySrcIP)},
		&nbdb.LogicalRouter{UUID: "lr:net_transit_router", Name: "net_transit_router",
			Ports: []string{"lrp:trtor-GR_net_n1", "lrp:trtor-GR_net_n2"}, StaticRoutes: []string{"route:3"}},
		&nbdb.LogicalRouterPort{UUID: "lrp:trtor-GR_net_n1", Name: "trtor-GR_net_n1", Networks: []string{"100.88.0.4/31"}, Peer: ptr("rtotr-GR_net_n1")},
		&nbdb.LogicalRouterPort{UUID: "lrp:trtor-GR_net_n2", Name: "trtor-GR_net_n2", Networks: []string{"100.88.0.6/31"},
			Options: map[string]string{"requested-chassis": "ch2"}},
		&nbdb.LogicalRouterStaticRoute{UUID: "route:3", IPPrefix: "100.65.0.3/32", Nexthop: "100.88.0.7"},
		&nbdb.LogicalSwitch{UUID: "ls:net_join", Name: "net_join", Ports: []string{"lsp:jtor-GR_net_n1", "lsp:jtor-net_ovn_cluster_router"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:jtor-GR_net_n1", Name: "jtor-GR_net_n1", Type: "router", Addresses: []string{"router"},
			Options: map[string]string{"router-port": "rtoj-GR_net_n1"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:jtor-net_ovn_cluster_router", Name: "jtor-net_ovn_cluster_router", Type: "router", Addresses: []string{"router"},
			Options: map[string]string{"router-port": "rtoj-net_ovn_cluster_router"}},
		&nbdb.LogicalSwitch{UUID: "ls:net_n1", Name: "net_n1", ExternalIDs: node, Ports: []string{"lsp:stor-net_n1", "lsp:net_ns_a"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:stor-net_n1", Name: "stor-net_n1", Type: "router", Addresses: []string{"router"},
			Options: map[string]string{"router-port": "rtos-net_n1"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:net_ns_a", Name: "net_ns_a", Addresses: []string{"0a:58:0a:01:00:03 10.1.0.3"}},
		&nbdb.LogicalSwitch{UUID: "ls:net_transit_switch", Name: "net_transit_switch", Ports: []string{"lsp:tstor-net_n2"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:tstor-net_n2", Name: "tstor-net_n2", Type: "remote", Addresses: []string{"0a:58:64:58:00:03 100.88.0.3/16"},
			Options: map[string]string{"requested-chassis": "ch2"}},
		&nbdb.LogicalSwitch{UUID: "ls:ext_net_n1", Name: "ext_net_n1", ExternalIDs: node, Ports: []string{"lsp:net_breth0_n1", "lsp:etor-GR_net_n1"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:net_breth0_n1", Name: "net_breth0_n1", Type: "localnet", Addresses: []string{"unknown"},
			Options: map[string]string{"network_name": "physnet"}, TagRequest: ptr(10)},
		&nbdb.LogicalSwitchPort{UUID: "lsp:etor-GR_net_n1", Name: "etor-GR_net_n1", Type: "router", Addresses: []string{"router"},
			Options: map[string]string{"router-port": "rtoe-GR_net_n1"}},
		&nbdb.LoadBalancerGroup{UUID: "lbg:net_clusterLBGroup", Name: "net_clusterLBGroup"},
	}
}

func tinyZones(rows []model.Model) []Zone {
	subnet, err := netconf.ParseSubnet("10.1.0.0/16/24", true)
	if err != nil {
		panic(err)
	}
	return []Zone{{Name: "z", Networks: []Network{
		{Definition: topology.Network{Name: "net", Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary, Subnets: []netconf.Subnet{subnet}}, Rows: rows},
		{Definition: topology.Network{Name: "held"}, NotRendered: "NAD ns/held: bad config"},
	}}}
}

func TestDotTinyNetwork(t *testing.T) {
	got := Graph(tinyZones(tinyRows()))
	for _, tc := range []struct {
		what, want string
	}{
		{"zone cluster", "subgraph cluster_0 {\n\t\tlabel=\"zone z\";"},
		{"network cluster: name, topology, role, subnets", "subgraph cluster_0_0 {\n\t\t\tlabel=\"network net\\nlayer3 primary\\nsubnets 10.1.0.0/16/24\";"},
		{"gateway router", "<b>GR_net_n1</b><br/>gateway router on ch1</td>"},
		{"cluster router", "<b>net_ovn_cluster_router</b><br/>cluster router</td>"},
		{"transit router", "<b>net_transit_router</b><br/>transit router</td>"},
		{"join switch", "<b>net_join</b><br/>join switch</td>"},
		{"node switch", "<b>net_n1</b><br/>node switch</td>"},
		{"transit switch", "<b>net_transit_switch</b><br/>transit switch</td>"},
		{"external switch", "<b>ext_net_n1</b><br/>external switch</td>"},
		{"router port networks, sorted", `<td port="rtos-net_n1">rtos-net_n1<br/>10.1.0.1/24<br/>fd00::1/64</td>`},
		{"pod port addresses", `<td port="net_ns_a">net_ns_a<br/>0a:58:0a:01:00:03 10.1.0.3</td>`},
		{"remote switch port: chassis, addresses, the slice routed to it (not src-ip routes)",
			`<td port="tstor-net_n2" bgcolor="#eeeeee">tstor-net_n2<br/>remote on ch2<br/>0a:58:64:58:00:03 100.88.0.3/16<br/>routes 10.1.1.0/24</td>`},
		{"remote router port: chassis, networks, what is routed to the other end",
			`<td port="trtor-GR_net_n2" bgcolor="#eeeeee">trtor-GR_net_n2<br/>remote on ch2<br/>100.88.0.6/31<br/>routes 100.65.0.3/32</td>`},
		{"localnet port", `<td port="net_breth0_n1">net_breth0_n1<br/>localnet physnet vlan 10</td>`},
		{"router-type switch port without addresses", `<td port="stor-net_n1">stor-net_n1</td>`},
		{"physical network", `"z/net/physnet:physnet" [shape=ellipse style=dashed label="physical network\nphysnet"];`},
		{"edge physical network - localnet port", `"z/net/physnet:physnet" -- "z/net/ls:ext_net_n1":"net_breth0_n1";`},
		{"edge external switch - gateway router", `"z/net/ls:ext_net_n1":"etor-GR_net_n1" -- "z/net/lr:GR_net_n1":"rtoe-GR_net_n1";`},
		{"edge gateway router - join switch", `"z/net/lr:GR_net_n1":"rtoj-GR_net_n1" -- "z/net/ls:net_join":"jtor-GR_net_n1";`},
		{"edge join switch - cluster router", `"z/net/ls:net_join":"jtor-net_ovn_cluster_router" -- "z/net/lr:net_ovn_cluster_router":"rtoj-net_ovn_cluster_router";`},
		{"edge cluster router - node switch", `"z/net/lr:net_ovn_cluster_router":"rtos-net_n1" -- "z/net/ls:net_n1":"stor-net_n1";`},
		{"edge gateway router - transit router (peers)", `"z/net/lr:GR_net_n1":"rtotr-GR_net_n1" -- "z/net/lr:net_transit_router":"trtor-GR_net_n1";`},
		{"a network not rendered", `"z/held/note" [shape=note label="not rendered: NAD ns/held: bad config"];`},
	} {
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: no %s", tc.what, tc.want)
		}
	}
	if n := strings.Count(got, " -- "); n != 6 {
		t.Errorf("%d edges, want 6 (a router-router link once, not from each end)", n)
	}
	if strings.Contains(got, "clusterLBGroup") {
		t.Error("a load balancer group is drawn")
	}
	if t.Failed() {
		t.Log(got)
	}
	checkReferences(t, got)
}

// TestDotDeterministic: the rows' order does not change the text.
func TestDotDeterministic(t *testing.T) {
	rows := tinyRows()
	want := Graph(tinyZones(rows))
	slices.Reverse(rows)
	if got := Graph(tinyZones(rows)); got != want {
		t.Errorf("reversed rows give another graph:\n%s\nwant:\n%s", got, want)
	}
}

// TestDotQuoting: quotes and HTML in names do not break the syntax.
func TestDotQuoting(t *testing.T) {
	rows := []model.Model{
		&nbdb.LogicalSwitch{UUID: `ls:a"b`, Name: `a"b<c>&`, Ports: []string{"lsp:p"}},
		&nbdb.LogicalSwitchPort{UUID: "lsp:p", Name: `p"<1>`, Addresses: []string{"x"}},
	}
	got := Graph([]Zone{{Name: "z", Networks: []Network{{Definition: topology.Network{Name: `n"1`}, Rows: rows}}}})
	for _, want := range []string{
		`label="network n\"1";`,
		`"z/n\"1/ls:a\"b" [label=<`,
		`<b>a&#34;b&lt;c&gt;&amp;</b>`,
		`<td port="p&#34;&lt;1&gt;">`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in\n%s", want, got)
		}
	}
}

// TestDotGoldenReferences: every edge of render's golden (three topologies,
// two zones) and of the pictures in docs/images ends at a declared node and
// port.
func TestDotGoldenReferences(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "docs", "images", "*.dot"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{filepath.Join("..", "testdata", "two-nodes.dot")}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(path), func(t *testing.T) { checkReferences(t, string(b)) })
	}
}

var (
	declRE = regexp.MustCompile(`(?m)^\t+("(?:[^"\\]|\\.)*") \[(label=<|shape=)`)
	portRE = regexp.MustCompile(`<td port="([^"]*)"`)
	endRE  = regexp.MustCompile(`("(?:[^"\\]|\\.)*")(?::"([^"]*)")?`)
	edgeRE = regexp.MustCompile(`(?m)^\t+(.*) -- (.*);$`)
)

// checkReferences fails when an edge names a node or port no node declares,
// or braces do not balance: what Graphviz would reject or draw wrongly.
func checkReferences(t *testing.T, text string) {
	t.Helper()
	if strings.Count(text, "{") != strings.Count(text, "}") {
		t.Error("braces do not balance")
	}
	ports := map[string]map[string]bool{}
	decls := declRE.FindAllStringSubmatchIndex(text, -1)
	for i, d := range decls {
		id := text[d[2]:d[3]]
		end := len(text)
		if i+1 < len(decls) {
			end = decls[i+1][0]
		}
		ports[id] = map[string]bool{}
		for _, p := range portRE.FindAllStringSubmatch(text[d[0]:end], -1) {
			ports[id][p[1]] = true
		}
	}
	edges := edgeRE.FindAllStringSubmatch(text, -1)
	if len(edges) == 0 {
		t.Error("no edges")
	}
	for _, e := range edges {
		for _, side := range e[1:] {
			m := endRE.FindStringSubmatch(side)
			if m == nil || m[0] != side {
				t.Errorf("edge end %s is malformed", side)
				continue
			}
			if p, ok := ports[m[1]]; !ok {
				t.Errorf("edge end %s: no node %s", side, m[1])
			} else if m[2] != "" && !p[m[2]] {
				t.Errorf("edge end %s: node %s has no port %s", side, m[1], m[2])
			}
		}
	}
}
