package topology

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// TestRenderActive: a network restricted to some nodes (Input.Active) renders
// exactly what it renders when the other nodes do not exist, and nothing at
// all in the zone of a node where it is not active, even one not ready for it.
func TestRenderActive(t *testing.T) {
	cfg := config.Default()
	gw := func(n nodeinfo.Info, last string) nodeinfo.Info {
		return withGateway(n, "02:42:ac:12:00:0"+last, pfx("172.18.0."+last+"/16"), "172.18.0.1")
	}
	l3nodes := []nodeinfo.Info{
		gw(node("node1", 2, nodeinfo.Subnets{"ns1.blue": pfx("10.128.1.0/24")}), "2"),
		gw(node("node2", 3, nodeinfo.Subnets{"ns1.blue": pfx("10.128.2.0/24")}), "3"),
		gw(node("node3", 4, nodeinfo.Subnets{"ns1.blue": pfx("10.128.3.0/24")}), "4"),
	}
	l2nodes := seedNodes()
	for i := range l2nodes {
		l2nodes[i] = gw(l2nodes[i], string(rune('2'+i)))
	}
	without := func(nodes []nodeinfo.Info, name string) []nodeinfo.Info {
		var out []nodeinfo.Info
		for _, n := range nodes {
			if n.Name != name {
				out = append(out, n)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		net   Network
		nodes []nodeinfo.Info
	}{
		{"layer3", blue(), l3nodes},
		{"layer2", seedNetwork(), l2nodes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			active := activity.On("node1", "node3")
			got, err := Render(Input{Network: tc.net, Nodes: tc.nodes, Zone: "node1", Cluster: cfg, Active: active})
			if err != nil {
				t.Fatal(err)
			}
			want, err := Render(Input{Network: tc.net, Nodes: without(tc.nodes, "node2"), Zone: "node1", Cluster: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(Describe(want.Rows), Describe(got.Rows)); d != "" {
				t.Errorf("rows with node2 inactive differ from rows without node2 (-want +got):\n%s", d)
			}
			everywhere, err := Render(Input{Network: tc.net, Nodes: tc.nodes, Zone: "node1", Cluster: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if len(everywhere.Rows) <= len(got.Rows) {
				t.Errorf("node2 inactive: %d rows, everywhere %d: node2's rows are still there", len(got.Rows), len(everywhere.Rows))
			}
			for _, m := range got.Rows {
				if ext := externalIDs(m); ext[NodeKey] == "node2" {
					t.Errorf("a row about node2, where the network is not active: %#v", m)
				}
			}
			// The zone of an inactive node renders nothing, ready or not.
			notReady := append([]nodeinfo.Info(nil), tc.nodes...)
			notReady[1].Gateway = nil
			for _, nodes := range [][]nodeinfo.Info{tc.nodes, notReady} {
				res, err := Render(Input{Network: tc.net, Nodes: nodes, Zone: "node2", Cluster: cfg, Active: active})
				if err != nil || len(res.Rows) != 0 || len(res.Skipped) != 0 {
					t.Errorf("zone node2, inactive: %d rows, skipped %v, err %v; want nothing", len(res.Rows), res.Skipped, err)
				}
			}
			if _, err := Render(Input{Network: tc.net, Nodes: notReady, Zone: "node2", Cluster: cfg, Active: activity.On("node2")}); err == nil {
				t.Error("zone node2, active but not ready: no error")
			}
		})
	}
	t.Run("layer2 remote ports", func(t *testing.T) {
		p := Port{Name: "ns1_a", Node: "node2", MAC: "0a:58:cb:cb:00:0b", IPs: pfx("203.203.0.11/24"), TunnelKey: 17}
		in := Input{Network: seedNetwork(), Nodes: l2nodes, Zone: "node1", Cluster: cfg, Ports: []Port{p}}
		all, err := RenderPorts(in)
		if err != nil || len(all.Rows) != 1 {
			t.Fatalf("everywhere: %d rows, %v; want the remote port", len(all.Rows), err)
		}
		for _, active := range []activity.Nodes{activity.On("node2", "node3"), activity.On("node1", "node3")} {
			in.Active = active
			got, err := RenderPorts(in)
			if err != nil || len(got.Rows)+len(got.Contributions)+len(got.Skipped) != 0 {
				t.Errorf("active on %v: %+v, %v; want nothing", active, got, err)
			}
		}
	})
}

// externalIDs returns a row's external_ids, by reflection on its field.
func externalIDs(m any) map[string]string {
	v := reflect.Indirect(reflect.ValueOf(m))
	f := v.FieldByName("ExternalIDs")
	if !f.IsValid() {
		return nil
	}
	ids, _ := f.Interface().(map[string]string)
	return ids
}
