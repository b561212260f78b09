package egressstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

func TestMerge(t *testing.T) {
	deny := v1.EgressFirewallRule{Type: v1.EgressFirewallRuleDeny, To: v1.EgressFirewallDestination{CIDRSelector: "0.0.0.0/0"}}
	wild := v1.EgressFirewallRule{Type: v1.EgressFirewallRuleAllow, To: v1.EgressFirewallDestination{DNSName: "*.example.com"}}
	badSel := v1.EgressFirewallRule{Type: v1.EgressFirewallRuleDeny, To: v1.EgressFirewallDestination{NodeSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: "In"}}}}}
	zones := map[string]bool{"node1": true, "node2": true, "node10": true}
	for _, tc := range []struct {
		name       string
		rules      []v1.EgressFirewallRule
		messages   []string
		wantStatus string
		wantKept   []string
	}{
		{"no zone has pods yet", []v1.EgressFirewallRule{deny}, nil, "EgressFirewall Rules applied", nil},
		{"every zone applies", []v1.EgressFirewallRule{deny},
			[]string{"node1: EgressFirewall Rules applied", "node10: EgressFirewall Rules applied"},
			"EgressFirewall Rules applied", []string{"node1: EgressFirewall Rules applied", "node10: EgressFirewall Rules applied"}},
		{"one zone fails: its reason, first by zone", []v1.EgressFirewallRule{deny},
			[]string{"node2: EgressFirewall Rules not correctly applied: rule 0: dnsName b.test.: NXDOMAIN", "node1: EgressFirewall Rules not correctly applied: rule 0: dnsName a.test.: NXDOMAIN", "node10: EgressFirewall Rules applied"},
			"EgressFirewall Rules not correctly applied: node1: rule 0: dnsName a.test.: NXDOMAIN",
			[]string{"node2: EgressFirewall Rules not correctly applied: rule 0: dnsName b.test.: NXDOMAIN", "node1: EgressFirewall Rules not correctly applied: rule 0: dnsName a.test.: NXDOMAIN", "node10: EgressFirewall Rules applied"}},
		{"a gone zone's message is dropped, failure and all", []v1.EgressFirewallRule{deny},
			[]string{"node9: EgressFirewall Rules not correctly applied: rule 0: x", "node1: EgressFirewall Rules applied", "garbage"},
			"EgressFirewall Rules applied", []string{"node1: EgressFirewall Rules applied"}},
		{"a wildcard name, with no zone", []v1.EgressFirewallRule{deny, wild}, nil,
			"EgressFirewall Rules not correctly applied: rule 1: dnsName *.example.com: a wildcard name is not resolved", nil},
		{"a malformed node selector comes before the zones' problems", []v1.EgressFirewallRule{badSel},
			[]string{"node1: EgressFirewall Rules not correctly applied: rule 0: nodeSelector: malformed selector"},
			"EgressFirewall Rules not correctly applied: rule 0: nodeSelector: malformed selector: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
			[]string{"node1: EgressFirewall Rules not correctly applied: rule 0: nodeSelector: malformed selector"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ef := &v1.EgressFirewall{Spec: v1.EgressFirewallSpec{Egress: tc.rules}, Status: v1.EgressFirewallStatus{Messages: tc.messages}}
			status, kept := Merge(ef, zones)
			if status != tc.wantStatus {
				t.Errorf("status %q, want %q", status, tc.wantStatus)
			}
			if d := cmp.Diff(tc.wantKept, kept); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
		})
	}
}
