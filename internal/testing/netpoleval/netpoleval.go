// Package netpoleval decides which pod-to-pod connections Kubernetes
// NetworkPolicies allow, combined with the isolation of user-defined
// networks. It is the oracle of the NetworkPolicy end-to-end tests, so it is
// written from the documentation alone — the NetworkPolicy concept page
// (https://kubernetes.io/docs/concepts/services-networking/network-policies/)
// and the field documentation of k8s.io/api/networking/v1 — and never from
// ovn-udn's implementation: it must be able to disagree with it.
//
// The rules it implements:
//
//   - Pods on different networks never reach each other: the default network
//     is one network, a ClusterUserDefinedNetwork is one network across its
//     namespaces, and two UserDefinedNetworks are two networks even with the
//     same subnet. Policies only narrow what a network allows.
//   - A connection is allowed iff the source's egress allows it AND the
//     destination's ingress allows it.
//   - A pod is isolated for a direction iff some NetworkPolicy of its own
//     namespace selects it (podSelector; empty selects every pod of the
//     namespace) and has that direction among its policy types. A pod not
//     isolated for a direction is unrestricted in it.
//   - Policy types, when not given, are Ingress, plus Egress when the policy
//     has egress rules. Rules of a direction the types do not name are
//     ignored.
//   - An isolated pod allows what at least one rule of at least one policy
//     selecting it (for that direction) allows: rules add up, across policies
//     too. A rule allows a connection when its peers (from or to) and its
//     ports both match; no peers means every peer, no ports every port.
//   - A peer with only a podSelector selects pods of the policy's own
//     namespace; with only a namespaceSelector every pod of the selected
//     namespaces; with both, the pods matching podSelector in the selected
//     namespaces (AND). An empty selector selects everything. An ipBlock
//     matches the other pod's address when it lies in cidr and in none of
//     except.
//   - A port matches a connection on its protocol (TCP when not given) and,
//     when given, its port: a number, a range port..endPort (inclusive), or a
//     name, which is resolved on the destination pod — for ingress and egress
//     rules alike — as the container port of that name and protocol.
//   - Namespaces carry kubernetes.io/metadata.name=<name>, as the API server
//     sets it.
//
// Traffic a pod sends to itself, and traffic from a pod's node (always
// allowed for ingress), are outside what it answers.
package netpoleval

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MetadataNameLabel is the label the API server gives every namespace, its
// name as value.
const MetadataNameLabel = "kubernetes.io/metadata.name"

// Namespace is a namespace: its labels and the network its pods are on.
type Namespace struct {
	Name   string
	Labels map[string]string
	// Network names the namespace's primary network: the same string for
	// namespaces sharing a network (e.g. "default" for the default network,
	// one name per UserDefinedNetwork and per ClusterUserDefinedNetwork).
	Network string
}

// Pod is a pod: its labels, its address on its namespace's network and its
// containers' ports (for named ports).
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	IP              netip.Addr
	Ports           []corev1.ContainerPort
}

// Ref is "<namespace>/<name>".
func (p Pod) Ref() string { return p.Namespace + "/" + p.Name }

// Port is a connection's destination: protocol and port.
type Port struct {
	Protocol corev1.Protocol
	Port     int32
}

// String is "TCP/80".
func (p Port) String() string { return fmt.Sprintf("%s/%d", p.Protocol, p.Port) }

// Cluster is what the evaluator decides over.
type Cluster struct {
	Namespaces map[string]Namespace
	policies   []policy
}

// policy is a NetworkPolicy with its selectors parsed and its types decided.
type policy struct {
	*networkingv1.NetworkPolicy
	selects         labels.Selector
	ingress, egress bool
}

