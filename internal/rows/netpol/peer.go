// Package netpol translates, as pure functions, Kubernetes NetworkPolicies
// into the Northbound rows one zone needs on the network of the pods they
// select (their namespace's primary network):
//
//   - a policy owns a port group of the pods it selects in the zone and one
//     allow-related ACL per rule (Render);
//   - a namespace owns its default-deny port groups (pods selected by any
//     policy of a direction), their drop ACLs and the exceptions every
//     isolated pod keeps: ARP/ND and the node's management port (Deny);
//   - a peer (a namespace/pod selector pair, on one network) owns the address
//     sets of the pods it selects on that network, shared by every policy
//     that uses the same selector (PeerRows).
//
// Each is planned on its own. Which network a namespace uses, which pods and
// addresses exist and which port is a pod's are decided elsewhere (the zone
// controller reads them); this package only translates. A peer holds the
// addresses of pods on its own network, and on the networks a
// ClusterNetworkConnect connects to it for pods: a selector naming
// namespaces of any other network contributes nothing, as the user-defined
// networks design says.
package netpol

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pod is a pod as policies see it on one network.
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	// IPs are the pod's addresses on the network.
	IPs []netip.Addr
	// PortUUID is the pod's logical switch port in the zone ("" when the
	// port is not in the zone's Northbound).
	PortUUID string
	// Ports are the pod's container ports (named ports resolve on them).
	Ports []ContainerPort
}

// ContainerPort is a named container port.
type ContainerPort struct {
	Name     string
	Protocol string // "TCP", "UDP", "SCTP"
	Number   int32
}

// Namespace is a namespace as policies see it.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// Peer is a pod selector of a policy rule: pods of the policy's namespace
// (Namespaces nil), or of every namespace Namespaces selects, that Pods
// selects. Two rules (of any policies) with the same selectors are the same
// peer, and share its address sets on a network.
type Peer struct {
	// Namespace is the policy's namespace, when the peer has no namespace
	// selector.
	Namespace string
	// Namespaces selects namespaces (nil: Namespace only).
	Namespaces labels.Selector
	// Pods selects pods of those namespaces.
	Pods labels.Selector
}

// Key is the peer's canonical form ("ns:<namespace>;pods:<selector>" or
// "nss:<selector>;pods:<selector>"); ParsePeerKey reads it back.
func (p Peer) Key() string {
	if p.Namespaces == nil {
		return "ns:" + p.Namespace + ";pods:" + p.Pods.String()
	}
	return "nss:" + p.Namespaces.String() + ";pods:" + p.Pods.String()
}

// ParsePeerKey returns the peer of a Key.
func ParsePeerKey(key string) (Peer, error) {
	i := strings.LastIndex(key, ";pods:")
	if i < 0 {
		return Peer{}, fmt.Errorf("peer key %q has no pod selector", key)
	}
	pods, err := labels.Parse(key[i+len(";pods:"):])
	if err != nil {
		return Peer{}, fmt.Errorf("peer key %q: %w", key, err)
	}
	head := key[:i]
	switch {
	case strings.HasPrefix(head, "ns:"):
		return Peer{Namespace: strings.TrimPrefix(head, "ns:"), Pods: pods}, nil
	case strings.HasPrefix(head, "nss:"):
		nss, err := labels.Parse(strings.TrimPrefix(head, "nss:"))
		if err != nil {
			return Peer{}, fmt.Errorf("peer key %q: %w", key, err)
		}
		return Peer{Namespaces: nss, Pods: pods}, nil
	}
	return Peer{}, fmt.Errorf("peer key %q names no namespace", key)
}

// SelectsNamespace reports whether the peer's pods may be in namespace ns.
func (p Peer) SelectsNamespace(ns Namespace) bool {
	if p.Namespaces == nil {
		return ns.Name == p.Namespace
	}
	return p.Namespaces.Matches(labels.Set(ns.Labels))
}

