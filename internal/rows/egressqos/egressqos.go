// Package egressqos builds the Northbound rows of one namespace's EgressQoS
// on one network in one zone (issue 50, in ovn-kubernetes' shape): per rule,
// a QoS row that sets the DSCP of what the rule's pods send to its
// destination, on the switch the network's pods of the zone plug into.
//
// Contract:
//   - the QoS rows are to-lport, priority StartPriority minus the rule's
//     index (the first matching rule wins), action dscp; their match names
//     the selected pods' addresses in the zone ("ip4.src == {...}") and the
//     rule's CIDR, so two tenants with one subnet never mark each other's
//     traffic: each row is on its own network's switch;
//   - they are contributed to the switch's qos_rules (the network owns the
//     switch);
//   - the rows are a pure function of Input; a rule with no selected pod
//     of its address family in the zone renders nothing.
package egressqos

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// StartPriority is the first rule's priority; each next rule's is one
// lower (ovn-kubernetes' 1000: at most 1000 rules).
const StartPriority = 1000

// External IDs on the rows.
const (
	// NamespaceKey names the namespace whose EgressQoS a row applies.
	NamespaceKey = "k8s.ovn.org/egress-qos"
	// RuleKey is the index of the rule a row applies.
	RuleKey = "k8s.ovn.org/rule"
)

// OwnerPrefix starts the ovsdbsync owner (and reconcile key) of a
// namespace's EgressQoS rows.
const OwnerPrefix = "egressqos:"

// Owner is the owner of a namespace's EgressQoS rows.
func Owner(namespace string) string { return OwnerPrefix + namespace }

// Rule is one rule with its pods resolved by the caller.
type Rule struct {
	DSCP int
	// CIDR is the rule's destination (invalid: every destination).
	CIDR netip.Prefix
	// Sources are the addresses, on the network, of the zone's pods the
	// rule's selector picks.
	Sources []netip.Addr
}

// Input is one namespace's EgressQoS on one network, as one zone sees it.
type Input struct {
	Namespace string
	Network   topology.Network
	// Node is the zone's node (its pods' switch on a Layer3 network).
	Node  string
	Rules []Rule
	// IDPrefix starts the rows' IDs: distinct per network when one owner
	// writes a namespace's rows on several.
	IDPrefix string
}

// Result is the rows and their place on the switch.
type Result struct {
	Rows          []model.Model
	Contributions []ovsdbsync.Contribution
}

// Render returns the rows of in (see the package comment).
func Render(in Input) Result {
	var res Result
	var ids []string
	for i, r := range in.Rules {
		match := ruleMatch(r)
		if match == "" {
			continue
		}
		q := &nbdb.QoS{UUID: fmt.Sprintf("%sqos:%d", in.IDPrefix, i), Direction: nbdb.QoSDirectionToLport,
			Priority: StartPriority - i, Match: match, Action: map[string]int{nbdb.QoSActionDSCP: r.DSCP},
			ExternalIDs: map[string]string{NamespaceKey: in.Namespace, RuleKey: fmt.Sprint(i),
				topology.NetworkKey: in.Network.Name, topology.ControllerKey: topology.ZoneController}}
		res.Rows = append(res.Rows, q)
		ids = append(ids, q.UUID)
	}
	if len(ids) > 0 {
		res.Contributions = []ovsdbsync.Contribution{{Target: &nbdb.LogicalSwitch{Name: in.Network.PodSwitch(in.Node)}, Column: "qos_rules", Members: ids}}
	}
	return res
}

// ruleMatch is the rule's match: its sources of each family, to its CIDR
// when it has one ("" when nothing can match).
func ruleMatch(r Rule) string {
	var terms []string
	for _, v4 := range []bool{true, false} {
		if r.CIDR.IsValid() && r.CIDR.Addr().Is4() != v4 {
			continue
		}
		var srcs []string
		for _, a := range r.Sources {
			if a.Is4() == v4 {
				srcs = append(srcs, a.String())
			}
		}
		if len(srcs) == 0 {
			continue
		}
		slices.Sort(srcs)
		srcs = slices.Compact(srcs)
		field := "ip4"
		if !v4 {
			field = "ip6"
		}
		term := field + ".src == {" + strings.Join(srcs, ", ") + "}"
		if r.CIDR.IsValid() {
			term += " && " + field + ".dst == " + r.CIDR.Masked().String()
		}
		terms = append(terms, term)
	}
	if len(terms) == 1 {
		return terms[0]
	}
	for i, t := range terms {
		terms[i] = "(" + t + ")"
	}
	return strings.Join(terms, " || ")
}
