package render

import (
	"context"
	"fmt"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// EgressIPRows are one network's EgressIP rows in one zone (owner
// "egressip:<network>"): the reroute policies of the pods EgressIPs
// select, the allow policies that keep the network's traffic in the
// cluster, and on an egress node the SNATs (docs/egressip.md).
type EgressIPRows struct {
	Network       string         `json:"network"`
	Rows          []Row          `json:"rows,omitempty"`
	Contributions []Contribution `json:"contributions,omitempty"`
	// Problems say which pods or addresses are left without an egress
	// path, and why.
	Problems []string      `json:"problems,omitempty"`
	Models   []model.Model `json:"-"`
}

// egressIPRows renders the EgressIP rows of every network a zone has, as
// the zone controller would (zone.Reconciler.DesiredEgressIPs); networks
// without any are left out.
func egressIPRows(ctx context.Context, r *zone.Reconciler, networks []NetworkRows) ([]EgressIPRows, error) {
	var out []EgressIPRows
	for _, n := range networks {
		if n.NotRendered != "" {
			continue
		}
		res, err := r.DesiredEgressIPs(ctx, n.Network)
		if err != nil {
			return nil, fmt.Errorf("zone %s, EgressIPs of network %s: %w", r.Zone, n.Network, err)
		}
		if len(res.Rows) == 0 && len(res.Problems) == 0 {
			continue
		}
		out = append(out, EgressIPRows{Network: n.Network, Rows: toRows(res.Rows), Problems: res.Problems, Models: res.Rows,
			Contributions: contributionsOf(res.Contributions)})
	}
	return out, nil
}
