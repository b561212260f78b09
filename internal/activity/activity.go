// Package activity decides on which nodes a network is used, so that a zone
// renders a primary user-defined network only on the nodes that need it
// (dynamic node allocation, OKEP-5552; docs/topology.md "Where a network is
// rendered"). It is the one place that says so: the zone controllers, the
// node agent and `ovn-udn render` all ask it, and none infers it from rows.
//
// The rule: a primary user-defined network is active on a node while
//   - a pod of one of the network's namespaces (those holding its NADs)
//     runs there (scheduled, not finished, not on the host network), or
//   - a pod of a network connected to it by a ClusterNetworkConnect runs
//     there (its traffic enters the network's routers on that node: a
//     Layer2 network's transit router, a service's load balancers), or
//   - one of its namespaces has a Service served on every node (node ports,
//     a load balancer, external IPs): every node's gateway router must
//     answer, or
//   - the node holds an egress IP of an EgressIP selecting one of its
//     namespaces (EgressNodes): its gateway router SNATs the network's
//     pods, and the other nodes reroute to it.
//
// The default network and secondary networks are active everywhere.
package activity

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Nodes is the set of nodes a network is active on. The zero value is
// every node (no restriction), so an input without one renders as before.
type Nodes struct {
	limited bool
	only    map[string]bool
}

// Everywhere is every node.
func Everywhere() Nodes { return Nodes{} }

// On is exactly the named nodes (none: nowhere).
func On(names ...string) Nodes {
	s := Nodes{limited: true, only: make(map[string]bool, len(names))}
	for _, n := range names {
		s.only[n] = true
	}
	return s
}

// Has reports whether the network is active on node.
func (s Nodes) Has(node string) bool { return !s.limited || s.only[node] }

// All reports whether the set is every node.
func (s Nodes) All() bool { return !s.limited }

// Names returns the nodes, sorted; nil for every node.
func (s Nodes) Names() []string {
	if !s.limited {
		return nil
	}
	return slices.Sorted(maps.Keys(s.only))
}

// Len is the number of nodes named (0 for every node).
func (s Nodes) Len() int { return len(s.only) }

// Union returns the nodes of both sets.
func (s Nodes) Union(o Nodes) Nodes {
	if !s.limited || !o.limited {
		return Everywhere()
	}
	out := On(s.Names()...)
	for n := range o.only {
		out.only[n] = true
	}
	return out
}

// Equal reports whether both sets hold the same nodes.
func (s Nodes) Equal(o Nodes) bool {
	return s.limited == o.limited && maps.Equal(s.only, o.only)
}

// String is "every node" or the sorted names.
func (s Nodes) String() string {
	if !s.limited {
		return "every node"
	}
	if len(s.only) == 0 {
		return "no node"
	}
	return strings.Join(s.Names(), ",")
}

// UsesNode reports whether a pod makes its namespace's networks active on
// its node: it is scheduled, not finished and not on the host network.
// A pod being deleted still counts until it is gone or finished (it may
// still be serving).
func UsesNode(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && !p.Spec.HostNetwork &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// NeedsEveryNode reports whether a Service is answered on every node's
// gateway router: it has node ports (NodePort, LoadBalancer) or external
// IPs.
func NeedsEveryNode(s *corev1.Service) bool {
	switch {
	case s.Spec.Type == corev1.ServiceTypeNodePort, s.Spec.Type == corev1.ServiceTypeLoadBalancer:
		return true
	case len(s.Spec.ExternalIPs) > 0:
		return true
	}
	return false
}

// View is what Of reads, answered from the caller's caches.
type View interface {
	// NetworkNamespaces returns the namespaces holding the network's NADs.
	NetworkNamespaces(network string) ([]string, error)
	// Connected returns the networks a ClusterNetworkConnect joins the
	// network to (nil when connects are off).
	Connected(network string) ([]string, error)
	// NamespacePods returns the pods of a namespace (a node agent may
	// return only its own node's: the answer is then right for that node).
	NamespacePods(namespace string) ([]corev1.Pod, error)
	// NamespaceServices returns the Services of a namespace.
	NamespaceServices(namespace string) ([]corev1.Service, error)
	// NamespaceEgressNodes returns the nodes holding an egress IP for the
	// namespace (EgressNodes; none without the EgressIP CRD).
	NamespaceEgressNodes(namespace string) ([]string, error)
}

// Of returns the nodes a primary user-defined network is active on (the
// package's rule). Callers give the default network and secondary
// networks Everywhere without asking.
func Of(v View, network string) (Nodes, error) {
	own, err := of(v, network, true)
	if err != nil {
		return Nodes{}, err
	}
	if own.All() {
		return own, nil
	}
	peers, err := v.Connected(network)
	if err != nil {
		return Nodes{}, fmt.Errorf("networks connected to %s: %w", network, err)
	}
	for _, p := range peers {
		if p == network {
			continue
		}
		// A peer's pods, not its services: a node port of the peer is
		// answered by the peer's own gateway routers.
		theirs, err := of(v, p, false)
		if err != nil {
			return Nodes{}, err
		}
		own = own.Union(theirs)
	}
	return own, nil
}

// of is the nodes of the network's own pods; with own (the network's own
// namespaces, not a connected peer's) also its egress nodes, and every
// node when one of its namespaces has a service served on every node.
func of(v View, network string, own bool) (Nodes, error) {
	namespaces, err := v.NetworkNamespaces(network)
	if err != nil {
		return Nodes{}, fmt.Errorf("namespaces of network %s: %w", network, err)
	}
	out := On()
	var errs []error
	for _, ns := range namespaces {
		if own {
			egress, err := v.NamespaceEgressNodes(ns)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, n := range egress {
				out.only[n] = true
			}
			svcs, err := v.NamespaceServices(ns)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for i := range svcs {
				if NeedsEveryNode(&svcs[i]) {
					return Everywhere(), nil
				}
			}
		}
		pods, err := v.NamespacePods(ns)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range pods {
			if UsesNode(&pods[i]) {
				out.only[pods[i].Spec.NodeName] = true
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Nodes{}, fmt.Errorf("network %s: %w", network, err)
	}
	return out, nil
}
