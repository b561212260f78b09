package zone_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// TestRemoteParts writes a network's rows for one remote node at a time
// (zone.SyncRemote) against a real NB, as nodes join, change and leave, and
// checks after each step that planning the network whole finds nothing to
// do: the part wrote what the whole would have.
func TestRemoteParts(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	nets, infos := benchInputs(2, 5)
	z := ovntest.StartNB(t, "parts")
	s, _, _ := benchSyncer(t, z)
	n := nets[0]
	owner := feature.NetworkKey(n.Name).String()
	render := func(nodes []nodeinfo.Info) topology.Input {
		return topology.Input{Network: n, Nodes: nodes, Zone: "node0", Cluster: cfg}
	}
	// The whole network, before it exists: the part has no parents to go in.
	part, err := topology.RenderRemote(render(infos[:3]), []string{"node2"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := zone.SyncRemote(ctx, s, n.Name, []string{"node2"}, part)
	if err != nil || len(p.Missing) != 2 || !p.Empty() {
		t.Fatalf("a part of a network not written: %v, missing %v, %s; want its two parents missing and nothing written", err, p.Missing, p)
	}
	for _, other := range nets {
		res, err := topology.Render(topology.Input{Network: other, Nodes: infos[:3], Zone: "node0", Cluster: cfg})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Sync(ctx, feature.NetworkKey(other.Name).String(), res.Rows); err != nil {
			t.Fatal(err)
		}
	}

	changed := infos[1]
	changed.ChassisID = "chassis-node1-replaced"
	resliced := infos[2]
	resliced.Subnets = nodeinfo.Subnets{n.Name: {netip.MustParsePrefix("10.128.99.0/24")}}
	// node1b takes node4's ID and slice as node4 leaves: its routes are
	// node4's (same IDs), re-tagged.
	taker := infos[4]
	taker.Name, taker.Zone, taker.ChassisID = "node1b", "node1b", "chassis-node1b"
	for _, step := range []struct {
		name  string
		nodes []nodeinfo.Info
		part  []string
		// inserted, updated, deleted, members added and removed
		want [5]int
	}{
		{"node3 joins", []nodeinfo.Info{infos[0], infos[1], infos[2], infos[3]}, []string{"node3"}, [5]int{3, 0, 0, 3, 0}},
		{"node4 joins", []nodeinfo.Info{infos[0], infos[1], infos[2], infos[3], infos[4]}, []string{"node4"}, [5]int{3, 0, 0, 3, 0}},
		{"node1's chassis changes", []nodeinfo.Info{infos[0], changed, infos[2], infos[3], infos[4]}, []string{"node1"}, [5]int{0, 1, 0, 0, 0}},
		{"node2's slice changes", []nodeinfo.Info{infos[0], changed, resliced, infos[3], infos[4]}, []string{"node2"}, [5]int{1, 0, 1, 1, 1}},
		{"node4 leaves, node1b takes its ID", []nodeinfo.Info{infos[0], changed, resliced, infos[3], taker}, []string{"node1b", "node4"}, [5]int{1, 2, 1, 1, 1}},
		{"node3 leaves", []nodeinfo.Info{infos[0], changed, resliced, taker}, []string{"node3"}, [5]int{0, 0, 3, 0, 3}},
		{"node3 is gone already", []nodeinfo.Info{infos[0], changed, resliced, taker}, []string{"node3"}, [5]int{}},
	} {
		t.Run(step.name, func(t *testing.T) { partStep(t, s, render(step.nodes), step.part, step.want) })
	}

	// The other network was left alone: its plan with the nodes it was
	// written for is still empty.
	res, err := topology.Render(topology.Input{Network: nets[1], Nodes: infos[:3], Zone: "node0", Cluster: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Plan(feature.NetworkKey(nets[1].Name).String(), res.Rows); err != nil || !p.Empty() {
		t.Errorf("another network's plan after the parts: %v, %v", p, err)
	}

	// A part whose parent another owner holds is refused.
	foreign := ovsdbsync.Part{Key: topology.NodeKey, Values: []string{"node3"}, Parents: []ovsdbsync.Contribution{
		{Target: &nbdb.LogicalSwitch{Name: n.TransitSwitch()}, Column: "ports"}}}
	if _, err := s.PlanPart(feature.NetworkKey(nets[1].Name).String(), foreign, nil); err == nil {
		t.Error("a part planned into another owner's rows")
	}
	// So is a row whose ID the owner holds outside the part: node9 with
	// node1b's ID and slice, node1b left out of the part (the whole would
	// re-tag node1b's routes; the part alone would insert them twice).
	nine := taker
	nine.Name, nine.Zone = "node9", "node9"
	part, err = topology.RenderRemote(render([]nodeinfo.Info{infos[0], changed, resliced, nine}), []string{"node9"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := zone.SyncRemote(ctx, s, n.Name, []string{"node9"}, part); !errors.Is(err, ovsdbsync.ErrOutsidePart) {
		t.Errorf("a part inserting rows whose IDs the owner holds outside it: %v, %v; want ErrOutsidePart", p, err)
	}
	// So is a row that is not the part's.
	part, err = topology.RenderRemote(render(infos), []string{"node3"})
	if err != nil {
		t.Fatal(err)
	}
	other := ovsdbsync.Part{Key: topology.NodeKey, Values: []string{"node4"}}
	if _, err := s.PlanPart(owner, other, part.Rows); err == nil {
		t.Error("node3's rows planned as node4's part")
	}
}

// TestRemotePartsLayer2: a Layer2 primary network's rows for a remote node
// (the transit router's port toward its gateway router, the route to its
// join address) written as a part, as the node joins and leaves.
func TestRemotePartsLayer2(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	_, infos := benchInputs(0, 4)
	c := &netconf.NetConf{Name: "ns.l2", Type: netconf.CNIType, Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary, Subnets: "10.200.0.0/16"}
	n, err := topology.FromNetConf(c, 7, []int{16715776}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := benchSyncer(t, ovntest.StartNB(t, "parts-l2"))
	render := func(nodes []nodeinfo.Info) topology.Input {
		return topology.Input{Network: n, Nodes: nodes, Zone: "node0", Cluster: cfg}
	}
	res, err := topology.Render(render(infos[:3]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sync(ctx, feature.NetworkKey(n.Name).String(), res.Rows); err != nil {
		t.Fatal(err)
	}
	changed := infos[2]
	changed.ChassisID = "chassis-node2-replaced"
	t.Run("node3 joins", func(t *testing.T) { partStep(t, s, render(infos), []string{"node3"}, [5]int{2, 0, 0, 2, 0}) })
	t.Run("node2's chassis changes", func(t *testing.T) {
		partStep(t, s, render([]nodeinfo.Info{infos[0], infos[1], changed, infos[3]}), []string{"node2"}, [5]int{0, 1, 0, 0, 0})
	})
	t.Run("node3 leaves", func(t *testing.T) {
		partStep(t, s, render([]nodeinfo.Info{infos[0], infos[1], changed}), []string{"node3"}, [5]int{0, 0, 2, 0, 2})
	})
}

// partStep writes the part of in's network for nodes and checks what its
// plan did (inserted, updated, deleted, members added and removed) and
// that the network's whole plan is empty afterwards.
func partStep(t *testing.T, s *ovsdbsync.Syncer, in topology.Input, nodes []string, want [5]int) {
	t.Helper()
	part, err := topology.RenderRemote(in, nodes)
	if err != nil {
		t.Fatal(err)
	}
	p, err := zone.SyncRemote(context.Background(), s, in.Network.Name, nodes, part)
	if err != nil {
		t.Fatal(err)
	}
	if got := [5]int{p.Inserted, p.Updated, p.Deleted, p.Added, p.Removed}; got != want {
		t.Errorf("part plan %s: got %v, want %v", p, got, want)
	}
	whole, err := topology.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Plan(feature.NetworkKey(in.Network.Name).String(), whole.Rows)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Empty() {
		t.Errorf("after the part, the whole network's plan is not empty: %s\n%v", again, again.Ops)
	}
}
