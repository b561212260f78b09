package egressip

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func network(name, topo, role string) topology.Network {
	return topology.Network{Name: name, ID: 7, Topology: topo, Role: role,
		Subnets: []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.128.0.0/16")}},
		Join:    []netip.Prefix{netip.MustParsePrefix("100.65.0.0/16")},
		Transit: []netip.Prefix{netip.MustParsePrefix("100.88.0.0/16")}}
}

// summary renders a result as the lines an operator reads in ovn-nbctl's
// lr-policy-list and lr-nat-list, each with its router, sorted.
func summary(t *testing.T, r Result) []string {
	t.Helper()
	router := map[string]string{}
	for _, c := range r.Contributions {
		lr := c.Target.(*nbdb.LogicalRouter)
		for _, m := range c.Members {
			router[m] = lr.Name + "." + c.Column
		}
	}
	var out []string
	for _, m := range r.Rows {
		on, ok := router[topology.RowID(m)]
		if !ok {
			t.Errorf("row %s is contributed to no router", topology.RowID(m))
		}
		switch x := m.(type) {
		case *nbdb.LogicalRouterPolicy:
			out = append(out, fmt.Sprintf("%s: %d %s %s %s [%s]", on, x.Priority, x.Match, x.Action, strings.Join(x.Nexthops, ","), x.ExternalIDs[ObjectKey]))
		case *nbdb.LogicalRouterStaticRoute:
			out = append(out, fmt.Sprintf("%s: %s %s via %s [%s]", on, *x.Policy, x.IPPrefix, x.Nexthop, x.ExternalIDs[ObjectKey]))
		case *nbdb.NAT:
			out = append(out, fmt.Sprintf("%s: %s %s -> %s %s [%s]", on, x.Type, x.LogicalIP, x.ExternalIP, x.Match, x.ExternalIDs[ObjectKey]))
		}
	}
	sort.Strings(out)
	return append(out, r.Problems...)
}

