package render

import (
	"context"
	"fmt"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// ConnectStatus is what cluster-manager would make of a
// ClusterNetworkConnect: its conditions and the annotations holding its
// allocation (connect router tunnel key, the networks' slices).
type ConnectStatus struct {
	Name        string            `json:"name"`
	Conditions  []Condition       `json:"conditions,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ConnectRows are the rows one ClusterNetworkConnect holds in one zone and
// the members it adds to rows the networks own.
type ConnectRows struct {
	Connect       string         `json:"connect"`
	Rows          []Row          `json:"rows,omitempty"`
	Contributions []Contribution `json:"contributions,omitempty"`
	// Problems are the links the zone leaves out (zone.DesiredConnect).
	Problems []string `json:"problems,omitempty"`
	// Models are the rows as the zone controller hands them to the
	// database.
	Models []model.Model `json:"-"`
}

// connectStatuses reads the connects back from the in-memory API.
func connectStatuses(list []v1.ClusterNetworkConnect) []ConnectStatus {
	out := make([]ConnectStatus, 0, len(list))
	for _, c := range list {
		ann := map[string]string{}
		for k, v := range c.Annotations {
			if strings.HasPrefix(k, "k8s.ovn.org/") {
				ann[k] = v
			}
		}
		out = append(out, ConnectStatus{Name: c.Name, Conditions: conditions(c.Status.Conditions), Annotations: ann})
	}
	return out
}

// connectRows renders every ClusterNetworkConnect of the input in a zone, as
// the zone controller would (zone.Reconciler.DesiredConnect), by name;
// connects with no rows in the zone (refused, not allocated) are left out.
func connectRows(ctx context.Context, r *zone.Reconciler, list []v1.ClusterNetworkConnect) ([]ConnectRows, error) {
	var out []ConnectRows
	for _, c := range list {
		res, _, err := r.DesiredConnect(ctx, c.Name)
		if err != nil {
			return nil, fmt.Errorf("zone %s, ClusterNetworkConnect %s: %w", r.Zone, c.Name, err)
		}
		if len(res.Rows) == 0 && len(res.Problems) == 0 {
			continue
		}
		out = append(out, ConnectRows{Connect: c.Name, Rows: toRows(res.Rows), Problems: res.Problems, Models: res.Rows,
			Contributions: contributionsOf(res.Contributions)})
	}
	return out, nil
}

// describeConnect describes a connect's rows in a zone as ovn-nbctl shows
// them, then what it adds to the networks' rows.
func describeConnect(c ConnectRows) string {
	return describeOwned(c.Models, c.Contributions, c.Problems)
}

// contributionsOf spells an owner's contributions for the result.
func contributionsOf(cbs []ovsdbsync.Contribution) []Contribution {
	var out []Contribution
	for _, cb := range cbs {
		out = append(out, Contribution{Table: tableOf(cb.Target), Target: targetName(cb.Target), Column: cb.Column, Members: cb.Members})
	}
	return out
}

// describeOwned describes an owner's rows in a zone as ovn-nbctl shows
// them, then what it adds to rows others own, then what it left out.
func describeOwned(models []model.Model, contributions []Contribution, problems []string) string {
	var b strings.Builder
	b.WriteString(topology.Describe(models))
	acls := map[string]*nbdb.ACL{}
	policies := map[string]*nbdb.LogicalRouterPolicy{}
	routes := map[string]*nbdb.LogicalRouterStaticRoute{}
	ports := map[string]*nbdb.LogicalRouterPort{}
	nats := map[string]*nbdb.NAT{}
	qoses := map[string]*nbdb.QoS{}
	for _, m := range models {
		switch x := m.(type) {
		case *nbdb.QoS:
			qoses[x.UUID] = x
		case *nbdb.NAT:
			nats[x.UUID] = x
		case *nbdb.ACL:
			acls[x.UUID] = x
		case *nbdb.LogicalRouterPolicy:
			policies[x.UUID] = x
		case *nbdb.LogicalRouterStaticRoute:
			routes[x.UUID] = x
		case *nbdb.LogicalRouterPort:
			ports[x.UUID] = x
		}
	}
	for _, cb := range contributions {
		fmt.Fprintf(&b, "adds to %s %s %s:\n", cb.Table, cb.Target, cb.Column)
		for _, id := range cb.Members {
			if a, ok := acls[id]; ok {
				fmt.Fprintf(&b, "  acl %s tier %d %d %s %s\n", a.Direction, a.Tier, a.Priority, a.Match, a.Action)
				continue
			}
			if p, ok := policies[id]; ok {
				fmt.Fprintf(&b, "  policy %d %s %s %s\n", p.Priority, p.Match, p.Action, strings.Join(p.Nexthops, " "))
				continue
			}
			if p, ok := ports[id]; ok {
				peer := ""
				if p.Peer != nil {
					peer = " peer " + *p.Peer
				}
				fmt.Fprintf(&b, "  port %s mac %s networks %s%s\n", p.Name, p.MAC, strings.Join(p.Networks, " "), peer)
				continue
			}
			if r, ok := routes[id]; ok {
				out, policy := "", ""
				if r.OutputPort != nil {
					out = " dev " + *r.OutputPort
				}
				if r.Policy != nil && *r.Policy == nbdb.LogicalRouterStaticRoutePolicySrcIP {
					policy = "src-ip "
				}
				fmt.Fprintf(&b, "  route %s%s via %s%s\n", policy, r.IPPrefix, r.Nexthop, out)
				continue
			}
			if q, ok := qoses[id]; ok {
				fmt.Fprintf(&b, "  qos %s %d %s dscp=%d\n", q.Direction, q.Priority, q.Match, q.Action[nbdb.QoSActionDSCP])
				continue
			}
			if n, ok := nats[id]; ok {
				match := ""
				if n.Match != "" {
					match = " match " + n.Match
				}
				fmt.Fprintf(&b, "  nat %s %s -> %s priority %d%s\n", n.Type, n.LogicalIP, n.ExternalIP, n.Priority, match)
				continue
			}
			fmt.Fprintf(&b, "  %s\n", id)
		}
	}
	for _, p := range problems {
		fmt.Fprintf(&b, "(left out: %s)\n", p)
	}
	return b.String()
}

// LinkRows are the rows the link between two primary networks of a
// namespace holds in one zone, and the members it adds to their routers.
type LinkRows struct {
	Link          string         `json:"link"` // "<network>|<network>"
	Rows          []Row          `json:"rows,omitempty"`
	Contributions []Contribution `json:"contributions,omitempty"`
	Problems      []string       `json:"problems,omitempty"`
	Models        []model.Model  `json:"-"`
	// Result is the link as the zone controller hands it to the database.
	Result primarylinks.Result `json:"-"`
}

// linkRows renders the links between primary networks in a zone, as the
// zone controller would (zone.Reconciler.DesiredLink), by key.
func linkRows(ctx context.Context, r *zone.Reconciler) ([]LinkRows, error) {
	keys, err := r.LinkKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []LinkRows
	for _, k := range keys {
		res, err := r.DesiredLink(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("zone %s, %s: %w", r.Zone, k, err)
		}
		if len(res.Rows) == 0 && len(res.Problems) == 0 {
			continue
		}
		out = append(out, LinkRows{Link: strings.TrimPrefix(k.String(), primarylinks.OwnerPrefix), Rows: toRows(res.Rows), Problems: res.Problems,
			Models: res.Rows, Result: res, Contributions: contributionsOf(res.Contributions)})
	}
	return out, nil
}
