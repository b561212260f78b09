package explain

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressqos"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressips"
)

// Row is the Northbound row a logical flow was made from.
type Row struct {
	// Table is the Northbound table: ACL, Logical_Router_Policy,
	// Logical_Router_Static_Route, NAT or Load_Balancer.
	Table    string
	UUID     string
	Name     string
	Match    string
	Priority int
	// Action is the ACL's or policy's action, a route's next hop, a NAT's
	// type and address.
	Action    string
	Direction string
	// OutputPort is a route's output port ("" for other rows, and routes
	// without one).
	OutputPort string
	// ExternalIDs are the row's; ovn-udn's rows name their owner there.
	ExternalIDs map[string]string
}

// Owner returns the row's owner key ("np:shop/web", "net:l3-blue.tenant"),
// empty for rows ovn-udn did not write.
func (r Row) Owner() string { return r.ExternalIDs[ovsdbsync.OwnerKey] }

// Describe says, for people, which feature the row belongs to.
func (r Row) Describe() string {
	owner := r.Owner()
	kind, name, _ := strings.Cut(owner, ":")
	dir := r.ExternalIDs[netpol.DirectionKey]
	switch kind {
	case "np":
		if dir != "" {
			return fmt.Sprintf("NetworkPolicy %s (%s)", name, dir)
		}
		return "NetworkPolicy " + name
	case "npdeny":
		return fmt.Sprintf("the default deny of namespace %s's NetworkPolicies (%s)", name, orUnknown(dir))
	case "npas":
		return "the address sets of NetworkPolicy peers " + name
	case "net":
		switch r.Table {
		case "Logical_Router_Policy":
			return fmt.Sprintf("network %s's routing policy", name)
		case "Logical_Router_Static_Route":
			if topology.IsUpgradeRouterPort(r.OutputPort) {
				return fmt.Sprintf("network %s's route to a node still at the old Layer2 topology, through the upgrade port (rolling upgrade)", name)
			}
			return fmt.Sprintf("network %s's route", name)
		case "NAT":
			return fmt.Sprintf("network %s's NAT", name)
		case "ACL":
			return fmt.Sprintf("network %s's isolation ACL", name)
		}
		return "network " + name
	case "svc":
		return "Service " + name
	case "cnc":
		return "ClusterNetworkConnect " + name
	case strings.TrimSuffix(egressip.OwnerPrefix, ":"):
		object := r.ExternalIDs[egressip.ObjectKey]
		// An EgressService takes the EgressIP path under a name of its own.
		what, addr, via := "EgressIP "+object, "its egress IP", "its egress nodes"
		if svc, ok := strings.CutPrefix(object, egressips.ServiceObjectPrefix); ok {
			what, addr, via = "EgressService "+svc, "its load-balancer IP", "its host"
		}
		switch {
		case r.Table == "NAT" && object != "":
			return fmt.Sprintf("%s's SNAT to %s (network %s)", what, addr, name)
		case r.Table == "Logical_Router_Policy" && object != "" && r.Action == "reroute":
			return fmt.Sprintf("%s's reroute to %s (network %s)", what, via, name)
		case r.Table == "Logical_Router_Policy" && object != "":
			return fmt.Sprintf("%s's policy (network %s)", what, name)
		case r.Table == "Logical_Router_Policy":
			return fmt.Sprintf("network %s's EgressIP allow policy: traffic within the cluster keeps its path", name)
		case r.Table == "Logical_Router_Static_Route":
			return fmt.Sprintf("network %s's EgressIP route to the egress node's gateway router", name)
		}
		return fmt.Sprintf("network %s's EgressIPs", name)
	case strings.TrimSuffix(egressfirewall.OwnerPrefix, ":"):
		if rule, ok := r.ExternalIDs[egressfirewall.RuleKey]; ok {
			return fmt.Sprintf("EgressFirewall %s/default rule %s (network %s)", name, rule, orUnknown(r.ExternalIDs[topology.NetworkKey]))
		}
		return fmt.Sprintf("EgressFirewall %s/default", name)
	case strings.TrimSuffix(egressqos.OwnerPrefix, ":"):
		return fmt.Sprintf("EgressQoS %s/default rule %s (network %s)", name, orUnknown(r.ExternalIDs[egressqos.RuleKey]), orUnknown(r.ExternalIDs[topology.NetworkKey]))
	case "vm":
		return fmt.Sprintf("VM %s's port, shared by its pods (live migration)", name)
	case strings.TrimSuffix(primarylinks.OwnerPrefix, ":"):
		a, b, _ := strings.Cut(name, "|")
		return fmt.Sprintf("the link between primary networks %s and %s", a, b)
	case "":
		return "a " + r.Table + " row not written by ovn-udn"
	}
	return fmt.Sprintf("%s (owner %s)", r.Table, owner)
}

