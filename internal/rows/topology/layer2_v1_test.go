package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// seedPorts are a pod on node1 and one on node2.
func seedPorts() []Port {
	return []Port{
		{Name: "pod-a", Node: "node1", MAC: "0a:58:cb:cb:00:0a", IPs: pfx("203.203.0.10/24"), TunnelKey: 16},
		{Name: "pod-b", Node: "node2", MAC: "0a:58:cb:cb:00:0b", IPs: pfx("203.203.0.11/24"), TunnelKey: 17},
	}
}

// TestLayer2V1 renders seed 000's network in node1's zone with every node
// at the old topology: the gateway router on the switch (rtos-GR with the
// join address and the gateway address, its MAC from the join address),
// the switch's port toward it with node1's key, a remote port per other
// node's gateway router with that node's key and join address, and the
// node reroute, the isolation drops and the management-port SNAT on the
// gateway router; no transit router.
func TestLayer2V1(t *testing.T) {
	nodes := seedNodes()
	for i := range nodes {
		nodes[i].Layer2V1 = true
	}
	res, err := Render(Input{Network: seedNetwork(), Nodes: nodes, Zone: "node1", Cluster: config.Default(), Ports: seedPorts()})
	if err != nil {
		t.Fatal(err)
	}
	want := `router GR_test12_namespace.scoped_node1 {always_learn_from_arp_request=false chassis=ch-node1 dynamic_neigh_routers=true lb_force_snat_ip=100.65.0.2 snat-ct-zone=61445}
  load-balancer-group test12_namespace.scoped_clusterLBGroup
  port rtoe-GR_test12_namespace.scoped_node1 mac 02:42:ac:12:00:03 networks 172.18.0.3/16
  port rtos-GR_test12_namespace.scoped_node1 mac 0a:58:64:41:00:02 networks 100.65.0.2/16,203.203.0.1/24 {gateway_mtu=1400}
  route 0.0.0.0/0 via 172.18.0.1 dev rtoe-GR_test12_namespace.scoped_node1
  route 169.254.0.2/32 via 169.254.0.4 dev rtoe-GR_test12_namespace.scoped_node1
  policy 1004 inport == "rtos-GR_test12_namespace.scoped_node1" && ip4.dst == 172.18.0.3 reroute 203.203.0.2
  policy 1200 ip4.dst == 10.244.0.0/16 drop
  policy 1200 ip4.dst == 100.64.0.0/16 drop
  nat snat 203.203.0.0/24 -> 169.254.0.26 match outport == {"rtoe-GR_test12_namespace.scoped_node1"}
  nat snat 203.203.0.0/24 -> 169.254.0.27 match eth.dst == 0a:58:cb:cb:00:02
switch ext_test12_namespace.scoped_node1
  port etor-GR_test12_namespace.scoped_node1 type router addresses [router] {router-port=rtoe-GR_test12_namespace.scoped_node1}
  port test12_namespace.scoped_breth0_node1 type localnet addresses [unknown] {network_name=physnet}
switch test12_namespace.scoped_ovn_layer2_switch {interconn-ts=test12_namespace.scoped_ovn_layer2_switch requested-tnl-key=16711685}
  load-balancer-group test12_namespace.scoped_clusterLBGroup
  port k8s-test12_namespace.scoped_node1 addresses [0a:58:cb:cb:00:02 203.203.0.2] {requested-tnl-key=2}
  port pod-a addresses [0a:58:cb:cb:00:0a 203.203.0.10] security [0a:58:cb:cb:00:0a 203.203.0.10] {requested-chassis=ch-node1 requested-tnl-key=16}
  port pod-b type remote addresses [0a:58:cb:cb:00:0b 203.203.0.11] {requested-chassis=ch-node2 requested-tnl-key=17}
  port stor-GR_test12_namespace.scoped_node1 type router addresses [router] {requested-tnl-key=28673 router-port=rtos-GR_test12_namespace.scoped_node1}
  port stor-GR_test12_namespace.scoped_node2 type remote addresses [0a:58:64:41:00:04 100.65.0.4/16] {requested-chassis=ch-node2 requested-tnl-key=28675}
  port stor-GR_test12_namespace.scoped_node3 type remote addresses [0a:58:64:41:00:03 100.65.0.3/16] {requested-chassis=ch-node3 requested-tnl-key=28674}
load-balancer-group test12_namespace.scoped_clusterLBGroup
`
	if diff := cmp.Diff(want, Describe(res.Rows)); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	assertReferencesResolve(t, res)
	// What the node agent announces to a VM migrated here (vmmigration):
	// the gateway port's MAC as rendered, node1's local port and node2's
	// as the remote stor-GR port knows it, apart.
	macs := map[string]string{}
	for _, r := range res.Rows {
		switch row := r.(type) {
		case *nbdb.LogicalRouterPort:
			macs[row.Name] = row.MAC
		case *nbdb.LogicalSwitchPort:
			if len(row.Addresses) > 0 {
				macs[row.Name], _, _ = strings.Cut(row.Addresses[0], " ")
			}
		}
	}
	for _, c := range []struct {
		node nodeinfo.Info
		port string
	}{{nodes[0], "rtos-" + seedNetwork().GatewayRouter(nodes[0].Name)}, {nodes[1], "stor-" + seedNetwork().GatewayRouter(nodes[1].Name)}} {
		if want := seedNetwork().Layer2V1GatewayMAC(c.node.ID); macs[c.port] == "" || macs[c.port] != want {
			t.Errorf("%s: Layer2V1GatewayMAC %s, the rendered %s has %q", c.node.Name, want, c.port, macs[c.port])
		}
	}
	if seedNetwork().Layer2V1GatewayMAC(nodes[0].ID) == seedNetwork().Layer2V1GatewayMAC(nodes[1].ID) {
		t.Error("two nodes' gateway MACs are the same")
	}
}

