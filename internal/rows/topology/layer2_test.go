package topology

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// seedNodes are seed 000's three nodes. Their IDs follow from the seed's IPv4
// "transit-peers-node-subnet" table (node1 100.88.0.4/31, node2 100.88.0.8/31,
// node3 100.88.0.6/31 at transit base + 2 × ID): 2, 4 and 3.
func seedNodes() []nodeinfo.Info {
	node1 := withGateway(node("node1", 2, nil), "02:42:ac:12:00:03", pfx("172.18.0.3/16"), "172.18.0.1")
	node1.PrimaryIPs = pfx("172.18.0.3/16")
	return []nodeinfo.Info{node1, node("node2", 4, nil), node("node3", 3, nil)}
}

func seedNetwork() Network {
	return Network{Name: "test12_namespace.scoped", ID: 5, Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary,
		Subnets: subnets("203.203.0.0/24"), Join: pfx("100.65.0.0/16"), Transit: pfx("100.88.0.0/16"), MTU: 1400,
		TunnelKeys: []int{16715776}}
}

// TestLayer2SeedExample reproduces seed 000's worked example in node1's zone.
// Where the seed is consistent, the rendering equals it: the gateway
// 203.203.0.1 with MAC 0a:58:cb:cb:00:01 on the transit router; node1's link
// 100.88.0.4/31 (transit router) ↔ 100.88.0.5/31 (gateway router, which also
// holds the join address 100.65.0.2/16 and MAC 0a:58:64:41:00:02); remote
// transit-router ports 100.88.0.8/31 (tunnel key 4) and 100.88.0.6/31 (3); the
// management-port SNAT on the transit router matching the management port's
// MAC; the reroute of the node's address (172.18.0.3) to the management port
// 203.203.0.2; the gateway router's route back to the subnet through the
// transit router's side of the link, and its default route.
//
// Where the seed contradicts itself, the derivation from node IDs wins: its
// GR join addresses for node2/node3 (100.65.0.3/.4) and its transit-router
// route table (next hops 100.88.0.6/.10/.14) do not match its own /31 table;
// its IPv6 table gives node1 fd97::8/127 (ID 4) while its IPv4 table gives
// node1 ID 2; the subnet is a /24 in the address config and a /16 in the route
// and NAT listings; its NAT names the switch port as logical_port where the
// column that says where a SNAT happens is gateway_port.
func TestLayer2SeedExample(t *testing.T) {
	cfg := config.Default()
	ports := []Port{
		{Name: "pod-a", Node: "node1", MAC: "0a:58:cb:cb:00:0a", IPs: pfx("203.203.0.10/24"), TunnelKey: 16},
		{Name: "pod-b", Node: "node2", MAC: "0a:58:cb:cb:00:0b", IPs: pfx("203.203.0.11/24"), TunnelKey: 17},
	}
	res, err := Render(Input{Network: seedNetwork(), Nodes: seedNodes(), Zone: "node1", Cluster: cfg, Ports: ports})
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
  port trtor-GR_test12_namespace.scoped_node2 mac 0a:58:64:58:00:08 networks 100.88.0.8/31 {requested-chassis=ch-node2 requested-tnl-key=4}
  port trtor-GR_test12_namespace.scoped_node3 mac 0a:58:64:58:00:06 networks 100.88.0.6/31 {requested-chassis=ch-node3 requested-tnl-key=3}
  port trtos-test12_namespace.scoped_ovn_layer2_switch mac 0a:58:cb:cb:00:01 networks 203.203.0.1/24 gateway-chassis ch-node1/1 {requested-tnl-key=1}
  route 100.65.0.2/32 via 100.88.0.5
  route 100.65.0.3/32 via 100.88.0.7
  route 100.65.0.4/32 via 100.88.0.9
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
  port stotr-test12_namespace.scoped_ovn_layer2_switch type router addresses [router] {requested-tnl-key=1 router-port=trtos-test12_namespace.scoped_ovn_layer2_switch}
load-balancer-group test12_namespace.scoped_clusterLBGroup
`
	if diff := cmp.Diff(want, Describe(res.Rows)); diff != "" {
		t.Errorf("rendering (-want +got):\n%s", diff)
	}
	assertReferencesResolve(t, res)
}

// TestLayer2DualStack checks the IPv6 side: /127 links at transit base + 2 ×
// node ID, the gateway's IPv6 address beside the IPv4 one on the same port
// (its link-local address is derived by OVN from the MAC: fe80::858:cbff:fecb:1).
func TestLayer2DualStack(t *testing.T) {
	n := seedNetwork()
	n.Subnets = subnets("203.203.0.0/24", "2010:100:200::/60")
	n.Join = pfx("100.65.0.0/16", "fd99::/64")
	n.Transit = pfx("100.88.0.0/16", "fd97::/64")
	res, err := Render(Input{Network: n, Nodes: seedNodes(), Zone: "node1", Cluster: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	desc := Describe(res.Rows)
	for _, line := range []string{
		"port trtos-test12_namespace.scoped_ovn_layer2_switch mac 0a:58:cb:cb:00:01 networks 2010:100:200::1/60,203.203.0.1/24",
		"port rtotr-GR_test12_namespace.scoped_node1 mac 0a:58:64:41:00:02 networks 100.65.0.2/16,100.88.0.5/31,fd97::5/127,fd99::2/64",
		"port trtor-GR_test12_namespace.scoped_node2 mac 0a:58:64:58:00:08 networks 100.88.0.8/31,fd97::8/127",
		"route fd99::4/128 via fd97::9",
		"route src-ip 2010:100:200::/60 via fd97::5",
		"route 2010:100:200::/60 via fd97::4 dev rtotr-GR_test12_namespace.scoped_node1",
		"port k8s-test12_namespace.scoped_node1 addresses [0a:58:cb:cb:00:02 203.203.0.2 2010:100:200::2]",
		"policy 1200 ip6.dst == fd00:10:244::/48 drop",
	} {
		if !strings.Contains(desc, line) {
			t.Errorf("missing %q in\n%s", line, desc)
		}
	}
}

func TestSecondaryAndLocalnet(t *testing.T) {
	cfg := config.Default()
	nodes := seedNodes()
	tests := []struct {
		name  string
		net   Network
		ports []Port
		want  string
	}{
		{
			name: "secondary layer2 with IPAM disabled: a distributed switch, MAC-only port security",
			net:  Network{Name: "ns.sec", ID: 9, Topology: netconf.TopologyLayer2, Role: netconf.RoleSecondary},
			ports: []Port{
				{Name: "pod-a", Node: "node1", MAC: "02:00:00:00:00:0a", TunnelKey: 16},
				{Name: "pod-c", Node: "node3", MAC: "02:00:00:00:00:0c", TunnelKey: 18},
			},
			want: `switch ns.sec_ovn_layer2_switch {interconn-ts=ns.sec_ovn_layer2_switch requested-tnl-key=16711689}
  port pod-a addresses [02:00:00:00:00:0a] security [02:00:00:00:00:0a] {requested-chassis=ch-node1 requested-tnl-key=16}
  port pod-c type remote addresses [02:00:00:00:00:0c] {requested-chassis=ch-node3 requested-tnl-key=18}
`,
		},
		{
			name: "localnet with a VLAN: remote pods are reached through the physical network",
			net: Network{Name: "cluster.udn.phys", ID: 10, Topology: netconf.TopologyLocalnet, Role: netconf.RoleSecondary,
				Subnets: subnets("192.168.50.0/24"), PhysicalNetworkName: "physnet-tenant", VLANID: 100},
			ports: []Port{
				{Name: "pod-a", Node: "node1", MAC: "0a:58:c0:a8:32:0a", IPs: pfx("192.168.50.10/24")},
				{Name: "pod-b", Node: "node2", MAC: "0a:58:c0:a8:32:0b", IPs: pfx("192.168.50.11/24")},
			},
			want: `switch cluster.udn.phys_ovn_localnet_switch
  port cluster.udn.phys_ovn_localnet_port type localnet addresses [unknown] vlan 100 {network_name=physnet-tenant}
  port pod-a addresses [0a:58:c0:a8:32:0a 192.168.50.10] security [0a:58:c0:a8:32:0a 192.168.50.10] {requested-chassis=ch-node1}
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Render(Input{Network: tc.net, Nodes: nodes, Zone: "node1", Cluster: cfg, Ports: tc.ports})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, Describe(res.Rows)); diff != "" {
				t.Errorf("rendering (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLayer2NeedsTransitRouterKey(t *testing.T) {
	n := seedNetwork()
	n.TunnelKeys = nil
	if _, err := Render(Input{Network: n, Nodes: seedNodes(), Zone: "node1", Cluster: config.Default()}); err == nil {
		t.Fatal("a Layer2 primary network without a transit-router key rendered")
	}
}
