package podnet

import (
	"errors"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// TestPlaceRequests covers how a pod of a namespace with several primary
// networks is placed on one (OKEP-5252).
func TestPlaceRequests(t *testing.T) {
	const (
		l3 = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.blue","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"ns1/blue"}`
		l2 = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.green","topology":"layer2","role":"primary","subnets":"10.100.0.0/29","netAttachDefName":"ns1/green"}`
		cu = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"cluster.udn.red","topology":"layer2","role":"primary","subnets":"10.101.0.0/24","netAttachDefName":"ns1/cluster.udn.red"}`
	)
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	owned := func(name, conf, kind, owner string, age int, allocated bool) *nadv1.NetworkAttachmentDefinition {
		n := nad("ns1", name, conf, allocated)
		n.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(age) * time.Second))
		yes := true
		n.Labels = map[string]string{netconf.ManagedByLabel: "ovn-udn"}
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "k8s.ovn.org/v1", Kind: kind, Name: owner, UID: "u-" + "owner", Controller: &yes}}
		return n
	}
	blue := owned("blue", l3, "UserDefinedNetwork", "blue", 1, true)
	green := owned("green", l2, "UserDefinedNetwork", "green", 0, true) // older than blue
	greenNotReady := owned("green", l2, "UserDefinedNetwork", "green", 0, false)
	red := owned("cluster.udn.red", cu, "ClusterUserDefinedNetwork", "red", 0, true)
	nads := func(list ...*nadv1.NetworkAttachmentDefinition) map[string]*nadv1.NetworkAttachmentDefinition {
		m := map[string]*nadv1.NetworkAttachmentDefinition{}
		for _, n := range list {
			m[Key(n.Namespace, n.Name)] = n
		}
		return m
	}
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{label: ""}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p", Annotations: ann}, Spec: corev1.PodSpec{NodeName: "node1"}}
	}
	roomAll := func(Primary) bool { return true }
	roomNot := func(full string) HasRoom { return func(p Primary) bool { return p.NAD != full } }
	tests := []struct {
		name    string
		pod     *corev1.Pod
		ns      *corev1.Namespace
		nads    map[string]*nadv1.NetworkAttachmentDefinition
		room    HasRoom
		primary string // the primary attachment's key ("" none)
		record  string
		waiting string
	}{
		{"oldest network first", pod(nil), labelled, nads(blue, green), roomAll, "ns1/green", "green", ""},
		{"oldest full: the next", pod(nil), labelled, nads(blue, green), roomNot("green"), "ns1/blue", "blue", ""},
		{"all full", pod(nil), labelled, nads(blue, green), func(Primary) bool { return false }, "", "", WaitPrimaryNetworksFull},
		{"not allocated yet is skipped", pod(nil), labelled, nads(blue, greenNotReady), roomAll, "ns1/blue", "blue", ""},
		{"without room function: waits for the zone", pod(nil), labelled, nads(blue, green), nil, "", "", WaitPlacementPending},
		{"requested by UDN name", pod(map[string]string{RequestedPrimaryAnnotation: "blue"}), labelled, nads(blue, green), nil, "ns1/blue", "blue", ""},
		{"requested ignores room", pod(map[string]string{RequestedPrimaryAnnotation: "green"}), labelled, nads(blue, green), roomNot("green"), "ns1/green", "green", ""},
		{"requested by CUDN name", pod(map[string]string{RequestedPrimaryAnnotation: "red"}), labelled, nads(red), nil, "ns1/cluster.udn.red", "", ""},
		{"requested by CUDN NAD name", pod(map[string]string{RequestedPrimaryAnnotation: "cluster.udn.red"}), labelled, nads(red), nil, "ns1/cluster.udn.red", "", ""},
		{"requested unknown network", pod(map[string]string{RequestedPrimaryAnnotation: "nope"}), labelled, nads(blue, green), roomAll, "", "", WaitBadRequestedPrimary},
		{"requested unknown, single primary", pod(map[string]string{RequestedPrimaryAnnotation: "nope"}), labelled, nads(blue), roomAll, "", "", WaitBadRequestedPrimary},
		{"requested not allocated waits", pod(map[string]string{RequestedPrimaryAnnotation: "green"}), labelled, nads(blue, greenNotReady), roomAll, "", "", WaitPrimaryNotReady},
		{"requested on the default network is ignored", pod(map[string]string{RequestedPrimaryAnnotation: "blue"}), plain, nil, roomAll, "", "", ""},
		{"placed: the record decides over the request", pod(map[string]string{PlacementAnnotation: "green", RequestedPrimaryAnnotation: "blue"}), labelled, nads(blue, green), roomNot("green"), "ns1/green", "", ""},
		{"placed on a network that is gone", pod(map[string]string{PlacementAnnotation: "gone"}), labelled, nads(blue, green), roomAll, "", "", WaitPlacedNetworkGone},
		{"attached: the annotation decides", pod(map[string]string{Annotation: `{"ns1/blue":{"mac_address":"0a:58:0a:80:00:05","role":"primary"}}`, RequestedPrimaryAnnotation: "green"}), labelled, nads(blue, green), roomAll, "ns1/blue", "", ""},
		{"forged attachment of another namespace is not a placement", pod(map[string]string{Annotation: `{"other/blue":{"mac_address":"0a:58:0a:80:00:05","role":"primary"}}`}), labelled, nads(blue, green), nil, "", "", WaitPlacementPending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reqs, record, err := PlaceRequests(tc.pod, tc.ns, tc.nads, label, tc.room)
			var w *Waiting
			if tc.waiting != "" {
				if !errors.As(err, &w) || w.Reason != tc.waiting {
					t.Fatalf("err = %v, want waiting %s", err, tc.waiting)
				}
				if w.Message == "" {
					t.Fatal("waiting without a message")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			primary := ""
			for _, r := range reqs {
				if r.Key != DefaultKey && r.Role == RolePrimary {
					primary = r.Key
				}
			}
			if primary != tc.primary || record != tc.record {
				t.Errorf("primary %q record %q, want %q %q", primary, record, tc.primary, tc.record)
			}
			if primary != "" && reqs[0].Role != RoleInfrastructure {
				t.Errorf("default attachment role %s, want %s", reqs[0].Role, RoleInfrastructure)
			}
		})
	}
}

// TestNamespacePrimaries: every allocated primary network, oldest first.
func TestNamespacePrimaries(t *testing.T) {
	l3 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.a","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"ns1/a"}`
	l2 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.b","topology":"layer2","role":"primary","subnets":"10.100.0.0/24","netAttachDefName":"ns1/b"}`
	a, b := nad("ns1", "a", l3, true), nad("ns1", "b", l2, true)
	b.CreationTimestamp = metav1.NewTime(time.Unix(1, 0))
	a.CreationTimestamp = metav1.NewTime(time.Unix(2, 0))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{label: ""}}}
	m := map[string]*nadv1.NetworkAttachmentDefinition{"ns1/a": a, "ns1/b": b}
	got, ok := NamespacePrimaries(ns, m, label)
	if !ok || len(got) != 2 || got[0].Key != "ns1/b" || got[1].Key != "ns1/a" {
		t.Fatalf("NamespacePrimaries = %+v, %v; want ns1/b then ns1/a", got, ok)
	}
	if home, ok := NamespacePrimary(ns, m, label); !ok || home.Key != "ns1/b" {
		t.Errorf("NamespacePrimary = %+v, %v; want the oldest, ns1/b", home, ok)
	}
	b.Annotations = nil // not allocated: only a is placeable
	if got, ok := NamespacePrimaries(ns, m, label); !ok || len(got) != 1 || got[0].Key != "ns1/a" {
		t.Fatalf("with b not allocated: %+v, %v", got, ok)
	}
}

