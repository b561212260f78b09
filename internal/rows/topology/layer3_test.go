package topology

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

func pfx(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func subnets(s ...string) []netconf.Subnet {
	var out []netconf.Subnet
	for _, x := range s {
		sn, err := netconf.ParseSubnet(x, true)
		if err != nil {
			panic(err)
		}
		out = append(out, sn)
	}
	return out
}

func node(name string, id int, subnets nodeinfo.Subnets) nodeinfo.Info {
	return nodeinfo.Info{Name: name, ID: id, ChassisID: "ch-" + name, Zone: name, Subnets: subnets,
		PrimaryIPs: pfx("172.18.0." + name[len(name)-1:] + "/16")}
}

func withGateway(n nodeinfo.Info, mac string, ips []netip.Prefix, hops ...string) nodeinfo.Info {
	g := &nodeinfo.ParsedGateway{Uplink: nodeinfo.Uplink{MAC: mac, IPs: ips, PhysicalNetwork: nodeinfo.DefaultPhysicalNetwork}}
	for _, h := range hops {
		g.NextHops = append(g.NextHops, netip.MustParseAddr(h))
	}
	n.Gateway = g
	return n
}

func blue() Network {
	return Network{Name: "ns1.blue", ID: 3, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary,
		Subnets: subnets("10.128.0.0/16/24"), Join: pfx("100.65.0.0/16"), Transit: pfx("100.88.0.0/16"), MTU: 1400}
}

func TestLayer3(t *testing.T) {
	cfg := config.Default()
	node1 := withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24"), "default": pfx("10.244.1.0/24", "fd00:10:244:2::/64")}),
		"02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1")
	node2 := node("node2", 3, nodeinfo.Subnets{"ns1.blue": pfx("10.128.2.0/24"), "default": pfx("10.244.2.0/24", "fd00:10:244:3::/64")})
	node3 := node("node3", 4, nil) // no subnets yet

	secondary := blue()
	secondary.Name, secondary.Role, secondary.Join = "ns1.green", netconf.RolePrimary, nil
	secondary.Role = netconf.RoleSecondary
	node1green := node1
	node1green.Subnets = nodeinfo.Subnets{"ns1.green": pfx("10.128.1.0/24")}
	node2green := node2
	node2green.Subnets = nodeinfo.Subnets{"ns1.green": pfx("10.128.7.0/24")}

	tests := []struct {
		name    string
		net     Network
		nodes   []nodeinfo.Info
		want    string
		skipped []Problem
	}{
		{
			name:  "layer3 primary UDN, one remote node, one node not ready",
			net:   blue(),
			nodes: []nodeinfo.Info{node1, node2, node3},
			want: `router GR_ns1.blue_node1 {always_learn_from_arp_request=false chassis=ch-node1 dynamic_neigh_routers=true lb_force_snat_ip=router_ip snat-ct-zone=61443}
  load-balancer-group ns1.blue_clusterLBGroup
  port rtoe-GR_ns1.blue_node1 mac 02:42:ac:12:00:02 networks 172.18.0.2/16
  port rtoj-GR_ns1.blue_node1 mac 0a:58:64:41:00:02 networks 100.65.0.2/16 {gateway_mtu=1400}
  route 0.0.0.0/0 via 172.18.0.1 dev rtoe-GR_ns1.blue_node1
  route 10.128.0.0/16 via 100.65.0.1
  route 169.254.0.2/32 via 169.254.0.4 dev rtoe-GR_ns1.blue_node1
  nat snat 10.128.0.0/16 -> 169.254.0.22 match outport == {"rtoe-GR_ns1.blue_node1"}
router ns1.blue_ovn_cluster_router
  port rtoj-ns1.blue_ovn_cluster_router mac 0a:58:64:41:00:01 networks 100.65.0.1/16
  port rtos-ns1.blue_node1 mac 0a:58:0a:80:01:01 networks 10.128.1.1/24
  port rtots-ns1.blue_node1 mac 0a:58:64:58:00:02 networks 100.88.0.2/16
  route 10.128.2.0/24 via 100.88.0.3
  route 100.65.0.3/32 via 100.88.0.3
  route src-ip 10.128.1.0/24 via 100.65.0.2
  policy 1200 ip4.dst == 10.244.0.0/16 drop
  policy 1200 ip4.dst == 100.64.0.0/16 drop
switch ext_ns1.blue_node1
  port etor-GR_ns1.blue_node1 type router addresses [router] {router-port=rtoe-GR_ns1.blue_node1}
  port ns1.blue_breth0_node1 type localnet addresses [unknown] {network_name=physnet}
switch ns1.blue_join
  port jtor-GR_ns1.blue_node1 type router addresses [router] {router-port=rtoj-GR_ns1.blue_node1}
  port jtor-ns1.blue_ovn_cluster_router type router addresses [router] {router-port=rtoj-ns1.blue_ovn_cluster_router}
switch ns1.blue_node1
  load-balancer-group ns1.blue_clusterLBGroup
  port k8s-ns1.blue_node1 addresses [0a:58:0a:80:01:02 10.128.1.2]
  port stor-ns1.blue_node1 type router addresses [router] {router-port=rtos-ns1.blue_node1}
switch ns1.blue_transit_switch {interconn-ts=ns1.blue_transit_switch requested-tnl-key=16711683}
  port tstor-ns1.blue_node1 type router addresses [router] {requested-tnl-key=2 router-port=rtots-ns1.blue_node1}
  port tstor-ns1.blue_node2 type remote addresses [0a:58:64:58:00:03 100.88.0.3/16] {requested-chassis=ch-node2 requested-tnl-key=3}
load-balancer-group ns1.blue_clusterLBGroup
`,
			skipped: []Problem{{Node: "node3", Reason: "no subnet of the network yet"}},
		},
		{
			name:  "default network, dual stack, rendered by the same code without a name prefix",
			net:   DefaultNetwork(cfg),
			nodes: []nodeinfo.Info{node1, node2},
			want: `router GR_node1 {always_learn_from_arp_request=false chassis=ch-node1 dynamic_neigh_routers=true lb_force_snat_ip=router_ip}
  load-balancer-group clusterLBGroup
  port rtoe-GR_node1 mac 02:42:ac:12:00:02 networks 172.18.0.2/16
  port rtoj-GR_node1 mac 0a:58:64:40:00:02 networks 100.64.0.2/16,fd98::2/64 {gateway_mtu=1400}
  route 0.0.0.0/0 via 172.18.0.1 dev rtoe-GR_node1
  route 10.244.0.0/16 via 100.64.0.1
  route 169.254.0.2/32 via 169.254.0.4 dev rtoe-GR_node1
  route fd00:10:244::/48 via fd98::1
  nat snat 10.244.0.0/16 -> 172.18.0.2
router ovn_cluster_router
  port rtoj-ovn_cluster_router mac 0a:58:64:40:00:01 networks 100.64.0.1/16,fd98::1/64
  port rtos-node1 mac 0a:58:0a:f4:01:01 networks 10.244.1.1/24,fd00:10:244:2::1/64
  port rtots-node1 mac 0a:58:64:58:00:02 networks 100.88.0.2/16,fd97::2/64
  route 10.244.2.0/24 via 100.88.0.3
  route 100.64.0.3/32 via 100.88.0.3
  route fd00:10:244:3::/64 via fd97::3
  route fd98::3/128 via fd97::3
  route src-ip 10.244.1.0/24 via 100.64.0.2
  route src-ip fd00:10:244:2::/64 via fd98::2
  policy 1004 inport == "rtos-node1" && ip4.dst == 172.18.0.1 reroute 10.244.1.2
  policy 1004 inport == "rtos-node1" && ip4.dst == 172.18.0.2 reroute 10.244.1.2
switch ext_node1
  port breth0_node1 type localnet addresses [unknown] {network_name=physnet}
  port etor-GR_node1 type router addresses [router] {router-port=rtoe-GR_node1}
switch join
  port jtor-GR_node1 type router addresses [router] {router-port=rtoj-GR_node1}
  port jtor-ovn_cluster_router type router addresses [router] {router-port=rtoj-ovn_cluster_router}
switch node1
  load-balancer-group clusterLBGroup
  port k8s-node1 addresses [0a:58:0a:f4:01:02 10.244.1.2 fd00:10:244:2::2]
  port stor-node1 type router addresses [router] {router-port=rtos-node1}
switch transit_switch {interconn-ts=transit_switch requested-tnl-key=16711680}
  port tstor-node1 type router addresses [router] {requested-tnl-key=2 router-port=rtots-node1}
  port tstor-node2 type remote addresses [0a:58:64:58:00:03 100.88.0.3/16 fd97::3/64] {requested-chassis=ch-node2 requested-tnl-key=3}
load-balancer-group clusterLBGroup
port-group udn_isolated_pods []
  acl from-lport 1000 inport == @udn_isolated_pods && ip drop
  acl from-lport 1001 inport == @udn_isolated_pods && ip4.dst == 10.244.1.2 allow-related
  acl from-lport 1001 inport == @udn_isolated_pods && ip6.dst == fd00:10:244:2::2 allow-related
  acl to-lport 1000 outport == @udn_isolated_pods && ip drop
  acl to-lport 1001 outport == @udn_isolated_pods && ip4.src == 10.244.1.2 allow-related
  acl to-lport 1001 outport == @udn_isolated_pods && ip6.src == fd00:10:244:2::2 allow-related
`,
		},
		{
			name:  "secondary layer3: east-west only",
			net:   secondary,
			nodes: []nodeinfo.Info{node1green, node2green},
			want: `router ns1.green_ovn_cluster_router
  port rtos-ns1.green_node1 mac 0a:58:0a:80:01:01 networks 10.128.1.1/24
  port rtots-ns1.green_node1 mac 0a:58:64:58:00:02 networks 100.88.0.2/16
  route 10.128.7.0/24 via 100.88.0.3
switch ns1.green_node1
  port stor-ns1.green_node1 type router addresses [router] {router-port=rtos-ns1.green_node1}
switch ns1.green_transit_switch {interconn-ts=ns1.green_transit_switch requested-tnl-key=16711683}
  port tstor-ns1.green_node1 type router addresses [router] {requested-tnl-key=2 router-port=rtots-ns1.green_node1}
  port tstor-ns1.green_node2 type remote addresses [0a:58:64:58:00:03 100.88.0.3/16] {requested-chassis=ch-node2 requested-tnl-key=3}
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Render(Input{Network: tc.net, Nodes: tc.nodes, Zone: "node1", Cluster: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, Describe(res.Rows)); diff != "" {
				t.Errorf("rendering (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, res.Skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			assertReferencesResolve(t, res)
		})
	}
}

// assertReferencesResolve checks every row is referenced by a parent (none
// would be garbage-collected) except roots, and IDs are unique.
func assertReferencesResolve(t *testing.T, res Result) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range res.Rows {
		id := RowID(r)
		if seen[id] {
			t.Errorf("ID %s rendered twice", id)
		}
		seen[id] = true
	}
	desc := Describe(res.Rows)
	for _, r := range res.Rows {
		id := RowID(r)
		if strings.HasPrefix(id, "ls:") || strings.HasPrefix(id, "lr:") {
			continue
		}
		name := id[strings.Index(id, ":")+1:]
		if strings.HasPrefix(id, "lsp:") || strings.HasPrefix(id, "lrp:") {
			if !strings.Contains(desc, "port "+name+" ") {
				t.Errorf("row %s is not attached to any router or switch", id)
			}
		}
	}
}

func TestLayer3NotReady(t *testing.T) {
	cfg := config.Default()
	ready := withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24")}), "02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1")
	noSubnet := ready
	noSubnet.Subnets = nil
	noGateway := ready
	noGateway.Gateway = nil
	noID := ready
	noID.ID = 0
	for name, nodes := range map[string][]nodeinfo.Info{
		"local node has no subnet":  {noSubnet},
		"local node has no gateway": {noGateway},
		"local node has no ID":      {noID},
		"no node in the zone":       {node("node2", 3, nil)},
	} {
		if _, err := Render(Input{Network: blue(), Nodes: nodes, Zone: "node1", Cluster: cfg}); !errors.Is(err, ErrNotReady) {
			t.Errorf("%s: err = %v, want ErrNotReady", name, err)
		}
	}
	two := ready
	two.Name = "other"
	if _, err := Render(Input{Network: blue(), Nodes: []nodeinfo.Info{ready, two}, Zone: "node1", Cluster: cfg}); err == nil || !strings.Contains(err.Error(), "one node per zone") {
		t.Errorf("two nodes in one zone: err = %v", err)
	}
}

// TestDefaultNetworkIsolation: only the default-network ports of pods with a
// primary UDN join the isolation port group.
func TestDefaultNetworkIsolation(t *testing.T) {
	cfg := config.Default()
	node1 := withGateway(node("node1", 2, nodeinfo.Subnets{"default": pfx("10.244.1.0/24")}), "02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1")
	ports := []Port{
		{Name: "ns1_udn-pod", Node: "node1", MAC: "0a:58:0a:f4:01:05", IPs: pfx("10.244.1.5/24"), Isolated: true},
		{Name: "ns2_plain-pod", Node: "node1", MAC: "0a:58:0a:f4:01:06", IPs: pfx("10.244.1.6/24")},
	}
	res, err := Render(Input{Network: DefaultNetwork(cfg), Nodes: []nodeinfo.Info{node1}, Zone: "node1", Cluster: cfg, Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(Describe(res.Rows), "port-group udn_isolated_pods [ns1_udn-pod]\n") {
		t.Errorf("isolated port group:\n%s", Describe(res.Rows))
	}
}

// TestSliceTooSmall: a node slice without room for the gateway, the
// management port and a pod is an error from Render, never a panic (the zone
// controller reports errors; a panic was caught by the framework and retried
// for ever). The API rejects such host prefixes; hand-written NADs and node
// annotations can still carry them.
func TestSliceTooSmall(t *testing.T) {
	cfg := config.Default()
	for _, tc := range []struct {
		name    string
		net     Network
		slices  nodeinfo.Subnets
		wantErr string
	}{
		{"ipv4 /32", blue(), nodeinfo.Subnets{"ns1.blue": pfx("10.128.0.1/32")},
			"network ns1.blue: node node1: node subnet 10.128.0.1/32 leaves no room for a gateway, a management port and a pod (at most /29)"},
		{"ipv4 /31", blue(), nodeinfo.Subnets{"ns1.blue": pfx("10.128.0.2/31")}, "node subnet 10.128.0.2/31 leaves no room"},
		{"ipv4 /30", blue(), nodeinfo.Subnets{"ns1.blue": pfx("10.128.0.4/30")}, "node subnet 10.128.0.4/30 leaves no room"},
		{"ipv6 /127", Network{Name: "ns1.v6", ID: 4, Topology: netconf.TopologyLayer3, Role: netconf.RoleSecondary,
			Subnets: subnets("fd00::/64/127"), Transit: pfx("fd97::/64")}, nodeinfo.Subnets{"ns1.v6": pfx("fd00::2/127")},
			"node subnet fd00::2/127 leaves no room for a gateway, a management port and a pod (at most /126)"},
		{"default network /31 (isolation ACLs)", DefaultNetwork(cfg), nodeinfo.Subnets{"default": pfx("10.244.0.2/31", "fd00:10:244:1::/64")},
			"network default: node node1: node subnet 10.244.0.2/31 leaves no room"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			local := withGateway(node("node1", 2, tc.slices), "02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1")
			var res Result
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("Render panicked: %v", p)
					}
				}()
				res, err = Render(Input{Network: tc.net, Nodes: []nodeinfo.Info{local}, Zone: "node1", Cluster: cfg})
			}()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if len(res.Rows) != 0 {
				t.Errorf("rows rendered beside the error: %d", len(res.Rows))
			}
		})
	}
}

// TestLayer2SubnetTooSmall: a Layer2 primary network whose subnet has no
// room for the gateway and the management port is an error, not a panic.
func TestLayer2SubnetTooSmall(t *testing.T) {
	n := seedNetwork()
	n.Subnets = subnets("10.100.200.1/32")
	_, err := Render(Input{Network: n, Nodes: seedNodes(), Zone: "node1", Cluster: config.Default()})
	if err == nil || !strings.Contains(err.Error(), "no gateway address") {
		t.Fatalf("err = %v, want an error about the gateway address", err)
	}
}
