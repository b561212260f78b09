package topology

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// Describe renders rows the way an OVN operator reads `ovn-nbctl show`:
// routers with their ports, routes, policies and NATs, then switches with
// their ports; everything sorted, so the text is stable. References are
// followed by ID (desired rows) or UUID (rows read back from a database).
func Describe(rows []model.Model) string {
	byID := map[string]model.Model{}
	var routers []*nbdb.LogicalRouter
	var switches []*nbdb.LogicalSwitch
	var groups []*nbdb.PortGroup
	var lbGroups []*nbdb.LoadBalancerGroup
	var sets []*nbdb.AddressSet
	var bfds []*nbdb.BFD
	for _, r := range rows {
		byID[RowID(r)] = r
		switch v := r.(type) {
		case *nbdb.LogicalRouter:
			routers = append(routers, v)
		case *nbdb.LogicalSwitch:
			switches = append(switches, v)
		case *nbdb.PortGroup:
			groups = append(groups, v)
		case *nbdb.LoadBalancerGroup:
			lbGroups = append(lbGroups, v)
		case *nbdb.AddressSet:
			sets = append(sets, v)
		case *nbdb.BFD:
			bfds = append(bfds, v)
		}
	}
	sort.Slice(lbGroups, func(i, j int) bool { return lbGroups[i].Name < lbGroups[j].Name })
	lbGroupLines := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			if g, ok := byID[id].(*nbdb.LoadBalancerGroup); ok {
				out = append(out, "  load-balancer-group "+g.Name)
			}
		}
		return out
	}
	// lbLines lists load balancers' VIPs, one line each.
	lbLines := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			lb, ok := byID[id].(*nbdb.LoadBalancer)
			if !ok {
				continue
			}
			proto := ""
			if lb.Protocol != nil {
				proto = string(*lb.Protocol)
			}
			for vip, backends := range lb.Vips {
				out = append(out, fmt.Sprintf("  lb %s %s %s -> [%s]%s", lb.Name, proto, vip, backends, kv(lb.Options)))
			}
		}
		return out
	}
	sort.Slice(routers, func(i, j int) bool { return routers[i].Name < routers[j].Name })
	sort.Slice(switches, func(i, j int) bool { return switches[i].Name < switches[j].Name })
	var b strings.Builder
	for _, r := range routers {
		fmt.Fprintf(&b, "router %s%s\n", r.Name, kv(r.Options))
		var lines []string
		for _, id := range r.Ports {
			if p, ok := byID[id].(*nbdb.LogicalRouterPort); ok {
				line := fmt.Sprintf("  port %s mac %s networks %s", p.Name, p.MAC, strings.Join(sorted(p.Networks), ","))
				if p.Peer != nil {
					line += " peer " + *p.Peer
				}
				for _, gid := range p.GatewayChassis {
					if gc, ok := byID[gid].(*nbdb.GatewayChassis); ok {
						line += fmt.Sprintf(" gateway-chassis %s/%d", gc.ChassisName, gc.Priority)
					}
				}
				lines = append(lines, line+kv(p.Options))
			}
		}
		lines = append(lines, lbGroupLines(r.LoadBalancerGroup)...)
		lines = append(lines, lbLines(r.LoadBalancer)...)
		sort.Strings(lines)
		b.WriteString(join(lines))
		lines = nil
		for _, id := range r.StaticRoutes {
			if rt, ok := byID[id].(*nbdb.LogicalRouterStaticRoute); ok {
				line := "  route "
				if rt.Policy != nil && *rt.Policy == nbdb.LogicalRouterStaticRoutePolicySrcIP {
					line += "src-ip "
				}
				line += rt.IPPrefix + " via " + rt.Nexthop
				if rt.OutputPort != nil {
					line += " dev " + *rt.OutputPort
				}
				if rt.BFD != nil {
					if bfd, ok := byID[*rt.BFD].(*nbdb.BFD); ok {
						line += " bfd " + bfd.LogicalPort
					} else if rest, ok := strings.CutPrefix(*rt.BFD, "bfd:"); ok {
						// The default network's session (BFDRowID), shared.
						port, _, _ := strings.Cut(rest, ":")
						line += " bfd " + port
					} else {
						line += " bfd " + *rt.BFD
					}
				}
				line += kv(rt.Options)
				lines = append(lines, line)
			}
		}
		sort.Strings(lines)
		b.WriteString(join(lines))
		lines = nil
		for _, id := range r.Policies {
			if p, ok := byID[id].(*nbdb.LogicalRouterPolicy); ok {
				line := fmt.Sprintf("  policy %d %s %s", p.Priority, p.Match, p.Action)
				if len(p.Nexthops) > 0 {
					line += " " + strings.Join(sorted(p.Nexthops), ",")
				}
				lines = append(lines, line)
			}
		}
		sort.Strings(lines)
		b.WriteString(join(lines))
		lines = nil
		for _, id := range r.Nat {
			if n, ok := byID[id].(*nbdb.NAT); ok {
				line := fmt.Sprintf("  nat %s %s -> %s", n.Type, n.LogicalIP, n.ExternalIP)
				if n.LogicalPort != nil {
					line += " port " + *n.LogicalPort
				}
				if n.GatewayPort != nil {
					if p, ok := byID[*n.GatewayPort].(*nbdb.LogicalRouterPort); ok {
						line += " gateway-port " + p.Name
					}
				}
				if n.Match != "" {
					line += " match " + n.Match
				}
				lines = append(lines, line)
			}
		}
		sort.Strings(lines)
		b.WriteString(join(lines))
	}
	for _, s := range switches {
		fmt.Fprintf(&b, "switch %s%s\n", s.Name, kv(s.OtherConfig))
		var lines []string
		for _, id := range s.Ports {
			if p, ok := byID[id].(*nbdb.LogicalSwitchPort); ok {
				line := "  port " + p.Name
				if p.Type != "" {
					line += " type " + p.Type
				}
				if len(p.Addresses) > 0 {
					line += " addresses [" + strings.Join(sorted(p.Addresses), "; ") + "]"
				}
				if len(p.PortSecurity) > 0 {
					line += " security [" + strings.Join(sorted(p.PortSecurity), "; ") + "]"
				}
				if p.TagRequest != nil {
					line += fmt.Sprintf(" vlan %d", *p.TagRequest)
				}
				lines = append(lines, line+kv(p.Options))
			}
		}
		lines = append(lines, lbGroupLines(s.LoadBalancerGroup)...)
		lines = append(lines, lbLines(s.LoadBalancer)...)
		sort.Strings(lines)
		b.WriteString(join(lines))
	}
	for _, g := range lbGroups {
		fmt.Fprintf(&b, "load-balancer-group %s\n", g.Name)
		lines := lbLines(g.LoadBalancer)
		sort.Strings(lines)
		b.WriteString(join(lines))
	}
	for _, g := range groups {
		var ports []string
		for _, id := range g.Ports {
			if p, ok := byID[id].(*nbdb.LogicalSwitchPort); ok {
				ports = append(ports, p.Name)
			}
		}
		sort.Strings(ports)
		fmt.Fprintf(&b, "port-group %s [%s]\n", g.Name, strings.Join(ports, " "))
		var lines []string
		for _, id := range g.ACLs {
			if a, ok := byID[id].(*nbdb.ACL); ok {
				lines = append(lines, fmt.Sprintf("  acl %s %d %s %s", a.Direction, a.Priority, a.Match, a.Action))
			}
		}
		sort.Strings(lines)
		b.WriteString(join(lines))
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	for _, s := range sets {
		fmt.Fprintf(&b, "address-set %s [%s]%s\n", s.Name, strings.Join(sorted(s.Addresses), " "), kv(s.ExternalIDs))
	}
	sort.Slice(bfds, func(i, j int) bool { return bfds[i].LogicalPort+bfds[i].DstIP < bfds[j].LogicalPort+bfds[j].DstIP })
	for _, f := range bfds {
		timers := map[string]string{}
		for k, v := range map[string]*int{"min_tx": f.MinTx, "min_rx": f.MinRx, "detect_mult": f.DetectMult} {
			if v != nil {
				timers[k] = fmt.Sprint(*v)
			}
		}
		fmt.Fprintf(&b, "bfd %s %s%s\n", f.LogicalPort, f.DstIP, kv(timers))
	}
	return b.String()
}

func kv(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return " {" + strings.Join(parts, " ") + "}"
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func join(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
