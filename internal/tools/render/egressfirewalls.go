package render

import (
	"context"
	"fmt"
	"strings"

	"github.com/ovn-org/libovsdb/model"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// EgressFirewallRows are one namespace's EgressFirewall rows in one zone
// (owner "egressfirewall:<namespace>"): a port group of its pods' ports
// on each of its primary networks and an ACL per rule
// (docs/egressfirewall.md).
type EgressFirewallRows struct {
	Namespace string `json:"namespace"`
	Rows      []Row  `json:"rows,omitempty"`
	// Problems name the rules not enforced, and why (render resolves no
	// DNS name: a dnsName rule is always one).
	Problems []string      `json:"problems,omitempty"`
	Models   []model.Model `json:"-"`
}

// egressFirewallRows renders every EgressFirewall of the input in a zone,
// as the zone controller would; those with nothing there are left out.
func egressFirewallRows(ctx context.Context, c client.Reader, r *zone.Reconciler) ([]EgressFirewallRows, error) {
	var list v1.EgressFirewallList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []EgressFirewallRows
	for _, ef := range list.Items {
		res, err := r.DesiredEgressFirewall(ctx, ef.Namespace)
		if err != nil {
			return nil, fmt.Errorf("zone %s, EgressFirewall of namespace %s: %w", r.Zone, ef.Namespace, err)
		}
		if len(res.Rows) == 0 {
			continue
		}
		out = append(out, EgressFirewallRows{Namespace: ef.Namespace, Rows: toRows(res.Rows), Problems: res.Problems, Models: res.Rows})
	}
	return out, nil
}

// withPortNames adds to models the ports their port groups list, which
// are other owners' rows (the pods'), so that a description names them.
func withPortNames(models []model.Model) []model.Model {
	out := append([]model.Model(nil), models...)
	seen := map[string]bool{}
	for _, m := range models {
		pg, ok := m.(*nbdb.PortGroup)
		if !ok {
			continue
		}
		for _, id := range pg.Ports {
			if !seen[id] {
				seen[id] = true
				out = append(out, &nbdb.LogicalSwitchPort{UUID: id, Name: strings.TrimPrefix(id, topology.PortRowID(""))})
			}
		}
	}
	return out
}

// EgressQoSRows are one namespace's EgressQoS rows in one zone (owner
// "egressqos:<namespace>"): a QoS row per rule on each of its networks'
// switches there (docs/egressqos.md).
type EgressQoSRows struct {
	Namespace     string         `json:"namespace"`
	Rows          []Row          `json:"rows,omitempty"`
	Contributions []Contribution `json:"contributions,omitempty"`
	Problems      []string       `json:"problems,omitempty"`
	Models        []model.Model  `json:"-"`
}

// egressQoSRows renders every EgressQoS of the input in a zone, as the
// zone controller would; those with nothing there are left out.
func egressQoSRows(ctx context.Context, c client.Reader, r *zone.Reconciler) ([]EgressQoSRows, error) {
	var list v1.EgressQoSList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []EgressQoSRows
	for _, q := range list.Items {
		res, err := r.DesiredEgressQoS(ctx, q.Namespace)
		if err != nil {
			return nil, fmt.Errorf("zone %s, EgressQoS of namespace %s: %w", r.Zone, q.Namespace, err)
		}
		if len(res.Rows) == 0 {
			continue
		}
		out = append(out, EgressQoSRows{Namespace: q.Namespace, Rows: toRows(res.Rows), Problems: res.Problems, Models: res.Rows,
			Contributions: contributionsOf(res.Contributions)})
	}
	return out, nil
}
