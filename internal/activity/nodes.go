package activity

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// NodeView is what NetworksOn reads, answered from the caller's caches:
// the package's rule seen from one node instead of one network.
type NodeView interface {
	// NodePods returns the pods scheduled on node: the caller's cached
	// objects, which NetworksOn only reads.
	NodePods(node string) ([]corev1.Pod, error)
	// NamespaceNetworks returns the primary user-defined networks whose
	// NADs the namespace holds (of every topology).
	NamespaceNetworks(namespace string) ([]string, error)
	// Connected returns the networks a ClusterNetworkConnect joins the
	// network to, as View.Connected (nil when connects are off).
	Connected(network string) ([]string, error)
	// EveryNode returns the primary user-defined networks one of whose
	// namespaces has a Service NeedsEveryNode.
	EveryNode() ([]string, error)
	// EgressNetworks returns the primary user-defined networks of the
	// namespaces an EgressIP selects that holds an egress IP on node
	// (EgressNodes asked the other way round).
	EgressNetworks(node string) ([]string, error)
}

// NetworksOn returns the primary user-defined networks active on node:
// exactly the networks whose Of holds node, asked the other way round
// (cluster-manager allocates a node's slices with it, node by node). It
// relies on View.Connected being symmetric, as connects are: a network
// is active where a network connected to it has pods.
func NetworksOn(v NodeView, node string) (map[string]bool, error) {
	pods, err := v.NodePods(node)
	if err != nil {
		return nil, fmt.Errorf("pods of node %s: %w", node, err)
	}
	out := map[string]bool{}
	var own []string // networks with pods of their own on node
	seen := map[string]bool{}
	var errs []error
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName != node || !UsesNode(p) || seen[p.Namespace] {
			continue
		}
		seen[p.Namespace] = true
		nets, err := v.NamespaceNetworks(p.Namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("networks of namespace %s: %w", p.Namespace, err))
			continue
		}
		for _, n := range nets {
			if !out[n] {
				out[n] = true
				own = append(own, n)
			}
		}
	}
	for _, n := range own {
		// Its peers' pods make a network active, not its peers' services
		// (Of): only networks with pods here bring their peers.
		peers, err := v.Connected(n)
		if err != nil {
			errs = append(errs, fmt.Errorf("networks connected to %s: %w", n, err))
			continue
		}
		for _, p := range peers {
			out[p] = true
		}
	}
	every, err := v.EveryNode()
	if err != nil {
		errs = append(errs, fmt.Errorf("networks served on every node: %w", err))
	}
	for _, n := range every {
		out[n] = true
	}
	egress, err := v.EgressNetworks(node)
	if err != nil {
		errs = append(errs, fmt.Errorf("networks egressing at node %s: %w", node, err))
	}
	for _, n := range egress {
		out[n] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("node %s: %w", node, err)
	}
	return out, nil
}
