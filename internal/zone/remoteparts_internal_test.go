package zone

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// TestRemoteChanges: which remote nodes a network's reconcile plans part
// by part after a plan of the whole, and when it plans the whole again.
func TestRemoteChanges(t *testing.T) {
	net := topology.Network{Name: "ns.blue", ID: 3, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary}
	mk := func(i int) nodeinfo.Info {
		name := fmt.Sprintf("node%d", i)
		return nodeinfo.Info{Name: name, Zone: name, ID: i + 2, ChassisID: "ch-" + name, Subnets: nodeinfo.Subnets{
			"ns.blue": {netip.MustParsePrefix(fmt.Sprintf("10.128.%d.0/24", i))}, "ns.other": {netip.MustParsePrefix(fmt.Sprintf("10.129.%d.0/24", i))}}}
	}
	var nodes []nodeinfo.Info
	for i := range 8 {
		nodes = append(nodes, mk(i))
	}
	base := topology.Input{Network: net, Nodes: nodes[:6], Zone: "node0", Active: activity.Everywhere()}
	edit := func(f func(in *topology.Input)) topology.Input {
		in := base
		in.Nodes = append([]nodeinfo.Info(nil), base.Nodes...)
		f(&in)
		return in
	}
	for _, tc := range []struct {
		name string
		in   topology.Input
		want []string // nil: the whole
	}{
		{"nothing changed", base, nil},
		{"a node joins", edit(func(in *topology.Input) { in.Nodes = append(in.Nodes, nodes[6]) }), []string{"node6"}},
		{"a node leaves", edit(func(in *topology.Input) { in.Nodes = append(in.Nodes[:2], in.Nodes[3:]...) }), []string{"node2"}},
		{"a node's chassis", edit(func(in *topology.Input) { in.Nodes[3].ChassisID = "new" }), []string{"node3"}},
		{"a node's slice of another network", edit(func(in *topology.Input) {
			in.Nodes[3].Subnets = nodeinfo.Subnets{"ns.blue": in.Nodes[3].Subnets["ns.blue"]}
		}), nil},
		{"a node's slice", edit(func(in *topology.Input) {
			in.Nodes[4].Subnets = nodeinfo.Subnets{"ns.blue": {netip.MustParsePrefix("10.128.99.0/24")}}
		}), []string{"node4"}},
		{"a node leaves the active set", edit(func(in *topology.Input) { in.Active = activity.On("node0", "node1", "node2", "node3", "node4") }), []string{"node5"}},
		{"two join, one leaves", edit(func(in *topology.Input) { in.Nodes = append(in.Nodes[:5], nodes[6], nodes[7]) }), []string{"node5", "node6", "node7"}},
		{"five change", edit(func(in *topology.Input) { in.Nodes = in.Nodes[:1] }), nil},
		{"a node takes a departed node's ID", edit(func(in *topology.Input) {
			taker := in.Nodes[5]
			taker.Name, taker.Zone = "node1b", "node1b"
			in.Nodes = append(in.Nodes[:5], taker)
		}), []string{"node1b", "node5"}},
		{"a remote node moves into the zone", edit(func(in *topology.Input) { in.Nodes[2].Zone = "node0" }), nil},
		{"the zone's node changes", edit(func(in *topology.Input) { in.Nodes[0].ID = 99 }), nil},
		{"the zone's node's slice of another network", edit(func(in *topology.Input) {
			in.Nodes[0].Subnets = nodeinfo.Subnets{"ns.blue": in.Nodes[0].Subnets["ns.blue"]}
		}), nil},
		{"the zone's node leaves the active set", edit(func(in *topology.Input) { in.Active = activity.On("node1") }), nil},
		{"the network", edit(func(in *topology.Input) { in.Network.MTU = 1300 }), nil},
		{"the BFD rows", edit(func(in *topology.Input) { in.SharedBFD = map[netip.Addr]string{netip.MustParseAddr("172.18.0.1"): "u"} }), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w wholePlans
			w.remember("node0", base)
			got, ok := w.remoteChanges("node0", tc.in)
			if ok != (tc.want != nil) {
				t.Fatalf("planned in parts: %v (%v), want %v", ok, got, tc.want != nil)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if !ok {
				return
			}
			// Once written, nothing is left to do.
			w.wrote("node0", tc.in, got)
			if again, ok := w.remoteChanges("node0", tc.in); ok {
				t.Errorf("after writing the parts, still to write: %v", again)
			}
		})
	}
	t.Run("a node where the network is not active", func(t *testing.T) {
		var w wholePlans
		some := base
		some.Active = activity.On("node0", "node1", "node2")
		w.remember("node0", some)
		changed := edit(func(in *topology.Input) { in.Nodes[4].ChassisID = "new" })
		changed.Active = some.Active
		if got, ok := w.remoteChanges("node0", changed); ok {
			t.Errorf("a change of a node without the network's rows planned: %v", got)
		}
		changed.Active = activity.On("node0", "node1", "node2", "node4")
		if got, ok := w.remoteChanges("node0", changed); !ok || !slices.Equal(got, []string{"node4"}) {
			t.Errorf("the network came to the node: planned %v (%v), want node4's part", got, ok)
		}
	})
	t.Run("a whole plan every maxPartPlans parts", func(t *testing.T) {
		var w wholePlans
		w.remember("node0", base)
		joined := edit(func(in *topology.Input) { in.Nodes = append(in.Nodes, nodes[6]) })
		left := base
		for i := range maxPartPlans {
			in := []topology.Input{joined, left}[i%2]
			got, ok := w.remoteChanges("node0", in)
			if !ok {
				t.Fatalf("part %d not planned", i)
			}
			w.wrote("node0", in, got)
		}
		if got, ok := w.remoteChanges("node0", joined); ok {
			t.Errorf("part %d planned (%v), want the whole", maxPartPlans+1, got)
		}
	})
	t.Run("nothing remembered", func(t *testing.T) {
		var w wholePlans
		if got, ok := w.remoteChanges("node0", edit(func(in *topology.Input) { in.Nodes = append(in.Nodes, nodes[6]) })); ok {
			t.Errorf("planned in parts without a plan of the whole: %v", got)
		}
	})
	t.Run("a Layer2 secondary network", func(t *testing.T) {
		var w wholePlans
		l2 := base
		l2.Network.Topology, l2.Network.Role = netconf.TopologyLayer2, netconf.RoleSecondary
		w.remember("node0", l2)
		l2.Nodes = append(append([]nodeinfo.Info(nil), l2.Nodes...), nodes[6])
		if got, ok := w.remoteChanges("node0", l2); ok {
			t.Errorf("a Layer2 secondary network planned in parts: %v", got)
		}
	})
}
