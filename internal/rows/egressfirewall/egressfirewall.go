// Package egressfirewall builds the Northbound rows of one namespace's
// EgressFirewall on one network in one zone (issue 50, in
// ovn-kubernetes' shape): a port group of the namespace's pods on the
// network, and per rule an ACL on it that allows or drops what those pods
// send to the rule's destination, in rule order.
//
// Contract:
//   - the ACLs are to-lport, tier 2 (NetworkPolicy's tier), priority
//     StartPriority minus the rule's index: the first matching rule wins;
//     their match is "(destination) && inport == @<port group>", with the
//     rule's ports, so a service's traffic is judged on the backend after
//     load balancing;
//   - a destination never covers the network's own subnets, nor those of
//     the networks its pods reach inside the cluster (Input.Exclude): a
//     CIDR that overlaps them leaves them out, a resolved address in them
//     is dropped; traffic inside the cluster keeps its path;
//   - the rows are a pure function of Input: no rule of another namespace
//     or network is read, so two tenants with one subnet never see each
//     other's rules (the port group and IDs are the network's and the
//     namespace's);
//   - an object with more than MaxRules rules renders nothing and says so;
//     a rule that can match nothing (a DNS name not resolved yet, a node
//     selector selecting no node) renders no ACL and says so.
package egressfirewall

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// ACL priorities and tier.
const (
	// StartPriority is the first rule's priority; each next rule's is one
	// lower.
	StartPriority = 10000
	// MinPriority is the lowest a rule may get (the range below is other
	// features').
	MinPriority = 2000
	// MaxRules is how many rules an object may have: one per priority from
	// StartPriority down to MinPriority.
	MaxRules = StartPriority - MinPriority + 1
	// Tier is the ACLs' tier (NetworkPolicy's).
	Tier = 2
)

// External IDs on the rows.
const (
	// NamespaceKey names the namespace whose firewall a row enforces.
	NamespaceKey = "k8s.ovn.org/egress-firewall"
	// RuleKey is the index of the rule an ACL enforces.
	RuleKey = "k8s.ovn.org/rule"
)

// OwnerPrefix starts the ovsdbsync owner (and reconcile key) of a
// namespace's EgressFirewall rows.
const OwnerPrefix = "egressfirewall:"

// Owner is the owner of a namespace's EgressFirewall rows.
func Owner(namespace string) string { return OwnerPrefix + namespace }

// Action is a rule's verdict.
type Action string

// Actions, as the API spells them.
const (
	Allow Action = "Allow"
	Deny  Action = "Deny"
)

// Port is a destination port of a protocol ("TCP", "UDP" or "SCTP").
type Port struct {
	Protocol string
	Port     int32
}

// Rule is one rule with its destination resolved by the caller: a CIDR,
// or the addresses a DNS name or a node selector stands for (Resolved
// set, Addresses possibly empty).
type Rule struct {
	Action Action
	// CIDR is the rule's cidrSelector (invalid when the rule has none).
	CIDR netip.Prefix
	// Resolved says the destination is Addresses (a dnsName's or a
	// nodeSelector's); Source names it for problems ("dnsName example.com").
	Resolved  bool
	Addresses []netip.Addr
	Source    string
	// Unresolved, when set, is why the destination has no address (a DNS
	// error, a malformed selector): the rule renders no ACL and its
	// problem says this.
	Unresolved string
	Ports      []Port
}

// Input is one namespace's EgressFirewall on one network, as one zone
// sees it.
type Input struct {
	Namespace string
	// Network is the namespace's primary network (its subnets are never
	// covered by a rule).
	Network topology.Network
	Rules   []Rule
	// Ports are the row IDs of the namespace's pods' ports on the network
	// in the zone.
	Ports []string
	// IDPrefix starts the rows' IDs: distinct per network when one owner
	// writes a namespace's rows on several.
	IDPrefix string
	// Exclude are other in-cluster subnets no rule covers (the namespace's
	// other primary networks', connected networks').
	Exclude []netip.Prefix
}

// Result is the rows and what was left out.
type Result struct {
	Rows []model.Model
	// Problems say, per rule (by index), why it has no ACL.
	Problems []string
}

// PortGroupName is the name of the port group of a namespace's pods on a
// network.
func PortGroupName(network, namespace string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(network + "|" + namespace))
	return fmt.Sprintf("ef_%016x", h.Sum64())
}

