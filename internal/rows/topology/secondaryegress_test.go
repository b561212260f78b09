package topology

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// TestSecondaryEgress: a secondary Layer3 or Layer2 network with egress
// Gateway gets what a primary one has for its egress (join switch or
// transit router, a gateway router on the node with the external switch,
// the default route and the SNAT to the network's masquerade address, the
// isolation drops toward the default network) and nothing of the rest: no
// management port, no reroute to it, no management SNAT, no load
// balancers. Without egress the same networks have no gateway router.
func TestSecondaryEgress(t *testing.T) {
	cfg := config.Default()
	for _, tc := range []struct {
		name, subnet, topology string
		id                     int
		keys                   []int
		want                   string
	}{
		{"ns.l2e", "10.141.0.0/24", netconf.TopologyLayer2, 9, []int{61000}, `router GR_ns.l2e_node1 {always_learn_from_arp_request=false chassis=ch-node1 dynamic_neigh_routers=true lb_force_snat_ip=100.65.0.2 snat-ct-zone=61449}
  port rtoe-GR_ns.l2e_node1 mac 02:42:ac:12:00:03 networks 172.18.0.3/16
  port rtotr-GR_ns.l2e_node1 mac 0a:58:64:41:00:02 networks 100.65.0.2/16,100.88.0.5/31 peer trtor-GR_ns.l2e_node1 {gateway_mtu=1400}
  route 0.0.0.0/0 via 172.18.0.1 dev rtoe-GR_ns.l2e_node1
  route 10.141.0.0/24 via 100.88.0.4 dev rtotr-GR_ns.l2e_node1
  route 169.254.0.2/32 via 169.254.0.4 dev rtoe-GR_ns.l2e_node1
  nat snat 10.141.0.0/24 -> 169.254.0.34 match outport == {"rtoe-GR_ns.l2e_node1"}
router ns.l2e_transit_router {requested-tnl-key=61000}
  port trtor-GR_ns.l2e_node1 mac 0a:58:64:58:00:04 networks 100.88.0.4/31 peer rtotr-GR_ns.l2e_node1 {requested-tnl-key=2}
  port trtor-GR_ns.l2e_node2 mac 0a:58:64:58:00:08 networks 100.88.0.8/31 {requested-chassis=ch-node2 requested-tnl-key=4}
  port trtor-GR_ns.l2e_node3 mac 0a:58:64:58:00:06 networks 100.88.0.6/31 {requested-chassis=ch-node3 requested-tnl-key=3}
  port trtos-ns.l2e_ovn_layer2_switch mac 0a:58:0a:8d:00:01 networks 10.141.0.1/24 gateway-chassis ch-node1/1 {requested-tnl-key=1}
  route 100.65.0.2/32 via 100.88.0.5
  route 100.65.0.3/32 via 100.88.0.7
  route 100.65.0.4/32 via 100.88.0.9
  route src-ip 10.141.0.0/24 via 100.88.0.5
  policy 1200 ip4.dst == 10.244.0.0/16 drop
  policy 1200 ip4.dst == 100.64.0.0/16 drop
switch ext_ns.l2e_node1
  port etor-GR_ns.l2e_node1 type router addresses [router] {router-port=rtoe-GR_ns.l2e_node1}
  port ns.l2e_breth0_node1 type localnet addresses [unknown] {network_name=physnet}
switch ns.l2e_ovn_layer2_switch {interconn-ts=ns.l2e_ovn_layer2_switch requested-tnl-key=16711689}
  port stotr-ns.l2e_ovn_layer2_switch type router addresses [router] {requested-tnl-key=1 router-port=trtos-ns.l2e_ovn_layer2_switch}
`},
		{"ns.l3e", "10.140.0.0/16/24", netconf.TopologyLayer3, 10, nil, `router GR_ns.l3e_node1 {always_learn_from_arp_request=false chassis=ch-node1 dynamic_neigh_routers=true lb_force_snat_ip=router_ip snat-ct-zone=61450}
  port rtoe-GR_ns.l3e_node1 mac 02:42:ac:12:00:03 networks 172.18.0.3/16
  port rtoj-GR_ns.l3e_node1 mac 0a:58:64:41:00:02 networks 100.65.0.2/16 {gateway_mtu=1400}
  route 0.0.0.0/0 via 172.18.0.1 dev rtoe-GR_ns.l3e_node1
  route 10.140.0.0/16 via 100.65.0.1
  route 169.254.0.2/32 via 169.254.0.4 dev rtoe-GR_ns.l3e_node1
  nat snat 10.140.0.0/16 -> 169.254.0.36 match outport == {"rtoe-GR_ns.l3e_node1"}
router ns.l3e_ovn_cluster_router
  port rtoj-ns.l3e_ovn_cluster_router mac 0a:58:64:41:00:01 networks 100.65.0.1/16
  port rtos-ns.l3e_node1 mac 0a:58:0a:8c:01:01 networks 10.140.1.1/24
  port rtots-ns.l3e_node1 mac 0a:58:64:58:00:02 networks 100.88.0.2/16
  route 10.140.2.0/24 via 100.88.0.4
  route 10.140.3.0/24 via 100.88.0.3
  route 100.65.0.3/32 via 100.88.0.3
  route 100.65.0.4/32 via 100.88.0.4
  route src-ip 10.140.1.0/24 via 100.65.0.2
  policy 1200 ip4.dst == 10.244.0.0/16 drop
  policy 1200 ip4.dst == 100.64.0.0/16 drop
switch ext_ns.l3e_node1
  port etor-GR_ns.l3e_node1 type router addresses [router] {router-port=rtoe-GR_ns.l3e_node1}
  port ns.l3e_breth0_node1 type localnet addresses [unknown] {network_name=physnet}
switch ns.l3e_join
  port jtor-GR_ns.l3e_node1 type router addresses [router] {router-port=rtoj-GR_ns.l3e_node1}
  port jtor-ns.l3e_ovn_cluster_router type router addresses [router] {router-port=rtoj-ns.l3e_ovn_cluster_router}
switch ns.l3e_node1
  port stor-ns.l3e_node1 type router addresses [router] {router-port=rtos-ns.l3e_node1}
switch ns.l3e_transit_switch {interconn-ts=ns.l3e_transit_switch requested-tnl-key=16711690}
  port tstor-ns.l3e_node1 type router addresses [router] {requested-tnl-key=2 router-port=rtots-ns.l3e_node1}
  port tstor-ns.l3e_node2 type remote addresses [0a:58:64:58:00:04 100.88.0.4/16] {requested-chassis=ch-node2 requested-tnl-key=4}
  port tstor-ns.l3e_node3 type remote addresses [0a:58:64:58:00:03 100.88.0.3/16] {requested-chassis=ch-node3 requested-tnl-key=3}
`},
	} {
		t.Run(tc.topology, func(t *testing.T) {
			nodes := seedNodes()
			for i := range nodes {
				if nodes[i].Subnets == nil {
					nodes[i].Subnets = map[string][]netip.Prefix{}
				}
				nodes[i].Subnets[tc.name] = pfx([]string{"10.140.1.0/24", "10.140.2.0/24", "10.140.3.0/24"}[i])
			}
			for _, egress := range []string{netconf.EgressGateway, ""} {
				c := &netconf.NetConf{Name: tc.name, Topology: tc.topology, Role: netconf.RoleSecondary, Subnets: tc.subnet, Egress: egress}
				n, err := FromNetConf(c, tc.id, tc.keys, cfg)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Render(Input{Network: n, Nodes: nodes, Zone: "node1", Cluster: cfg})
				if err != nil {
					t.Fatal(err)
				}
				got := Describe(res.Rows)
				if egress == "" {
					if strings.Contains(got, "router GR_") || strings.Contains(got, "_join") || strings.Contains(got, "transit_router") {
						t.Errorf("without egress:\n%s\nwant no gateway router, join switch or transit router", got)
					}
					continue
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("with egress (-want +got):\n%s", d)
				}
			}
		})
	}
}
