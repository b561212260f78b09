package udncontroller

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// TestJudgePrimaries is the validation table of several primary networks
// in one namespace (OKEP-5252): what may join, and the reason when not.
func TestJudgePrimaries(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	at := func(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }
	pfx := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	sel := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": v}}
	}
	udn := func(name string, age int, withNAD bool, subnets ...string) claimant {
		c := claimant{kind: netconf.KindUDN, name: "ns/" + name, uid: types.UID(name), created: at(age), subnets: pfx(subnets...)}
		if withNAD {
			c.nad = &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: at(age)}}
		}
		return c
	}
	cudn := func(name string, age int, selector *metav1.LabelSelector, subnets ...string) claimant {
		return claimant{kind: netconf.KindCUDN, name: name, uid: types.UID(name), created: at(age), subnets: pfx(subnets...), selector: selector}
	}
	handMade := claimant{foreign: true, nad: &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "by-hand", CreationTimestamp: at(50)}}}
	ok := verdict{}
	more := verdict{additional: true}
	tests := []struct {
		name   string
		claims []claimant
		want   map[types.UID]string // UID → reason ("" admitted first, "+" admitted as an additional network)
	}{
		{"one UDN", []claimant{udn("a", 0, true, "10.0.0.0/24")}, map[types.UID]string{"a": ""}},
		{"Layer2 and Layer3 UDNs, disjoint", []claimant{udn("a", 0, true, "10.0.0.0/24"), udn("b", 1, false, "10.1.0.0/16", "fd00:1::/48")},
			map[types.UID]string{"a": "", "b": "+"}},
		{"overlapping subnets: the later one fails", []claimant{udn("a", 0, true, "10.0.0.0/16"), udn("b", 1, false, "10.0.1.0/24")},
			map[types.UID]string{"a": "", "b": v1.ReasonPrimarySubnetOverlap}},
		{"the one with a NAD comes first, whatever its age", []claimant{udn("old", 0, false, "10.0.0.0/16"), udn("has-nad", 5, true, "10.0.0.0/24")},
			map[types.UID]string{"has-nad": "", "old": v1.ReasonPrimarySubnetOverlap}},
		{"a refused network does not block a later one", []claimant{udn("a", 0, true, "10.0.0.0/16"), udn("b", 1, false, "10.0.0.0/24", "10.9.0.0/24"), udn("c", 2, false, "10.9.0.0/24")},
			map[types.UID]string{"a": "", "b": v1.ReasonPrimarySubnetOverlap, "c": "+"}},
		{"UDN and CUDN never mix", []claimant{udn("a", 0, true, "10.0.0.0/24"), cudn("c", 1, sel("x"), "10.1.0.0/24")},
			map[types.UID]string{"a": "", "c": v1.ReasonPrimaryConflict}},
		{"CUDNs with the same selector", []claimant{cudn("c1", 0, sel("x"), "10.0.0.0/24"), cudn("c2", 1, sel("x"), "10.1.0.0/24")},
			map[types.UID]string{"c1": "", "c2": "+"}},
		{"CUDNs with different selectors", []claimant{cudn("c1", 0, sel("x"), "10.0.0.0/24"), cudn("c2", 1, sel("y"), "10.1.0.0/24")},
			map[types.UID]string{"c1": "", "c2": v1.ReasonPrimarySelectorMismatch}},
		{"CUDNs, same selector, overlapping", []claimant{cudn("c1", 0, sel("x"), "10.0.0.0/24"), cudn("c2", 1, sel("x"), "10.0.0.0/24")},
			map[types.UID]string{"c1": "", "c2": v1.ReasonPrimarySubnetOverlap}},
		{"a hand-made primary NAD admits nothing", []claimant{udn("a", 0, true, "10.0.0.0/24"), handMade},
			map[types.UID]string{"a": v1.ReasonPrimaryConflict}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := judgePrimaries("ns", tc.claims)
			gotReasons := map[types.UID]string{}
			for uid, v := range got {
				switch {
				case v.reason != "":
					gotReasons[uid] = v.reason
					if v.message == "" {
						t.Errorf("%s: reason %s without a message", uid, v.reason)
					}
				case v == more:
					gotReasons[uid] = "+"
				case v == ok:
					gotReasons[uid] = ""
				}
			}
			if diff := cmp.Diff(tc.want, gotReasons); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}
