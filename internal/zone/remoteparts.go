package zone

import (
	"context"

	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/topology"
)

// SyncRemote writes a network's part for one remote node (its rows tagged
// with the node, topology.RenderRemote) as the network's owner
// (NetworkKey), leaving the network's other rows alone: a node that joins,
// leaves or changes costs each network a plan of its own few rows, not a
// re-plan of every row the network has in the zone. The plan's Missing is
// not empty when the network's transit switch or cluster router is not
// written yet (plan the network whole).
func SyncRemote(ctx context.Context, s *ovsdbsync.Syncer, network, node string, part topology.RemotePart) (*ovsdbsync.Plan, error) {
	p, err := s.PlanPart(NetworkKey(network), remotePart(node, part), part.Rows)
	if err != nil || len(p.Missing) > 0 {
		return p, err
	}
	return p, s.Apply(ctx, p)
}

// remotePart is the Syncer's part for a node's rows of a network.
func remotePart(node string, part topology.RemotePart) ovsdbsync.Part {
	out := ovsdbsync.Part{Key: topology.NodeKey, Value: node}
	for _, m := range part.Parents {
		out.Parents = append(out.Parents, ovsdbsync.Contribution{Target: m.Parent, Column: m.Column, Members: m.Members})
	}
	return out
}
