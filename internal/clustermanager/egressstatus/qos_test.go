package egressstatus

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

func TestMergeQoS(t *testing.T) {
	ok := func(zone string) metav1.Condition {
		return metav1.Condition{Type: v1.EgressQoSReadyInZone + zone, Status: metav1.ConditionTrue, Reason: "SetupSucceeded", Message: v1.EgressQoSApplied}
	}
	bad := func(zone, why string) metav1.Condition {
		return metav1.Condition{Type: v1.EgressQoSReadyInZone + zone, Status: metav1.ConditionFalse, Reason: "SetupFailed", Message: v1.EgressQoSNotApplied + ": " + why}
	}
	zones := map[string]bool{"node1": true, "node2": true}
	badSel := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Equals"}}}
	for _, tc := range []struct {
		name       string
		rules      []v1.EgressQoSRule
		conds      []metav1.Condition
		wantStatus string
		wantKept   []metav1.Condition
	}{
		{"no zone yet", []v1.EgressQoSRule{{DSCP: 46}}, nil, v1.EgressQoSApplied, nil},
		{"every zone applies", []v1.EgressQoSRule{{DSCP: 46}}, []metav1.Condition{ok("node1"), ok("node2")}, v1.EgressQoSApplied, []metav1.Condition{ok("node1"), ok("node2")}},
		{"one zone fails", []v1.EgressQoSRule{{DSCP: 46}}, []metav1.Condition{ok("node1"), bad("node2", "rule 0: x")},
			v1.EgressQoSNotApplied + ": node2: rule 0: x", []metav1.Condition{ok("node1"), bad("node2", "rule 0: x")}},
		{"a gone zone's condition is dropped", []v1.EgressQoSRule{{DSCP: 46}}, []metav1.Condition{bad("node9", "y"), ok("node1")}, v1.EgressQoSApplied, []metav1.Condition{ok("node1")}},
		{"a malformed selector", []v1.EgressQoSRule{{DSCP: 46, PodSelector: badSel}}, nil,
			v1.EgressQoSNotApplied + ": rule 0: podSelector: \"Equals\" is not a valid label selector operator", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &v1.EgressQoS{Spec: v1.EgressQoSSpec{Egress: tc.rules}, Status: v1.EgressQoSStatus{Conditions: tc.conds}}
			status, kept := MergeQoS(q, zones)
			if status != tc.wantStatus {
				t.Errorf("status %q, want %q", status, tc.wantStatus)
			}
			if d := cmp.Diff(tc.wantKept, kept); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
		})
	}
}
