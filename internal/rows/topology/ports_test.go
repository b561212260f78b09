package topology

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
)

// migrating is p with a live migration to target under way.
func migrating(p Port, target string) Port {
	p.MigrationTarget = target
	return p
}

// TestRenderPorts: a pod's ports are its own rows, and its membership of
// the network's rows is a contribution, per topology and node.
func TestRenderPorts(t *testing.T) {
	cfg := config.Default()
	l3 := blue()
	l3nodes := []nodeinfo.Info{
		withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24"), "default": pfx("10.244.1.0/24")}), "02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1"),
		node("node2", 3, nodeinfo.Subnets{"ns1.blue": pfx("10.128.2.0/24"), "default": pfx("10.244.2.0/24")}),
	}
	ext := func(n Network, node string) map[string]string {
		return map[string]string{NetworkKey: n.Name, TopologyKey: n.Topology, RoleKey: n.Role, ControllerKey: ZoneController, NodeKey: node, "k8s.ovn.org/pod": "ns1/a"}
	}
	port := func(node string, ips string, key int, isolated bool) Port {
		return Port{Name: "ns1_a", Node: node, MAC: "0a:58:0a:80:01:05", IPs: pfx(ips), TunnelKey: key, Isolated: isolated,
			ExternalIDs: map[string]string{"k8s.ovn.org/pod": "ns1/a"}}
	}
	toSwitch := func(sw string) ovsdbsync.Contribution {
		return ovsdbsync.Contribution{Target: &nbdb.LogicalSwitch{Name: sw}, Column: "ports", Members: []string{"lsp:ns1_a"}}
	}
	def := DefaultNetwork(cfg)
	for _, tc := range []struct {
		name  string
		net   Network
		nodes []nodeinfo.Info
		port  Port
		want  PortsResult
	}{{
		name: "layer3, local pod: bound to the chassis, on the node switch",
		net:  l3, nodes: l3nodes, port: port("node1", "10.128.1.5/24", 0, false),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Addresses: []string{"0a:58:0a:80:01:05 10.128.1.5"},
				PortSecurity: []string{"0a:58:0a:80:01:05 10.128.1.5"}, Options: map[string]string{"requested-chassis": "ch-node1"}, ExternalIDs: ext(l3, "node1")}},
			Contributions: []ovsdbsync.Contribution{toSwitch("ns1.blue_node1")},
		},
	}, {
		name: "layer3, pod on another node: nothing here (routed)",
		net:  l3, nodes: l3nodes, port: port("node2", "10.128.2.5/24", 0, false),
	}, {
		name: "layer2, pod on another node: a remote port on the distributed switch",
		net:  seedNetwork(), nodes: seedNodes(), port: port("node2", "203.203.0.11/24", 17, false),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Type: "remote", Addresses: []string{"0a:58:0a:80:01:05 203.203.0.11"},
				Options: map[string]string{"requested-chassis": "ch-node2", "requested-tnl-key": "17"}, ExternalIDs: ext(seedNetwork(), "node2")}},
			Contributions: []ovsdbsync.Contribution{toSwitch("test12_namespace.scoped_ovn_layer2_switch")},
		},
	}, {
		name: "layer2, a VM migrating from here: bound here and, blocked until it announces itself, on the target",
		net:  seedNetwork(), nodes: seedNodes(), port: migrating(port("node1", "203.203.0.11/24", 17, false), "node2"),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Addresses: []string{"0a:58:0a:80:01:05 203.203.0.11"},
				PortSecurity: []string{"0a:58:0a:80:01:05 203.203.0.11"},
				Options:      map[string]string{"requested-chassis": "ch-node1,ch-node2", "activation-strategy": "rarp", "requested-tnl-key": "17"}, ExternalIDs: ext(seedNetwork(), "node1")}},
			Contributions: []ovsdbsync.Contribution{toSwitch("test12_namespace.scoped_ovn_layer2_switch")},
		},
	}, {
		name: "layer2, a VM migrating here: a local port, here the additional chassis",
		net:  seedNetwork(), nodes: seedNodes(), port: migrating(port("node2", "203.203.0.11/24", 17, false), "node1"),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Addresses: []string{"0a:58:0a:80:01:05 203.203.0.11"},
				PortSecurity: []string{"0a:58:0a:80:01:05 203.203.0.11"},
				Options:      map[string]string{"requested-chassis": "ch-node2,ch-node1", "activation-strategy": "rarp", "requested-tnl-key": "17"}, ExternalIDs: ext(seedNetwork(), "node2")}},
			Contributions: []ovsdbsync.Contribution{toSwitch("test12_namespace.scoped_ovn_layer2_switch")},
		},
	}, {
		name: "layer2, a VM migrating between two other nodes: a remote port on where it runs",
		net:  seedNetwork(), nodes: seedNodes(), port: migrating(port("node2", "203.203.0.11/24", 17, false), "node3"),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Type: "remote", Addresses: []string{"0a:58:0a:80:01:05 203.203.0.11"},
				Options: map[string]string{"requested-chassis": "ch-node2", "requested-tnl-key": "17"}, ExternalIDs: ext(seedNetwork(), "node2")}},
			Contributions: []ovsdbsync.Contribution{toSwitch("test12_namespace.scoped_ovn_layer2_switch")},
		},
	}, {
		name: "layer3 has no migration: a local port as any",
		net:  l3, nodes: l3nodes, port: migrating(port("node1", "10.128.1.5/24", 0, false), "node2"),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Addresses: []string{"0a:58:0a:80:01:05 10.128.1.5"},
				PortSecurity: []string{"0a:58:0a:80:01:05 10.128.1.5"}, Options: map[string]string{"requested-chassis": "ch-node1"}, ExternalIDs: ext(l3, "node1")}},
			Contributions: []ovsdbsync.Contribution{toSwitch("ns1.blue_node1")},
		},
	}, {
		name: "layer2, remote pod without a tunnel key: left out, said why",
		net:  seedNetwork(), nodes: seedNodes(), port: port("node2", "203.203.0.11/24", 0, false),
		want: PortsResult{Skipped: []Problem{{Node: "node2", Reason: "port ns1_a has no tunnel key"}}},
	}, {
		name: "default network, isolated pod: on the node switch and in the isolation group",
		net:  def, nodes: l3nodes, port: port("node1", "10.244.1.5/24", 0, true),
		want: PortsResult{
			Rows: []model.Model{&nbdb.LogicalSwitchPort{UUID: "lsp:ns1_a", Name: "ns1_a", Addresses: []string{"0a:58:0a:80:01:05 10.244.1.5"},
				PortSecurity: []string{"0a:58:0a:80:01:05 10.244.1.5"}, Options: map[string]string{"requested-chassis": "ch-node1"}, ExternalIDs: ext(def, "node1")}},
			Contributions: []ovsdbsync.Contribution{toSwitch(def.NodeSwitch("node1")),
				{Target: &nbdb.PortGroup{Name: IsolatedPortGroup}, Column: "ports", Members: []string{"lsp:ns1_a"}}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RenderPorts(Input{Network: tc.net, Nodes: tc.nodes, Zone: "node1", Cluster: cfg, Ports: []Port{tc.port}})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			// Merged into the network's rows, the ports are what Render
			// gives with them.
			net, err := Render(Input{Network: tc.net, Nodes: tc.nodes, Zone: "node1", Cluster: cfg})
			if err != nil {
				t.Fatal(err)
			}
			merged, err := Merge(net.Rows, got)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Render(Input{Network: tc.net, Nodes: tc.nodes, Zone: "node1", Cluster: cfg, Ports: []Port{tc.port}})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(Describe(whole.Rows), Describe(merged)); d != "" {
				t.Errorf("merged rows differ from Render with ports (-render +merged):\n%s", d)
			}
		})
	}
	// The zone's node not ready: an error the zone reads as "keep the rows".
	notReady := l3nodes[0]
	notReady.ChassisID = ""
	if _, err := RenderPorts(Input{Network: l3, Nodes: []nodeinfo.Info{notReady}, Zone: "node1", Cluster: cfg, Ports: []Port{port("node1", "10.128.1.5/24", 0, false)}}); !errors.Is(err, ErrNotReady) {
		t.Errorf("local node not ready: %v, want ErrNotReady", err)
	}
}
