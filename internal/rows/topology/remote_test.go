package topology

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// TestRenderRemote checks RenderRemote against Render: a remote node's
// part is exactly the whole rendering's rows tagged with the node, and its
// parents list exactly those of them the whole's transit switch and
// cluster router list.
func TestRenderRemote(t *testing.T) {
	cfg := config.Default()
	node1 := withGateway(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24"), "ns1.green": pfx("10.129.1.0/24", "fd00:129:1::/64"),
		"default": pfx("10.244.1.0/24")}), "02:42:ac:12:00:02", pfx("172.18.0.2/16"), "172.18.0.1")
	node2 := node("node2", 3, nodeinfo.Subnets{"ns1.blue": pfx("10.128.2.0/24"), "ns1.green": pfx("10.129.2.0/24", "fd00:129:2::/64"),
		"default": pfx("10.244.2.0/24")})
	node3 := node("node3", 4, nil) // no subnets yet
	node4 := node("node4", 5, nodeinfo.Subnets{"ns1.blue": pfx("10.128.4.0/24"), "ns1.green": pfx("10.129.4.0/24", "fd00:129:4::/64"),
		"default": pfx("10.244.4.0/24")})
	nodes := []nodeinfo.Info{node1, node2, node3, node4}

	dual := blue()
	dual.Name = "ns1.green"
	dual.Subnets = subnets("10.129.0.0/16/24", "fd00:129::/48/64")
	dual.Transit = pfx("100.88.0.0/16", "fd97::/64")
	dual.Join = pfx("100.65.0.0/16", "fd99::/64")
	secondary := blue()
	secondary.Role, secondary.Join = netconf.RoleSecondary, nil
	def := DefaultNetwork(cfg)
	l2 := seedNetwork()

	for _, tc := range []struct {
		name   string
		net    Network
		active activity.Nodes
	}{
		{"primary", blue(), activity.Everywhere()},
		{"primary dual-stack", dual, activity.Everywhere()},
		{"secondary", secondary, activity.Everywhere()},
		{"default network", def, activity.Everywhere()},
		{"active on some nodes", blue(), activity.On("node1", "node4")},
		{"Layer2 primary", l2, activity.Everywhere()},
		{"Layer2 primary on some nodes", l2, activity.On("node1", "node3")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Network: tc.net, Nodes: nodes, Zone: "node1", Cluster: cfg, Active: tc.active}
			whole, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, set := range [][]string{{"node2"}, {"node3"}, {"node4"}, {"node9"}, {"node2", "node4"}, {"node2", "node3", "node4", "node9"}} {
				name := strings.Join(set, ",")
				part, err := RenderRemote(in, set)
				if err != nil {
					t.Fatal(err)
				}
				var want []model.Model
				wantIn := map[string][]string{}
				listed := map[string]bool{}
				for _, r := range whole.Rows {
					if ext := extIDs(r); slices.Contains(set, ext[NodeKey]) {
						want = append(want, r)
						listed[rowID(r)] = true
					}
				}
				// Every set column of the whole listing some of them is a
				// parent, and the part's parents are listed even when empty.
				parents := []string{"ls:" + tc.net.TransitSwitch() + ".ports", "lr:" + tc.net.ClusterRouter() + ".static_routes"}
				if tc.net.Topology == netconf.TopologyLayer2 {
					parents = []string{"lr:" + tc.net.TransitRouter() + ".ports", "lr:" + tc.net.TransitRouter() + ".static_routes"}
				}
				for key, members := range setColumns(whole.Rows) {
					if m := only(members, listed); len(m) > 0 || slices.Contains(parents, key) {
						wantIn[key] = m
					}
				}
				rendered := false
				for _, name := range set {
					ready := name == "node2" || name == "node4" || tc.net.Topology == netconf.TopologyLayer2 && name == "node3"
					rendered = rendered || tc.active.Has(name) && ready
				}
				if rendered != (len(want) > 0) {
					t.Fatalf("%s: the whole has %d rows of it", name, len(want))
				}
				if diff := cmp.Diff(want, part.Rows); diff != "" {
					t.Errorf("%s: rows (-whole's +part's):\n%s", name, diff)
				}
				gotIn := map[string][]string{}
				for _, m := range part.Parents {
					gotIn[columnKey(m.Target, m.Column)] = m.Members
				}
				if diff := cmp.Diff(wantIn, gotIn, cmp.Transformer("sorted", sortedCopy)); diff != "" {
					t.Errorf("%s: members (-whole's +part's):\n%s", name, diff)
				}
				var skipped []Problem
				for _, p := range whole.Skipped {
					if slices.Contains(set, p.Node) {
						skipped = append(skipped, p)
					}
				}
				if diff := cmp.Diff(skipped, part.Skipped); diff != "" {
					t.Errorf("%s: skipped (-whole's +part's):\n%s", name, diff)
				}
			}
		})
	}

	t.Run("the zone's own node", func(t *testing.T) {
		_, err := RenderRemote(Input{Network: blue(), Nodes: nodes, Zone: "node1", Cluster: cfg}, []string{"node2", "node1"})
		if err == nil || !strings.Contains(err.Error(), "zone's own") {
			t.Fatalf("got %v, want the zone's own node refused", err)
		}
	})
	t.Run("a Layer2 secondary network", func(t *testing.T) {
		sec := seedNetwork()
		sec.Role = netconf.RoleSecondary
		if _, err := RenderRemote(Input{Network: sec, Nodes: nodes, Zone: "node1", Cluster: cfg}, []string{"node2"}); err == nil {
			t.Fatal("a Layer2 secondary network's remote part rendered")
		}
	})
}

// extIDs returns a row's external IDs.
func extIDs(m model.Model) map[string]string {
	if r, ok := m.(interface{ GetExternalIDs() map[string]string }); ok {
		return r.GetExternalIDs()
	}
	return nil
}

// rowID returns a desired row's ID.
func rowID(m model.Model) string { return m.(interface{ GetUUID() string }).GetUUID() }

// setColumns returns the member columns of the switches and routers
// among rows, by columnKey.
func setColumns(rows []model.Model) map[string][]string {
	out := map[string][]string{}
	for _, r := range rows {
		switch r := r.(type) {
		case *nbdb.LogicalSwitch:
			out[columnKey(r, "ports")] = r.Ports
		case *nbdb.LogicalRouter:
			out[columnKey(r, "ports")], out[columnKey(r, "static_routes")] = r.Ports, r.StaticRoutes
		}
	}
	return out
}

// columnKey names a column of a switch or router: "ls:<name>.<column>",
// "lr:<name>.<column>".
func columnKey(m model.Model, column string) string {
	switch r := m.(type) {
	case *nbdb.LogicalSwitch:
		return "ls:" + r.Name + "." + column
	case *nbdb.LogicalRouter:
		return "lr:" + r.Name + "." + column
	}
	return fmt.Sprintf("%T.%s", m, column)
}

// only keeps the members listed.
func only(members []string, listed map[string]bool) []string {
	var out []string
	for _, m := range members {
		if listed[m] {
			out = append(out, m)
		}
	}
	return out
}

func sortedCopy(in []string) []string { return slices.Sorted(slices.Values(in)) }