// TestRender: one EgressIP with two egress IPs on node2 and node3 selecting
// a pod on node1 and one on node2, rendered in each node's zone, on a
// Layer3, a Layer2 and the default network, as the seeds lay the rows out.
func TestRender(t *testing.T) {
	ids := map[string]int{"node1": 1, "node2": 2, "node3": 3}
	nodeIPs := []netip.Addr{addr("192.168.100.11"), addr("192.168.100.12"), addr("192.168.100.13")}
	e1 := Object{Name: "e1",
		Assignments: []Assignment{{Node: "node2", IP: addr("192.168.100.200")}, {Node: "node3", IP: addr("192.168.100.201")}},
		Pods: []Pod{{Namespace: "ns", Name: "p1", Node: "node1", IPs: []netip.Addr{addr("10.128.1.5")}},
			{Namespace: "ns", Name: "p2", Node: "node2", IPs: []netip.Addr{addr("10.128.2.6")}}}}
	l3, l2 := network("ns.tenant", netconf.TopologyLayer3, netconf.RolePrimary), network("ns.tenant", netconf.TopologyLayer2, netconf.RolePrimary)
	def := network(nodeinfo.DefaultNetwork, netconf.TopologyLayer3, netconf.RolePrimary)
	allowsL3 := []string{
		"ns.tenant_ovn_cluster_router.policies: 102 ip4.src == {10.128.0.0/16} && ip4.dst == {10.128.0.0/16} allow  []",
		"ns.tenant_ovn_cluster_router.policies: 102 ip4.src == {10.128.0.0/16} && ip4.dst == {100.65.0.0/16} allow  []",
		"ns.tenant_ovn_cluster_router.policies: 102 ip4.src == {10.128.0.0/16} && ip4.dst == {192.168.100.11, 192.168.100.12, 192.168.100.13} allow  []",
	}
	allowsL2 := []string{
		"ns.tenant_transit_router.policies: 102 ip4.src == {10.128.0.0/16} && ip4.dst == {10.128.0.0/16} allow  []",
		"ns.tenant_transit_router.policies: 102 ip4.src == {10.128.0.0/16} && ip4.dst == {100.65.0.0/16} allow  []",
		"ns.tenant_transit_router.policies: 102 ip4.src == {10.128.0.0/16} && ip4.dst == {192.168.100.11, 192.168.100.12, 192.168.100.13} allow  []",
	}
	const outports = `outport == "rtoe-GR_ns.tenant_node2"`
	for _, tc := range []struct {
		name     string
		network  topology.Network
		node     string
		objects  []Object
		uplinks  []Uplink
		rendered []string
		old      []string // nodes at the old Layer2 topology
		want     []string
	}{{
		name: "Layer3, the pod's zone: ECMP to both egress nodes' transit switch addresses", network: l3, node: "node1", objects: []Object{e1},
		want: append([]string{
			"ns.tenant_ovn_cluster_router.policies: 100 ip4.src == 10.128.1.5 reroute 100.88.0.2,100.88.0.3 [e1]",
		}, allowsL3...),
	}, {
		name: "Layer3, an egress node's zone: its own pod to its gateway router or the other node, a remote pod routed by source to its gateway router, both SNATed", network: l3, node: "node2", objects: []Object{e1},
		want: append([]string{
			"GR_ns.tenant_node2.nat: snat 10.128.1.5/32 -> 192.168.100.200 " + outports + " [e1]",
			"GR_ns.tenant_node2.nat: snat 10.128.2.6/32 -> 192.168.100.200 " + outports + " [e1]",
			"ns.tenant_ovn_cluster_router.policies: 100 ip4.src == 10.128.2.6 reroute 100.65.0.2,100.88.0.3 [e1]",
		}, append(allowsL3, "ns.tenant_ovn_cluster_router.static_routes: src-ip 10.128.0.0/16 via 100.65.0.2 []")...),
	}, {
		name: "Layer2, the pod's zone: the transit router's peer addresses of both gateway routers", network: l2, node: "node1", objects: []Object{e1},
		want: append([]string{
			"ns.tenant_transit_router.policies: 100 ip4.src == 10.128.1.5 reroute 100.88.0.5,100.88.0.7 [e1]",
		}, allowsL2...),
	}, {
		name: "Layer2, an egress node's zone: no policy for a remote pod (the transit router reaches the gateway router directly)", network: l2, node: "node2", objects: []Object{e1},
		want: append([]string{
			"GR_ns.tenant_node2.nat: snat 10.128.1.5/32 -> 192.168.100.200 " + outports + " [e1]",
			"GR_ns.tenant_node2.nat: snat 10.128.2.6/32 -> 192.168.100.200 " + outports + " [e1]",
			"ns.tenant_transit_router.policies: 100 ip4.src == 10.128.2.6 reroute 100.88.0.5,100.88.0.7 [e1]",
		}, allowsL2...),
	}, {
		name: "Layer2, an egress node without local pods: SNATs only, no allow policies", network: l2, node: "node3", objects: []Object{e1},
		want: []string{
			`GR_ns.tenant_node3.nat: snat 10.128.1.5/32 -> 192.168.100.201 outport == "rtoe-GR_ns.tenant_node3" [e1]`,
			`GR_ns.tenant_node3.nat: snat 10.128.2.6/32 -> 192.168.100.201 outport == "rtoe-GR_ns.tenant_node3" [e1]`,
		},
	}, {
		name: "the default network, an egress node without local pods: source routes to its gateway router, SNATs on its uplink, no allow policies", network: def, node: "node3", objects: []Object{e1},
		want: []string{
			`GR_node3.nat: snat 10.128.1.5/32 -> 192.168.100.201 outport == "rtoe-GR_node3" [e1]`,
			`GR_node3.nat: snat 10.128.2.6/32 -> 192.168.100.201 outport == "rtoe-GR_node3" [e1]`,
			"ovn_cluster_router.static_routes: src-ip 10.128.0.0/16 via 100.65.0.3 []",
		},
	}, {
		name: "two uplinks: the SNAT on the egress IP's uplink only, and the pod's traffic rerouted to that uplink's next hops", network: l2, node: "node3", objects: []Object{e1},
		uplinks: []Uplink{
			{Port: "rtoe-GR_ns.tenant_node3", Subnets: []netip.Prefix{netip.MustParsePrefix("192.168.100.13/24")}, NextHops: []netip.Addr{addr("192.168.100.1"), addr("192.168.100.2")}},
			{Port: "rtoe-GR_ns.tenant_node3_physnet3", Subnets: []netip.Prefix{netip.MustParsePrefix("192.168.103.13/24")}, NextHops: []netip.Addr{addr("192.168.103.1")}},
		},
		want: []string{
			"GR_ns.tenant_node3.nat: snat 10.128.1.5/32 -> 192.168.100.201 outport == \"rtoe-GR_ns.tenant_node3\" [e1]",
			"GR_ns.tenant_node3.nat: snat 10.128.2.6/32 -> 192.168.100.201 outport == \"rtoe-GR_ns.tenant_node3\" [e1]",
			"GR_ns.tenant_node3.policies: 100 ip4.src == 10.128.1.5 reroute 192.168.100.1,192.168.100.2 [e1]",
			"GR_ns.tenant_node3.policies: 100 ip4.src == 10.128.2.6 reroute 192.168.100.1,192.168.100.2 [e1]",
		},
	}, {
		name: "an egress IP on none of the node's uplinks: no SNAT, a problem", network: l2, node: "node3", objects: []Object{e1},
		uplinks: []Uplink{{Port: "rtoe-GR_ns.tenant_node3", Subnets: []netip.Prefix{netip.MustParsePrefix("10.0.0.13/24")}}},
		want: []string{
			"EgressIP e1: 192.168.100.201 is on none of node node3's uplinks",
		},
	}, {
		name: "a pod two objects select egresses by the first", network: l3, node: "node1",
		objects: []Object{e1, {Name: "e0", Assignments: []Assignment{{Node: "node3", IP: addr("192.168.100.202")}}, Pods: e1.Pods[:1]}},
		want: append(append([]string{
			"ns.tenant_ovn_cluster_router.policies: 100 ip4.src == 10.128.1.5 reroute 100.88.0.2,100.88.0.3 [e1]",
		}, allowsL3...), "EgressIP e0: pod ns/p1's address 10.128.1.5 already egresses by EgressIP e1"),
	}, {
		name: "an egress node without an ID yet, and an IPv6 pod address with no IPv6 egress IP", network: l3, node: "node1",
		objects: []Object{{Name: "e2", Assignments: []Assignment{{Node: "node9", IP: addr("192.168.100.203")}, {Node: "node2", IP: addr("192.168.100.204")}},
			Pods: []Pod{{Namespace: "ns", Name: "p3", Node: "node1", IPs: []netip.Addr{addr("10.128.1.7"), addr("fd00::7")}}}}},
		want: append(append([]string{
			"ns.tenant_ovn_cluster_router.policies: 100 ip4.src == 10.128.1.7 reroute 100.88.0.2 [e2]",
		}, allowsL3...), "EgressIP e2: egress node node9 has no node ID yet",
			"EgressIP e2: pod ns/p3's address fd00::7 has no egress node of its family"),
	}, {
		name: "an older EgressIP without an egress node does not keep the pod from a younger one", network: l3, node: "node1",
		objects: []Object{{Name: "e0", Pods: e1.Pods[:1]}, e1},
		want: append(append([]string{
			"ns.tenant_ovn_cluster_router.policies: 100 ip4.src == 10.128.1.5 reroute 100.88.0.2,100.88.0.3 [e1]",
		}, allowsL3...), "EgressIP e0: pod ns/p1's address 10.128.1.5 has no egress node of its family"),
	}, {
		name: "an egress node that does not render the network gets no traffic", network: l3, node: "node1", rendered: []string{"node1", "node3"}, objects: []Object{e1},
		want: append(append([]string{
			"ns.tenant_ovn_cluster_router.policies: 100 ip4.src == 10.128.1.5 reroute 100.88.0.3 [e1]",
		}, allowsL3...), "EgressIP e1: egress node node2 does not render network ns.tenant (none of its pods there)"),
	}, {
		name: "a secondary network: nothing", network: network("ns.sec", netconf.TopologyLayer2, netconf.RoleSecondary), node: "node1", objects: []Object{e1},
		want: []string{"network ns.sec: EgressIPs apply to primary Layer3 and Layer2 networks and the default network, not a secondary layer2 network"},
	}, {
		name:    "Layer2, the pod's zone with an egress node at the old topology: that node's join address (over the upgrade port), the other's peer address",
		network: l2, node: "node1", objects: []Object{e1}, old: []string{"node3"},
		want: append([]string{
			"ns.tenant_transit_router.policies: 100 ip4.src == 10.128.1.5 reroute 100.65.0.3,100.88.0.5 [e1]",
		}, allowsL2...),
	}, {
		name:    "Layer2, the pod's zone at the old topology: the gateway router's policies, to the egress nodes' join addresses",
		network: l2, node: "node1", objects: []Object{e1}, old: []string{"node1"},
		want: append([]string{
			"GR_ns.tenant_node1.policies: 100 ip4.src == 10.128.1.5 reroute 100.65.0.2,100.65.0.3 [e1]",
		}, strings.Split(strings.ReplaceAll(strings.Join(allowsL2, "\n"), "ns.tenant_transit_router", "GR_ns.tenant_node1"), "\n")...),
	}, {
		name:    "Layer2, an egress node's zone at the old topology: its own pod leaves through its gateway router, no policy",
		network: l2, node: "node2", objects: []Object{e1}, old: []string{"node2"},
		want: []string{
			"GR_ns.tenant_node2.nat: snat 10.128.1.5/32 -> 192.168.100.200 " + outports + " [e1]",
			"GR_ns.tenant_node2.nat: snat 10.128.2.6/32 -> 192.168.100.200 " + outports + " [e1]",
		},
	}, {
		name: "no EgressIP: no rows", network: l3, node: "node1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			uplinks := []Uplink{{Port: "rtoe-" + tc.network.GatewayRouter(tc.node), Subnets: []netip.Prefix{netip.MustParsePrefix("192.168.100.12/24")},
				NextHops: []netip.Addr{addr("192.168.100.1")}}}
			if tc.uplinks != nil {
				uplinks = tc.uplinks
			}
			in := Input{Network: tc.network, Local: nodeinfo.Info{Name: tc.node, ID: ids[tc.node]}, NodeIDs: ids,
				NodeIPs: nodeIPs, Uplinks: uplinks, Objects: tc.objects}
			if tc.rendered != nil {
				in.Rendered = func(n string) bool { return slices.Contains(tc.rendered, n) }
			}
			if tc.old != nil {
				in.Layer2V1 = func(n string) bool { return slices.Contains(tc.old, n) }
				in.Local.Layer2V1 = slices.Contains(tc.old, tc.node)
			}
			got := summary(t, Render(in))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