// TestLayer2Upgrade renders node1's zone at the transit router while node2
// is still at the old topology (seed 000, "Egress/Ingress traffic over
// remote node"): no transit-router port toward node2; instead node2's
// remote gateway router port on the switch, the upgrade ports (the switch's
// with node1's old key, the transit router's with node1's gateway router
// MAC and the dummy join address 100.65.255.254/16), the /32 route to
// node2's join address through the upgrade port, and the management
// masquerade address on the gateway port (so that it alone answers ARP for
// it). node3, at the transit router, is peered as usual. With every node
// at the transit router, none of it is rendered (TestLayer2SeedExample).
func TestLayer2Upgrade(t *testing.T) {
	nodes := seedNodes()
	nodes[1].Layer2V1 = true
	res, err := Render(Input{Network: seedNetwork(), Nodes: nodes, Zone: "node1", Cluster: config.Default(), Ports: seedPorts()})
	if err != nil {
		t.Fatal(err)
	}
	want := `router GR_test12_namespace.scoped_node1 {always_learn_from_arp_request=false chassis=ch-node1 dynamic_neigh_routers=true lb_force_snat_ip=100.65.0.2 snat-ct-zone=61445}
  load-balancer-group test12_namespace.scoped_clusterLBGroup
  port rtoe-GR_test12_namespace.scoped_node1 mac 02:42:ac:12:00:03 networks 172.18.0.3/16
  port rtotr-GR_test12_namespace.scoped_node1 mac 0a:58:64:41:00:02 networks 100.65.0.2/16,100.88.0.5/31 peer trtor-GR_test12_namespace.scoped_node1 {gateway_mtu=1400}
  route 0.0.0.0/0 via 172.18.0.1 dev rtoe-GR_test12_namespace.scoped_node1
  route 169.254.0.2/32 via 169.254.0.4 dev rtoe-GR_test12_namespace.scoped_node1
  route 203.203.0.0/24 via 100.88.0.4 dev rtotr-GR_test12_namespace.scoped_node1
  nat snat 203.203.0.0/24 -> 169.254.0.26 match outport == {"rtoe-GR_test12_namespace.scoped_node1"}
router test12_namespace.scoped_transit_router {requested-tnl-key=16715776}
  port trtor-GR_test12_namespace.scoped_node1 mac 0a:58:64:58:00:04 networks 100.88.0.4/31 peer rtotr-GR_test12_namespace.scoped_node1 {requested-tnl-key=2}
  port trtor-GR_test12_namespace.scoped_node3 mac 0a:58:64:58:00:06 networks 100.88.0.6/31 {requested-chassis=ch-node3 requested-tnl-key=3}
  port trtos-test12_namespace.scoped_ovn_layer2_switch mac 0a:58:cb:cb:00:01 networks 169.254.0.27/32,203.203.0.1/24 gateway-chassis ch-node1/1 {requested-tnl-key=1}
  port trtos-test12_namespace.scoped_ovn_layer2_switch-upgrade mac 0a:58:64:41:00:02 networks 100.65.255.254/16
  route 100.65.0.2/32 via 100.88.0.5
  route 100.65.0.3/32 via 100.88.0.7
  route 100.65.0.4/32 via 100.65.0.4 dev trtos-test12_namespace.scoped_ovn_layer2_switch-upgrade
  route src-ip 203.203.0.0/24 via 100.88.0.5
  policy 1004 inport == "trtos-test12_namespace.scoped_ovn_layer2_switch" && ip4.dst == 172.18.0.3 reroute 203.203.0.2
  policy 1200 ip4.dst == 10.244.0.0/16 drop
  policy 1200 ip4.dst == 100.64.0.0/16 drop
  nat snat 203.203.0.0/24 -> 169.254.0.27 gateway-port trtos-test12_namespace.scoped_ovn_layer2_switch match eth.dst == 0a:58:cb:cb:00:02
switch ext_test12_namespace.scoped_node1
  port etor-GR_test12_namespace.scoped_node1 type router addresses [router] {router-port=rtoe-GR_test12_namespace.scoped_node1}
  port test12_namespace.scoped_breth0_node1 type localnet addresses [unknown] {network_name=physnet}
switch test12_namespace.scoped_ovn_layer2_switch {interconn-ts=test12_namespace.scoped_ovn_layer2_switch requested-tnl-key=16711685}
  load-balancer-group test12_namespace.scoped_clusterLBGroup
  port k8s-test12_namespace.scoped_node1 addresses [0a:58:cb:cb:00:02 203.203.0.2] {requested-tnl-key=2}
  port pod-a addresses [0a:58:cb:cb:00:0a 203.203.0.10] security [0a:58:cb:cb:00:0a 203.203.0.10] {requested-chassis=ch-node1 requested-tnl-key=16}
  port pod-b type remote addresses [0a:58:cb:cb:00:0b 203.203.0.11] {requested-chassis=ch-node2 requested-tnl-key=17}
  port stor-GR_test12_namespace.scoped_node2 type remote addresses [0a:58:64:41:00:04 100.65.0.4/16] {requested-chassis=ch-node2 requested-tnl-key=28675}
  port stotr-test12_namespace.scoped_ovn_layer2_switch type router addresses [router] {requested-tnl-key=1 router-port=trtos-test12_namespace.scoped_ovn_layer2_switch}
  port stotr-test12_namespace.scoped_ovn_layer2_switch-upgrade type router addresses [router] {requested-tnl-key=28673 router-port=trtos-test12_namespace.scoped_ovn_layer2_switch-upgrade}
load-balancer-group test12_namespace.scoped_clusterLBGroup
`
	if diff := cmp.Diff(want, Describe(res.Rows)); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	assertReferencesResolve(t, res)

	all := seedNodes()
	res, err = Render(Input{Network: seedNetwork(), Nodes: all, Zone: "node1", Cluster: config.Default(), Ports: seedPorts()})
	if err != nil {
		t.Fatal(err)
	}
	if d := Describe(res.Rows); strings.Contains(d, "upgrade") || strings.Contains(d, "stor-GR") || strings.Contains(d, "169.254.0.27/32") {
		t.Errorf("every node at the transit router, yet upgrade rows are rendered:\n%s", d)
	}
}