// Selects reports whether the peer selects a pod with the given labels in
// namespace ns.
func (p Peer) Selects(ns Namespace, podLabels map[string]string) bool {
	return p.SelectsNamespace(ns) && p.Pods.Matches(labels.Set(podLabels))
}

// AddressSetName is the name of the peer's address set of one IP family on a
// network: "a" and a hash of network and key, with "_v4" or "_v6" (address
// set names must be identifiers in ACL matches; the external IDs say what the
// set holds).
func AddressSetName(network string, p Peer, v6 bool) string {
	suffix := "_v4"
	if v6 {
		suffix = "_v6"
	}
	return "a" + hash(network+"|"+p.Key()) + suffix
}

func hash(s string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%016x", h.Sum64())
}

// peerOf returns the peer of a rule's NetworkPolicyPeer; ok is false for an
// ipBlock peer. A selector that does not parse selects nothing (the API
// server validates selectors, so it does not happen in practice).
func peerOf(namespace string, np networkingv1.NetworkPolicyPeer) (Peer, bool) {
	if np.PodSelector == nil && np.NamespaceSelector == nil {
		return Peer{}, false
	}
	p := Peer{Namespace: namespace, Pods: labels.Everything()}
	if np.PodSelector != nil {
		p.Pods = selector(np.PodSelector)
	}
	if np.NamespaceSelector != nil {
		p.Namespace, p.Namespaces = "", selector(np.NamespaceSelector)
	}
	return p, true
}

func selector(s *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// Types returns the directions a policy isolates its pods in: its
// policyTypes, or, when it has none, ingress and (when it has egress rules)
// egress.
func Types(pol *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(pol.Spec.PolicyTypes) == 0 {
		return true, len(pol.Spec.Egress) > 0
	}
	for _, t := range pol.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// Peers returns the pod peers of a policy's rules in the directions it
// isolates, each once, sorted by key.
func Peers(pol *networkingv1.NetworkPolicy) []Peer {
	ingress, egress := Types(pol)
	seen := map[string]Peer{}
	add := func(peers []networkingv1.NetworkPolicyPeer) {
		for _, np := range peers {
			if p, ok := peerOf(pol.Namespace, np); ok {
				seen[p.Key()] = p
			}
		}
	}
	if ingress {
		for _, r := range pol.Spec.Ingress {
			add(r.From)
		}
	}
	if egress {
		for _, r := range pol.Spec.Egress {
			add(r.To)
		}
	}
	out := make([]Peer, 0, len(seen))
	for _, p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Selects reports whether a policy selects a pod (the pod must be in the
// policy's namespace).
func Selects(pol *networkingv1.NetworkPolicy, pod Pod) bool {
	return pod.Namespace == pol.Namespace && PodSelector(pol).Matches(labels.Set(pod.Labels))
}

// PodSelector returns the selector of the pods a policy applies to (in its
// namespace); converting it once is cheaper than Selects for many pods.
func PodSelector(pol *networkingv1.NetworkPolicy) labels.Selector {
	return selector(&pol.Spec.PodSelector)
}

// PeerAddresses returns the addresses of the pods a peer selects among pods
// of namespaces (all on one network), sorted and each once.
func PeerAddresses(p Peer, namespaces []Namespace, pods []Pod) []netip.Addr {
	byName := map[string]Namespace{}
	for _, ns := range namespaces {
		byName[ns.Name] = ns
	}
	seen := map[netip.Addr]bool{}
	for _, pod := range pods {
		ns, ok := byName[pod.Namespace]
		if !ok || !p.Selects(ns, pod.Labels) {
			continue
		}
		for _, a := range pod.IPs {
			seen[a] = true
		}
	}
	out := make([]netip.Addr, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// everyPod selects every pod of every namespace (of a network).
var everyPod = Peer{Namespaces: labels.Everything(), Pods: labels.Everything()}