// New returns a cluster of namespaces and policies; it fails on a selector
// that is not valid, or a policy or pod of an unknown namespace (the pods
// come with each question).
func New(namespaces []Namespace, policies []networkingv1.NetworkPolicy) (*Cluster, error) {
	c := &Cluster{Namespaces: map[string]Namespace{}}
	for _, ns := range namespaces {
		l := map[string]string{}
		for k, v := range ns.Labels {
			l[k] = v
		}
		l[MetadataNameLabel] = ns.Name
		ns.Labels = l
		c.Namespaces[ns.Name] = ns
	}
	for i := range policies {
		np := &policies[i]
		if _, ok := c.Namespaces[np.Namespace]; !ok {
			return nil, fmt.Errorf("policy %s/%s: unknown namespace", np.Namespace, np.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			return nil, fmt.Errorf("policy %s/%s: podSelector: %w", np.Namespace, np.Name, err)
		}
		p := policy{NetworkPolicy: np, selects: sel}
		if len(np.Spec.PolicyTypes) == 0 {
			p.ingress, p.egress = true, len(np.Spec.Egress) > 0
		}
		for _, t := range np.Spec.PolicyTypes {
			switch t {
			case networkingv1.PolicyTypeIngress:
				p.ingress = true
			case networkingv1.PolicyTypeEgress:
				p.egress = true
			default:
				return nil, fmt.Errorf("policy %s/%s: unknown policy type %q", np.Namespace, np.Name, t)
			}
		}
		if err := p.validate(); err != nil {
			return nil, fmt.Errorf("policy %s/%s: %w", np.Namespace, np.Name, err)
		}
		c.policies = append(c.policies, p)
	}
	return c, nil
}

// validate parses every peer's selectors and blocks once, so Allowed meets
// no error.
func (p policy) validate() error {
	var peers []networkingv1.NetworkPolicyPeer
	for _, r := range p.Spec.Ingress {
		peers = append(peers, r.From...)
	}
	for _, r := range p.Spec.Egress {
		peers = append(peers, r.To...)
	}
	for _, peer := range peers {
		if _, _, err := peerSelectors(peer); err != nil {
			return err
		}
		if b := peer.IPBlock; b != nil {
			if b.CIDR == "" || peer.PodSelector != nil || peer.NamespaceSelector != nil {
				return fmt.Errorf("ipBlock %+v must have a cidr and no selectors beside it", b)
			}
			for _, s := range append([]string{b.CIDR}, b.Except...) {
				if _, err := netip.ParsePrefix(s); err != nil {
					return fmt.Errorf("ipBlock: %w", err)
				}
			}
		}
	}
	return nil
}

// peerSelectors parses a peer's selectors; nil stands for an absent one.
func peerSelectors(peer networkingv1.NetworkPolicyPeer) (pods, namespaces labels.Selector, err error) {
	if peer.PodSelector != nil {
		if pods, err = metav1.LabelSelectorAsSelector(peer.PodSelector); err != nil {
			return nil, nil, fmt.Errorf("podSelector: %w", err)
		}
	}
	if peer.NamespaceSelector != nil {
		if namespaces, err = metav1.LabelSelectorAsSelector(peer.NamespaceSelector); err != nil {
			return nil, nil, fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	return pods, namespaces, nil
}

// Allowed reports whether from may open a connection to to's address on
// port, and why not when it may not.
func (c *Cluster) Allowed(from, to Pod, port Port) (bool, string) {
	src, ok1 := c.Namespaces[from.Namespace]
	dst, ok2 := c.Namespaces[to.Namespace]
	switch {
	case !ok1 || !ok2:
		return false, "unknown namespace"
	case src.Network != dst.Network:
		return false, fmt.Sprintf("different networks (%s, %s)", src.Network, dst.Network)
	}
	if ok, why := c.direction(from, to, to, port, false); !ok {
		return false, why
	}
	return c.direction(to, from, to, port, true)
}

// direction decides for pod subject's egress (ingress false) or ingress:
// peer is the other end, dst the destination (whose named ports count).
func (c *Cluster) direction(subject, peer, dst Pod, port Port, ingress bool) (bool, string) {
	word := "egress"
	if ingress {
		word = "ingress"
	}
	isolated := false
	var by []string
	for _, p := range c.policies {
		if p.Namespace != subject.Namespace || !p.selects.Matches(labels.Set(subject.Labels)) {
			continue
		}
		if (ingress && !p.ingress) || (!ingress && !p.egress) {
			continue
		}
		isolated = true
		by = append(by, p.Name)
		if ingress {
			for _, r := range p.Spec.Ingress {
				if c.peersMatch(p.Namespace, r.From, peer) && portsMatch(r.Ports, dst, port) {
					return true, ""
				}
			}
		} else {
			for _, r := range p.Spec.Egress {
				if c.peersMatch(p.Namespace, r.To, peer) && portsMatch(r.Ports, dst, port) {
					return true, ""
				}
			}
		}
	}
	if !isolated {
		return true, ""
	}
	slices.Sort(by)
	return false, fmt.Sprintf("%s of %s isolated by %v and no rule allows %s %s", word, subject.Ref(), by, peer.Ref(), port)
}

// peersMatch: no peers match every pod, else any of them must.
func (c *Cluster) peersMatch(policyNS string, peers []networkingv1.NetworkPolicyPeer, pod Pod) bool {
	if len(peers) == 0 {
		return true
	}
	for _, peer := range peers {
		if c.peerMatches(policyNS, peer, pod) {
			return true
		}
	}
	return false
}

func (c *Cluster) peerMatches(policyNS string, peer networkingv1.NetworkPolicyPeer, pod Pod) bool {
	if b := peer.IPBlock; b != nil {
		if !pod.IP.IsValid() || !netip.MustParsePrefix(b.CIDR).Contains(pod.IP) {
			return false
		}
		for _, e := range b.Except {
			if netip.MustParsePrefix(e).Contains(pod.IP) {
				return false
			}
		}
		return true
	}
	pods, namespaces, _ := peerSelectors(peer) // validated by New
	switch {
	case namespaces == nil && pods == nil:
		return false // an empty peer: the API server refuses it
	case namespaces == nil:
		if pod.Namespace != policyNS {
			return false
		}
	default:
		if !namespaces.Matches(labels.Set(c.Namespaces[pod.Namespace].Labels)) {
			return false
		}
	}
	return pods == nil || pods.Matches(labels.Set(pod.Labels))
}

// portsMatch: no ports match every port, else any of them must; named ports
// resolve on dst.
func portsMatch(ports []networkingv1.NetworkPolicyPort, dst Pod, port Port) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if proto != port.Protocol {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String:
			for _, cp := range dst.Ports {
				cpProto := cp.Protocol
				if cpProto == "" {
					cpProto = corev1.ProtocolTCP
				}
				if cp.Name == p.Port.StrVal && cpProto == proto && cp.ContainerPort == port.Port {
					return true
				}
			}
		case p.EndPort != nil:
			if p.Port.IntVal <= port.Port && port.Port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == port.Port:
			return true
		}
	}
	return false
}
