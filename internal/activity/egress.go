package activity

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// EgressNodes returns the nodes where a namespace's networks are used for
// its EgressIPs, given the EgressIPs, the namespace's labels and the
// nodes labelled egress-assignable:
//   - the nodes holding an egress IP (cluster-manager's status) of an
//     EgressIP whose namespace selector selects the namespace: their
//     gateway routers SNAT the network's pods, and the other nodes
//     reroute to their end of the network;
//   - while any EgressIP selects the namespace, every egress-assignable
//     node, in standby: an egress IP that moves then finds the network
//     rendered where it lands, and the move costs no topology (docs/
//     egressip.md "Failover").
//
// The pod selector is not read: a node holding an IP for some of a
// namespace's pods renders the namespace's networks.
func EgressNodes(eips []v1.EgressIP, namespaceLabels map[string]string, assignable []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	selected := false
	for i := range eips {
		e := &eips[i]
		if !kubeobj.Selects(&e.Spec.NamespaceSelector, namespaceLabels) {
			continue
		}
		selected = true
		for _, it := range e.Status.Items {
			add(it.Node)
		}
	}
	if selected {
		for _, n := range assignable {
			add(n)
		}
	}
	return out
}

// EgressChange says which nodes an EgressIP's change (before nil on a
// create, after nil on a delete) can add to or remove from the networks
// of the namespaces it selects: the nodes that started or stopped holding
// one of its IPs, and, when it came, went or selects other namespaces,
// every egress-assignable node (assignable).
func EgressChange(before, after *v1.EgressIP) (nodes []string, assignable bool) {
	held := func(e *v1.EgressIP) []string {
		var out []string
		if e != nil {
			for _, it := range e.Status.Items {
				if it.Node != "" && !slices.Contains(out, it.Node) {
					out = append(out, it.Node)
				}
			}
		}
		return out
	}
	b, a := held(before), held(after)
	for _, n := range b {
		if !slices.Contains(a, n) {
			nodes = append(nodes, n)
		}
	}
	for _, n := range a {
		if !slices.Contains(b, n) {
			nodes = append(nodes, n)
		}
	}
	switch {
	case before == nil && after == nil:
		return nil, false
	case before == nil || after == nil:
		return nodes, true
	}
	return nodes, !equalSelector(&before.Spec.NamespaceSelector, &after.Spec.NamespaceSelector)
}

func equalSelector(a, b *metav1.LabelSelector) bool {
	sa, errA := metav1.LabelSelectorAsSelector(a)
	sb, errB := metav1.LabelSelectorAsSelector(b)
	if errA != nil || errB != nil {
		return errA != nil && errB != nil
	}
	return sa.String() == sb.String()
}
