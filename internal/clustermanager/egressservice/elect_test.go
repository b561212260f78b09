package egressservice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

func TestElect(t *testing.T) {
	lb := func(ips ...string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	obj := func(host string, sel map[string]string, mode v1.SourceIPMode) *v1.EgressService {
		return &v1.EgressService{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.EgressServiceSpec{SourceIPBy: mode,
			NodeSelector: metav1.LabelSelector{MatchLabels: sel}}, Status: v1.EgressServiceStatus{Host: host}}
	}
	on := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	nodes := []Node{{Name: "n1", Ready: true, Labels: map[string]string{"egress": "ok"}}, {Name: "n2", Ready: true}, {Name: "n3", Ready: false, Labels: map[string]string{"egress": "ok"}}}
	clusterIP := lb()
	clusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	for _, tc := range []struct {
		name string
		ins  []Input
		want []Outcome
	}{
		{"a node with an endpoint", []Input{{Object: obj("", nil, ""), Service: lb("192.0.2.5"), EndpointNodes: on("n2")}}, []Outcome{{Host: "n2"}}},
		{"the selector, readiness and endpoints narrow it", []Input{{Object: obj("", map[string]string{"egress": "ok"}, ""), Service: lb("192.0.2.5"), EndpointNodes: on("n1", "n2", "n3")}}, []Outcome{{Host: "n1"}}},
		{"a valid host is kept", []Input{{Object: obj("n2", nil, ""), Service: lb("192.0.2.5"), EndpointNodes: on("n1", "n2")}}, []Outcome{{Host: "n2"}}},
		{"a host without endpoints any more is replaced", []Input{{Object: obj("n2", nil, ""), Service: lb("192.0.2.5"), EndpointNodes: on("n1")}}, []Outcome{{Host: "n1"}}},
		{"balanced: the second goes elsewhere", []Input{
			{Object: obj("", nil, ""), Service: lb("192.0.2.5"), EndpointNodes: on("n1", "n2")},
			{Object: obj("", nil, ""), Service: lb("192.0.2.6"), EndpointNodes: on("n1", "n2")}}, []Outcome{{Host: "n1"}, {Host: "n2"}}},
		{"sourceIPBy Network: every node", []Input{{Object: obj("", nil, v1.SourceIPNetwork)}}, []Outcome{{Host: "ALL"}}},
		{"no Service", []Input{{Object: obj("n1", nil, "")}}, []Outcome{{Why: "no Service web in the namespace"}}},
		{"not a LoadBalancer", []Input{{Object: obj("", nil, ""), Service: clusterIP}}, []Outcome{{Why: "Service web is of type ClusterIP, not LoadBalancer"}}},
		{"no ingress IP yet", []Input{{Object: obj("", nil, ""), Service: lb()}}, []Outcome{{Why: "Service web has no load-balancer ingress IP yet"}}},
		{"no candidate", []Input{{Object: obj("", nil, ""), Service: lb("192.0.2.5"), EndpointNodes: on("n3")}},
			[]Outcome{{Why: "no Ready node that matches nodeSelector runs a ready endpoint of the Service"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Elect(tc.ins, nodes, map[string]int{})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