// TestRenderRemoteRefusesOldTopology: a network with a node at the old
// topology has no part apart (its upgrade ports depend on every node).
func TestRenderRemoteRefusesOldTopology(t *testing.T) {
	nodes := seedNodes()
	nodes[2].Layer2V1 = true
	in := Input{Network: seedNetwork(), Nodes: nodes, Zone: "node1", Cluster: config.Default()}
	if _, err := RenderRemote(in, []string{"node2"}); err == nil {
		t.Error("RenderRemote rendered a part of a network with a node at the old topology")
	}
	in.Nodes = seedNodes()
	if _, err := RenderRemote(in, []string{"node2"}); err != nil {
		t.Errorf("every node at the transit router: %v", err)
	}
}

// TestNodeRouterPortKeys: the nodes' keys are above every pod's, distinct,
// and node IDs without one are refused.
func TestNodeRouterPortKeys(t *testing.T) {
	seen := map[int]bool{}
	for _, id := range []int{1, 2, 3, Layer2V1Nodes - 1} {
		k, err := NodeRouterPortKey(id)
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if k <= MaxPodPortKey || k > MaxPortKey || seen[k] {
			t.Errorf("node %d: key %d outside (%d, %d] or repeated", id, k, MaxPodPortKey, MaxPortKey)
		}
		seen[k] = true
	}
	for _, id := range []int{0, Layer2V1Nodes} {
		if _, err := NodeRouterPortKey(id); err == nil {
			t.Errorf("node %d got a key", id)
		}
	}
}

// TestLayer2NodeWithoutKey: a node whose ID has no switch key is left out
// (with the reason) of a mixed network, not the whole network: from a 1.0
// zone, and from a 2.0 zone with 1.0 peers when the zone's own node has none.
func TestLayer2NodeWithoutKey(t *testing.T) {
	nodes := seedNodes()
	for i := range nodes {
		nodes[i].Layer2V1 = true
	}
	nodes[2].ID = Layer2V1Nodes + 7
	res, err := Render(Input{Network: seedNetwork(), Nodes: nodes, Zone: "node1", Cluster: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Node != "node3" || !strings.Contains(res.Skipped[0].Reason, "no Layer2 gateway router port key") {
		t.Errorf("skipped %+v, want node3 with its reason", res.Skipped)
	}
	if d := Describe(res.Rows); strings.Contains(d, "stor-GR_test12_namespace.scoped_node3") || !strings.Contains(d, "stor-GR_test12_namespace.scoped_node2") {
		t.Errorf("node3's port rendered, or node2's missing:\n%s", d)
	}

	nodes = seedNodes()
	nodes[0].ID = Layer2V1Nodes + 7 // node1, the zone's, at 2.0
	nodes[1].Layer2V1 = true
	res, err = Render(Input{Network: seedNetwork(), Nodes: nodes, Zone: "node1", Cluster: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 1 || res.Skipped[0].Node != "node2" {
		t.Errorf("skipped %+v, want node2", res.Skipped)
	}
	if d := Describe(res.Rows); strings.Contains(d, "upgrade") {
		t.Errorf("upgrade ports without a key:\n%s", d)
	}
	assertReferencesResolve(t, res)
}
