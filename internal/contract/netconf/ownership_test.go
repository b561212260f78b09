package netconf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAdmit(t *testing.T) {
	conf := func(network, nad string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network + `","topology":"layer2","role":"secondary","subnets":"10.0.0.0/24","netAttachDefName":"` + nad + `"}`
	}
	// withEgress is the NAD with egress gateway in its config.
	withEgress := func(n *nadv1.NetworkAttachmentDefinition) *nadv1.NetworkAttachmentDefinition {
		n.Spec.Config = strings.Replace(n.Spec.Config, `"role":"secondary"`, `"role":"secondary","egress":"gateway"`, 1)
		return n
	}
	yes := true
	owned := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "k8s.ovn.org/v1", Kind: kind, Name: name, UID: "u", Controller: &yes}}
	}
	nad := func(ns, name, network string, managed bool, refs []metav1.OwnerReference) *nadv1.NetworkAttachmentDefinition {
		n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf(network, ns+"/"+name)}}
		if managed {
			n.Labels = map[string]string{ManagedByLabel: ""}
		}
		return n
	}
	type out struct {
		Admitted []string
		Refused  map[string]string // key -> a part of the reason
	}
	tests := []struct {
		name string
		nads []*nadv1.NetworkAttachmentDefinition
		want out
	}{
		{"a UDN's own NAD", []*nadv1.NetworkAttachmentDefinition{nad("a", "net", "a.net", true, owned(KindUDN, "net"))},
			out{Admitted: []string{"a/net"}}},
		{"a CUDN's NADs", []*nadv1.NetworkAttachmentDefinition{
			nad("a", "cluster.udn.x", "cluster.udn.x", true, owned(KindCUDN, "x")), nad("b", "cluster.udn.x", "cluster.udn.x", true, owned(KindCUDN, "x"))},
			out{Admitted: []string{"a/cluster.udn.x", "b/cluster.udn.x"}}},
		{"hand-made name without a dot, shared across namespaces", []*nadv1.NetworkAttachmentDefinition{
			nad("a", "w", "wire", false, nil), nad("b", "w", "wire", false, nil)},
			out{Admitted: []string{"a/w", "b/w"}}},
		{"hand-made dotted name in its own namespace", []*nadv1.NetworkAttachmentDefinition{nad("a", "extra", "a.extra", false, nil)},
			out{Admitted: []string{"a/extra"}}},
		{"hand-made NAD taking another namespace's network name", []*nadv1.NetworkAttachmentDefinition{
			nad("victim", "net", "victim.net", true, owned(KindUDN, "net")), nad("x", "evil", "victim.net", false, nil)},
			out{Admitted: []string{"victim/net"}, Refused: map[string]string{"x/evil": "belongs to namespace victim"}}},
		{"forged label and owner in another namespace", []*nadv1.NetworkAttachmentDefinition{
			nad("x", "evil", "victim.net", true, owned(KindUDN, "net"))},
			out{Refused: map[string]string{"x/evil": "belongs to namespace victim"}}},
		{"hand-made NAD beside the UDN's in its namespace", []*nadv1.NetworkAttachmentDefinition{
			nad("victim", "net", "victim.net", true, owned(KindUDN, "net")), nad("victim", "other", "victim.net", false, nil)},
			out{Admitted: []string{"victim/net"}, Refused: map[string]string{"victim/other": "which defines it"}}},
		{"hand-made NAD taking a CUDN's name", []*nadv1.NetworkAttachmentDefinition{nad("x", "c", "cluster.udn.x", false, nil)},
			out{Refused: map[string]string{"x/c": "belongs to ClusterUserDefinedNetwork x"}}},
		{"managed NAD owned by another CUDN", []*nadv1.NetworkAttachmentDefinition{nad("x", "c", "cluster.udn.x", true, owned(KindCUDN, "y"))},
			out{Refused: map[string]string{"x/c": "belongs to ClusterUserDefinedNetwork x"}}},
		{"managed NAD whose owner reference was removed", []*nadv1.NetworkAttachmentDefinition{nad("a", "net", "a.net", true, nil)},
			out{Admitted: []string{"a/net"}}},
		{"a CUDN's name with a forged label and no owner reference", []*nadv1.NetworkAttachmentDefinition{nad("evil", "c", "cluster.udn.victim", true, nil)},
			out{Refused: map[string]string{"evil/c": "belongs to ClusterUserDefinedNetwork victim"}}},
		{"egress on a CUDN's network", []*nadv1.NetworkAttachmentDefinition{withEgress(nad("a", "cluster.udn.x", "cluster.udn.x", true, owned(KindCUDN, "x")))},
			out{Admitted: []string{"a/cluster.udn.x"}}},
		{"egress on a UDN's network", []*nadv1.NetworkAttachmentDefinition{withEgress(nad("a", "net", "a.net", true, owned(KindUDN, "net")))},
			out{Refused: map[string]string{"a/net": ErrEgressNotAllowed.Error()}}},
		{"egress on a hand-made network", []*nadv1.NetworkAttachmentDefinition{withEgress(nad("a", "w", "wire", false, nil))},
			out{Refused: map[string]string{"a/w": ErrEgressNotAllowed.Error()}}},
		{"egress with a CUDN's name on a hand-made NAD", []*nadv1.NetworkAttachmentDefinition{withEgress(nad("evil", "c", "cluster.udn.victim", false, nil))},
			out{Refused: map[string]string{"evil/c": "belongs to ClusterUserDefinedNetwork victim"}}},
		{"the default network's name", []*nadv1.NetworkAttachmentDefinition{nad("a", "d", "default", false, nil)},
			out{Refused: map[string]string{"a/d": "reserved for the cluster default network"}}},
		{"another plugin's config is not judged", []*nadv1.NetworkAttachmentDefinition{{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "br"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"type":"bridge","name":"b.c"}`}}},
			out{Admitted: []string{"a/br"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			admitted, refused := Admit(tc.nads)
			got := out{}
			for _, n := range admitted {
				got.Admitted = append(got.Admitted, n.Namespace+"/"+n.Name)
			}
			for _, r := range refused {
				if got.Refused == nil {
					got.Refused = map[string]string{}
				}
				key, part := r.NAD.Namespace+"/"+r.NAD.Name, tc.want.Refused[r.NAD.Namespace+"/"+r.NAD.Name]
				if part != "" && strings.Contains(r.Reason.Error(), part) {
					got.Refused[key] = part
				} else {
					got.Refused[key] = r.Reason.Error()
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}
