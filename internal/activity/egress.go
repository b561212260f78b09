package activity

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

// EgressNodes returns the nodes holding an egress IP (cluster-manager's
// status) of an EgressIP whose namespace selector selects a namespace
// with these labels. A network of that namespace is active there: the
// egress node's gateway router SNATs the network's pods to the egress IP,
// and the other nodes' routers reroute to its end of the network. The pod
// selector is not read: a node holding an IP for some of a namespace's
// pods renders the namespace's networks.
func EgressNodes(eips []v1.EgressIP, namespaceLabels map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for i := range eips {
		e := &eips[i]
		if len(e.Status.Items) == 0 {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&e.Spec.NamespaceSelector)
		if err != nil || !sel.Matches(labels.Set(namespaceLabels)) {
			continue // the API refuses selectors that do not parse
		}
		for _, it := range e.Status.Items {
			if it.Node != "" && !seen[it.Node] {
				seen[it.Node] = true
				out = append(out, it.Node)
			}
		}
	}
	return out
}

// EgressNodesChanged reports whether an EgressIP's change (nil before a
// create, nil after a delete) can change where networks are active: its
// egress nodes or its namespace selector changed.
func EgressNodesChanged(before, after *v1.EgressIP) bool {
	if before == nil || after == nil {
		return (before != nil && len(before.Status.Items) > 0) || (after != nil && len(after.Status.Items) > 0)
	}
	nodes := func(e *v1.EgressIP) map[string]bool {
		m := map[string]bool{}
		for _, it := range e.Status.Items {
			m[it.Node] = true
		}
		return m
	}
	b, a := nodes(before), nodes(after)
	if len(a) != len(b) {
		return true
	}
	for n := range a {
		if !b[n] {
			return true
		}
	}
	return len(a) > 0 && !equalSelector(&before.Spec.NamespaceSelector, &after.Spec.NamespaceSelector)
}

func equalSelector(a, b *metav1.LabelSelector) bool {
	sa, errA := metav1.LabelSelectorAsSelector(a)
	sb, errB := metav1.LabelSelectorAsSelector(b)
	if errA != nil || errB != nil {
		return errA != nil && errB != nil
	}
	return sa.String() == sb.String()
}
