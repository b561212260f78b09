package render

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// PolicyRows are the rows one NetworkPolicy owner holds in one zone: a
// policy ("np:<ns>/<name>"), a namespace's default deny ("npdeny:<ns>") or a
// peer's address sets ("npas:<network>|<peer>"); see docs/networkpolicy.md.
type PolicyRows struct {
	Owner       string `json:"owner"`
	NotRendered string `json:"notRendered,omitempty"`
	Rows        []Row  `json:"rows,omitempty"`
	// Models are the rows as the zone controller hands them to the
	// database; port groups name ports by their row IDs in the networks'
	// rows (topology.PortRowID), there being no database.
	Models []model.Model `json:"-"`
}

// policyRows renders every NetworkPolicy owner of the input in a zone, as
// the zone controller would (zone.Reconciler.DesiredPolicy), sorted by owner;
// owners with no rows in the zone are left out.
func policyRows(ctx context.Context, r *zone.Reconciler) ([]PolicyRows, error) {
	var out []PolicyRows
	for _, key := range r.PolicyKeys(ctx) {
		rows, _, err := r.DesiredPolicy(ctx, key)
		var held *feature.NotRendered
		if errors.As(err, &held) {
			out = append(out, PolicyRows{Owner: key.String(), NotRendered: held.Reason})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("zone %s, %s: %w", r.Zone, key, err)
		}
		if len(rows) > 0 {
			out = append(out, PolicyRows{Owner: key.String(), Rows: toRows(rows), Models: rows})
		}
	}
	return out, nil
}

// describePolicies describes a zone's policy rows as ovn-nbctl shows them,
// ports by name.
func describePolicies(ps []PolicyRows) string {
	var all []model.Model
	ports := map[string]bool{}
	for _, p := range ps {
		for _, m := range p.Models {
			c := model.Clone(m)
			// IDs are unique within an owner only.
			switch r := c.(type) {
			case *nbdb.PortGroup:
				for i, id := range r.ACLs {
					r.ACLs[i] = p.Owner + "/" + id
				}
				for _, id := range r.Ports {
					ports[id] = true
				}
			case *nbdb.ACL:
				r.UUID = p.Owner + "/" + r.UUID
			}
			all = append(all, c)
		}
	}
	for id := range ports {
		all = append(all, &nbdb.LogicalSwitchPort{UUID: id, Name: strings.TrimPrefix(id, topology.PortRowID(""))})
	}
	return topology.Describe(all)
}