// Render returns the rows of in (see the package comment). Nothing when
// the zone has no pod of the namespace on the network.
func Render(in Input) Result {
	if len(in.Rules) > MaxRules {
		return Result{Problems: []string{fmt.Sprintf("%d rules: at most %d are allowed", len(in.Rules), MaxRules)}}
	}
	if len(in.Ports) == 0 || len(in.Rules) == 0 {
		return Result{}
	}
	ports := slices.Clone(in.Ports)
	sort.Strings(ports)
	name := PortGroupName(in.Network.Name, in.Namespace)
	pg := &nbdb.PortGroup{UUID: in.IDPrefix + "pg:ef", Name: name, Ports: ports, ExternalIDs: ids(in)}
	res := Result{Rows: []model.Model{pg}}
	for i, r := range in.Rules {
		dst, why := destination(r, excluded(in))
		if why != "" {
			res.Problems = append(res.Problems, fmt.Sprintf("rule %d: %s", i, why))
			continue
		}
		match := "(" + dst + ") && inport == @" + name
		if l4 := l4Match(r.Ports); l4 != "" {
			match += " && (" + l4 + ")"
		}
		action := nbdb.ACLActionAllow
		if r.Action == Deny {
			action = nbdb.ACLActionDrop
		}
		acl := &nbdb.ACL{UUID: fmt.Sprintf("%sacl:ef:%d", in.IDPrefix, i), Direction: nbdb.ACLDirectionToLport, Tier: Tier,
			Priority: StartPriority - i, Action: action, Match: match, Name: aclName(in.Namespace, i), ExternalIDs: ids(in)}
		acl.ExternalIDs[RuleKey] = fmt.Sprint(i)
		res.Rows = append(res.Rows, acl)
		pg.ACLs = append(pg.ACLs, acl.UUID)
	}
	return res
}

// excluded are the subnets no rule of in covers: its network's and
// in.Exclude, sorted, each once.
func excluded(in Input) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range in.Network.Subnets {
		out = append(out, s.CIDR.Masked())
	}
	for _, p := range in.Exclude {
		out = append(out, p.Masked())
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// destination is a rule's destination as an OVN expression, or why it
// can match nothing. Addresses are sorted, each once, so that the match is
// the same whatever order they came in.
func destination(r Rule, exclude []netip.Prefix) (string, string) {
	if !r.Resolved {
		if !r.CIDR.IsValid() {
			return "", "no destination"
		}
		return cidrMatch(r.CIDR.Masked(), exclude), ""
	}
	addrs := slices.Clone(r.Addresses)
	slices.SortFunc(addrs, netip.Addr.Compare)
	addrs = slices.Compact(addrs)
	addrs = slices.DeleteFunc(addrs, func(a netip.Addr) bool {
		return slices.ContainsFunc(exclude, func(p netip.Prefix) bool { return p.Contains(a) })
	})
	var v4, v6 []string
	for _, a := range addrs {
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.String())
		}
	}
	if r.Unresolved != "" {
		return "", r.Source + ": " + r.Unresolved
	}
	if len(v4)+len(v6) == 0 {
		return "", r.Source + " has no address"
	}
	var terms []string
	if len(v4) > 0 {
		terms = append(terms, "ip4.dst == {"+strings.Join(v4, ", ")+"}")
	}
	if len(v6) > 0 {
		terms = append(terms, "ip6.dst == {"+strings.Join(v6, ", ")+"}")
	}
	return strings.Join(terms, " || "), ""
}

// cidrMatch is a CIDR destination, with the excluded subnets of its
// family taken out where they overlap it.
func cidrMatch(c netip.Prefix, exclude []netip.Prefix) string {
	field := "ip4.dst"
	if c.Addr().Is6() {
		field = "ip6.dst"
	}
	out := field + " == " + c.String()
	for _, sub := range exclude {
		if sub.Addr().Is4() != c.Addr().Is4() || !sub.Overlaps(c) {
			continue
		}
		out += " && " + field + " != " + sub.String()
	}
	return out
}

// l4Match is the rule's ports, grouped by protocol ("" for every port).
func l4Match(ports []Port) string {
	by := map[string][]int32{}
	for _, p := range ports {
		proto := strings.ToLower(p.Protocol)
		by[proto] = append(by[proto], p.Port)
	}
	var terms []string
	for _, proto := range []string{"tcp", "udp", "sctp"} {
		list := by[proto]
		if len(list) == 0 {
			continue
		}
		slices.Sort(list)
		list = slices.Compact(list)
		var eq []string
		for _, p := range list {
			eq = append(eq, fmt.Sprintf("%s.dst == %d", proto, p))
		}
		terms = append(terms, "("+proto+" && ("+strings.Join(eq, " || ")+"))")
	}
	return strings.Join(terms, " || ")
}

func ids(in Input) map[string]string {
	return map[string]string{NamespaceKey: in.Namespace, topology.NetworkKey: in.Network.Name, topology.ControllerKey: topology.ZoneController}
}

// aclName is "EF:<namespace>:<rule>", cut to the 63 characters the schema
// allows.
func aclName(namespace string, i int) *string {
	s := fmt.Sprintf("EF:%s:%d", namespace, i)
	if len(s) > 63 {
		s = s[:63]
	}
	return &s
}
