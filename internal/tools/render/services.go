package render

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// serviceRows renders every Service of the input in a zone, as the zone
// controller would (zone.Reconciler.DesiredService), sorted by service.
func serviceRows(ctx context.Context, r *zone.Reconciler) ([]ServiceRows, error) {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []ServiceRows
	for _, s := range list.Items {
		key := s.Namespace + "/" + s.Name
		if s.Spec.ClusterIP == "" && s.Spec.Type != corev1.ServiceTypeExternalName {
			out = append(out, ServiceRows{Service: key, NotRendered: "no cluster IP: the API server allocates it; give spec.clusterIP(s) to render its load balancers"})
			continue
		}
		o, err := r.DesiredService(ctx, key)
		var held *feature.NotRendered
		if errors.As(err, &held) {
			out = append(out, ServiceRows{Service: key, NotRendered: held.Reason})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("zone %s, service %s: %w", r.Zone, key, err)
		}
		if len(o.Rows) == 0 {
			continue
		}
		sr := ServiceRows{Service: key, Rows: toRows(o.Rows), Output: o}
		for _, c := range o.Contributions {
			sr.Contributions = append(sr.Contributions, Contribution{Table: tableOf(c.Target), Target: targetName(c.Target), Column: c.Column, Members: c.Members})
		}
		out = append(out, sr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service < out[j].Service })
	return out, nil
}

// targetName is the name a contribution's target row is found by.
func targetName(m model.Model) string {
	switch t := m.(type) {
	case *nbdb.LoadBalancerGroup:
		return t.Name
	case *nbdb.PortGroup:
		return t.Name
	case *nbdb.LogicalRouter:
		return t.Name
	case *nbdb.LogicalSwitch:
		return t.Name
	}
	return ""
}

// withServices returns a network's rows with the rows of the services that
// contribute to them, and the contributions applied (the members the
// database would hold), for describing the network as an operator sees it.
// Service row IDs are prefixed with the service, since IDs are unique only
// within an owner.
func withServices(n NetworkRows, svcs []ServiceRows) []model.Model {
	var all []model.Model
	byName := map[string]model.Model{}
	for _, m := range n.Models {
		c := model.Clone(m)
		all = append(all, c)
		if name := targetName(c); name != "" {
			byName[fmt.Sprintf("%T/%s", c, name)] = c
		}
	}
	for _, s := range svcs {
		prefix := s.Service + "/"
		used := false
		for _, ct := range s.Output.Contributions {
			target, ok := byName[fmt.Sprintf("%T/%s", ct.Target, targetName(ct.Target))]
			if !ok {
				continue
			}
			used = true
			for _, id := range ct.Members {
				switch t := target.(type) {
				case *nbdb.LoadBalancerGroup:
					t.LoadBalancer = append(t.LoadBalancer, prefix+id)
				case *nbdb.PortGroup:
					t.ACLs = append(t.ACLs, prefix+id)
				case *nbdb.LogicalRouter:
					t.LoadBalancer = append(t.LoadBalancer, prefix+id)
				case *nbdb.LogicalSwitch:
					t.LoadBalancer = append(t.LoadBalancer, prefix+id)
				}
			}
		}
		if !used {
			continue
		}
		for _, m := range s.Output.Rows {
			c := model.Clone(m)
			switch r := c.(type) {
			case *nbdb.LoadBalancer:
				r.UUID = prefix + r.UUID
			case *nbdb.ACL:
				r.UUID = prefix + r.UUID
			}
			all = append(all, c)
		}
	}
	return all
}