// Spelled is the row itself in one line: table, name, priority, match,
// action.
func (r Row) Spelled() string {
	var b strings.Builder
	b.WriteString(r.Table)
	if r.Name != "" {
		fmt.Fprintf(&b, " %q", r.Name)
	}
	if r.Direction != "" {
		b.WriteString(" " + r.Direction)
	}
	if r.Priority != 0 {
		fmt.Fprintf(&b, " priority %d", r.Priority)
	}
	if r.Match != "" {
		fmt.Fprintf(&b, " match %q", r.Match)
	}
	if r.Action != "" {
		b.WriteString(" action " + r.Action)
	}
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "direction unknown"
	}
	return s
}

// dropStage returns the stage of a hop that decided to drop the packet.
// With tiered ACLs the evaluation stage sets a verdict and a later
// acl_action stage carries it out: the decision is the last acl_eval stage
// before it. Otherwise it is the hop's last stage.
func dropStage(h ovntrace.Hop) (ovntrace.Stage, bool) {
	n := len(h.Stages)
	if n == 0 {
		return ovntrace.Stage{}, false
	}
	if last := h.Stages[n-1]; strings.HasSuffix(last.Name, "_acl_action") {
		for i := n - 2; i >= 0; i-- {
			if strings.HasSuffix(h.Stages[i].Name, "_acl_eval") {
				return h.Stages[i], true
			}
		}
	}
	return h.Stages[n-1], true
}

// builtinReason explains a drop by one of northd's own flows (no row of
// ours behind it), from the stage it happened in.
func builtinReason(s ovntrace.Stage) string {
	switch {
	case strings.HasSuffix(s.Name, "_port_sec"):
		return "port security: the packet's source MAC or address is not the port's"
	case s.Name == "lr_in_admission":
		return "the router does not own the packet's destination MAC"
	case s.Name == "lr_in_ip_routing" || s.Name == "lr_in_ip_routing_ecmp":
		return "the router has no route to the destination"
	case s.Name == "ls_in_l2_lkup" || s.Name == "ls_in_l2_unknown":
		return "no port of the switch has the destination MAC"
	case s.Name == "lr_in_ip_input":
		return "the router drops it on input (a martian or unknown address, or TTL exhausted)"
	case strings.Contains(s.Name, "_acl_"):
		return "an ACL (no row of ovn-udn behind it)"
	}
	return "a flow of northd's"
}

var (
	routeMatchRe = regexp.MustCompile(`ip[46]\.(dst|src) == [0-9a-fA-F.:]+/\d+`)
	backendsRe   = regexp.MustCompile(`ct_lb_mark\(backends=([^;]*)\);`)
	natRe        = regexp.MustCompile(`^(ct_snat|ct_dnat|ct_snat_in_czone|ct_dnat_in_czone)\(([^)]+)\)`)
	outportRe    = regexp.MustCompile(`^outport = "([^"]+)";$`)
)

// stageNote is what a hop's stage says worth showing: the route taken, a
// load balancer's backends, an address translation, and every decision of
// a row of ours (an ACL or policy admitting or dropping it). Empty for the
// rest.
func stageNote(s ovntrace.Stage, row *Row) string {
	switch {
	case s.Name == "lr_in_ip_routing":
		route := routeMatchRe.FindString(s.Match)
		if route == "" {
			route = s.Match
		}
		out := ""
		for _, a := range s.Actions {
			if m := outportRe.FindStringSubmatch(a); m != nil {
				out = " out " + m[1]
			}
		}
		note := "route " + route + out
		if row != nil && row.Owner() != "" {
			note += " (" + row.Describe() + ")"
		}
		return note
	case strings.HasSuffix(s.Name, "_acl_eval") || s.Name == "lr_in_policy":
		if row == nil || row.Owner() == "" {
			return ""
		}
		verb := "admitted by"
		switch row.Action {
		case "drop", "reject":
			verb = "dropped by"
		case "pass":
			verb = "passed on by"
		case "reroute":
			verb = "rerouted by"
		}
		return fmt.Sprintf("%s %s: %s", verb, row.Describe(), row.Spelled())
	}
	for _, a := range s.Actions {
		if m := backendsRe.FindStringSubmatch(a); m != nil {
			return "load balancer: backends " + m[1]
		}
		if m := natRe.FindStringSubmatch(a); m != nil {
			return strings.TrimPrefix(strings.TrimSuffix(m[1], "_in_czone"), "ct_") + " " + m[2]
		}
	}
	return ""
}