// TestMayUsePrimary: which pods hold a primary network of several back
// from deletion.
func TestMayUsePrimary(t *testing.T) {
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p", Annotations: ann}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"nothing decided yet", pod(nil), true},
		{"placed on it", pod(map[string]string{PlacementAnnotation: "cluster.udn.red"}), true},
		{"placed elsewhere", pod(map[string]string{PlacementAnnotation: "blue", RequestedPrimaryAnnotation: "red"}), false},
		{"attached to it", pod(map[string]string{Annotation: `{"ns1/cluster.udn.red":{"mac_address":"0a:58:0a:00:00:05","role":"primary"}}`}), true},
		{"attached elsewhere", pod(map[string]string{Annotation: `{"ns1/blue":{"mac_address":"0a:58:0a:00:00:05","role":"primary"}}`}), false},
		{"requests it by object name", pod(map[string]string{RequestedPrimaryAnnotation: "red"}), true},
		{"requests it by NAD name", pod(map[string]string{RequestedPrimaryAnnotation: "cluster.udn.red"}), true},
		{"requests another", pod(map[string]string{RequestedPrimaryAnnotation: "nope"}), false},
	}
	for _, tc := range tests {
		if got := MayUsePrimary(tc.pod, "cluster.udn.red", "red"); got != tc.want {
			t.Errorf("%s: MayUsePrimary = %v, want %v", tc.name, got, tc.want)
		}
	}
}
