// Package egressservice is cluster-manager's EgressService controller: it
// elects each object's host, the node its Service's endpoints leave the
// cluster from with the Service's load-balancer IP as their source, and
// whose gateway answers for that IP (issue 50, ovn-kubernetes' shape). It
// writes status.host and labels the host
// "egress-service.k8s.ovn.org/<namespace>-<name>" for a load-balancer
// announcer to follow.
//
// The host is chosen (Elect) among the Ready nodes that match the
// object's nodeSelector and run a ready endpoint of the Service: such a
// node renders the Service's network, so the pods' traffic has a path to
// its gateway. A host that stays such a node is kept; otherwise the
// candidate hosting the fewest services is taken, then by name.
package egressservice

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// Node is a node as the election sees it.
type Node struct {
	Name   string
	Labels map[string]string
	Ready  bool
}

// Input is one EgressService with what its election reads.
type Input struct {
	Object *v1.EgressService
	// Service is the LoadBalancer Service of the same name (nil: none).
	Service *corev1.Service
	// EndpointNodes are the nodes running a ready endpoint of it.
	EndpointNodes map[string]bool
}

// Outcome is an object's elected host, or why it has none.
type Outcome struct {
	Host string
	Why  string
}

// Elect elects the hosts of ins, in order (the caller orders them oldest
// first): each takes load into account, which counts the services each
// node hosts, and adds its own.
func Elect(ins []Input, nodes []Node, load map[string]int) []Outcome {
	out := make([]Outcome, len(ins))
	for i, in := range ins {
		out[i] = elect(in, nodes, load)
		if h := out[i].Host; h != "" && h != v1.EgressServiceHostAll {
			load[h]++
		}
	}
	return out
}

func elect(in Input, nodes []Node, load map[string]int) Outcome {
	if in.Object.Spec.SourceIPBy == v1.SourceIPNetwork {
		return Outcome{Host: v1.EgressServiceHostAll}
	}
	svc := in.Service
	switch {
	case svc == nil:
		return Outcome{Why: "no Service " + in.Object.Name + " in the namespace"}
	case svc.Spec.Type != corev1.ServiceTypeLoadBalancer:
		return Outcome{Why: fmt.Sprintf("Service %s is of type %s, not LoadBalancer", svc.Name, svc.Spec.Type)}
	case len(svc.Status.LoadBalancer.Ingress) == 0:
		return Outcome{Why: fmt.Sprintf("Service %s has no load-balancer ingress IP yet", svc.Name)}
	}
	sel, err := kubeobj.Selector(&in.Object.Spec.NodeSelector)
	if err != nil {
		return Outcome{Why: "malformed nodeSelector: " + err.Error()}
	}
	var candidates []string
	for _, n := range nodes {
		if n.Ready && in.EndpointNodes[n.Name] && sel.Matches(labelsOf(n.Labels)) {
			candidates = append(candidates, n.Name)
		}
	}
	if len(candidates) == 0 {
		return Outcome{Why: "no Ready node that matches nodeSelector runs a ready endpoint of the Service"}
	}
	cur := in.Object.Status.Host
	for _, c := range candidates {
		if c == cur {
			return Outcome{Host: cur}
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if load[a] != load[b] {
			return load[a] < load[b]
		}
		return a < b
	})
	return Outcome{Host: candidates[0]}
}

// Label is the label an object's host carries.
func Label(namespace, name string) string {
	return v1.EgressServiceLabelPrefix + namespace + "-" + name
}
