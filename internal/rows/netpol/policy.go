package netpol

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// External IDs on the rows of policies.
const (
	// KindKey says what a row enforces: KindPolicy, KindDefaultDeny or
	// KindPeer.
	KindKey = "k8s.ovn.org/kind"
	// NameKey names the policy ("<namespace>/<name>"), the namespace (default
	// deny) or the peer (its Key).
	NameKey = "k8s.ovn.org/name"
	// DirectionKey is "Ingress" or "Egress" on ACLs.
	DirectionKey = "k8s.ovn.org/policy-direction"
	// RuleKey is the index of the rule an ACL enforces in its direction.
	RuleKey = "k8s.ovn.org/rule"
)

// KindKey values.
const (
	KindPolicy      = "NetworkPolicy"
	KindDefaultDeny = "NetworkPolicyDefaultDeny"
	KindPeer        = "NetworkPolicyPeer"
)

// Tier is the ACL tier of network policies (as OVN-Kubernetes uses tiers:
// admin policies before, baseline admin policies after). The default
// network's isolation of user-defined-network pods is in tier 0: a verdict
// there is final.
const Tier = 2

// ACL priorities: every allow above every default-deny drop, so allows of
// several policies add up.
const (
	AllowPriority = 1001
	DenyPriority  = 1000
)

// Input is one policy as one zone sees it.
type Input struct {
	Policy *networkingv1.NetworkPolicy
	// Network is the network of the policy's namespace.
	Network topology.Network
	// Pods are the pods of the policy's namespace on the network, in the
	// zone (those the policy selects become its port group).
	Pods []Pod
	// PeerPods are, for each peer NamedPortPeers returns (by key), the pods
	// it selects on the network: egress rules' named ports resolve on them.
	PeerPods map[string][]Pod
	// IDPrefix starts the rows' IDs: a policy of a namespace with several
	// primary networks is rendered once per network, under one owner, and
	// its rows on each network after the first need IDs of their own.
	IDPrefix string
}

// Render returns the rows a policy owns in the zone: its port group with the
// selected pods' ports and an allow-related ACL per rule. Nothing when it
// selects no pod in the zone; a rule that can match nothing (all its named
// ports unresolved) has no ACL.
func Render(in Input) []model.Model {
	pol := in.Policy
	var ports []string
	var selected []Pod
	sel := selector(&pol.Spec.PodSelector)
	for _, p := range in.Pods {
		if p.PortUUID != "" && p.Namespace == pol.Namespace && sel.Matches(labels.Set(p.Labels)) {
			ports = append(ports, p.PortUUID)
			selected = append(selected, p)
		}
	}
	if len(ports) == 0 {
		return nil
	}
	sort.Strings(ports)
	name := PortGroupName(in.Network.Name, pol.Namespace, pol.Name)
	pg := &nbdb.PortGroup{UUID: in.IDPrefix + "pg:np", Name: name, Ports: ports,
		ExternalIDs: ids(KindPolicy, pol.Namespace+"/"+pol.Name, in.Network.Name)}
	rows := []model.Model{pg}
	v4, v6 := families(in.Network)
	ingress, egress := Types(pol)
	add := func(dir string, i int, match string) {
		acl := &nbdb.ACL{
			UUID: fmt.Sprintf("%sacl:%s:%d", in.IDPrefix, dir, i), Action: nbdb.ACLActionAllowRelated, Priority: AllowPriority, Tier: Tier,
			Direction: nbdb.ACLDirectionToLport, Match: match, Name: aclName(pol, dir, i),
			ExternalIDs: ids(KindPolicy, pol.Namespace+"/"+pol.Name, in.Network.Name),
		}
		acl.ExternalIDs[DirectionKey], acl.ExternalIDs[RuleKey] = dir, fmt.Sprint(i)
		if dir == "Egress" {
			acl.Direction = nbdb.ACLDirectionFromLport
			// Egress is judged after load balancing: on the backend a
			// service sends the connection to.
			acl.Options = map[string]string{"apply-after-lb": "true"}
		}
		rows = append(rows, acl)
		pg.ACLs = append(pg.ACLs, acl.UUID)
	}
	if ingress {
		for i, r := range pol.Spec.Ingress {
			l3, ok := l3Match(in.Network.Name, pol.Namespace, r.From, "src", v4, v6)
			if !ok {
				continue
			}
			l4, ok := l4Match(r.Ports, func(name, proto string) []numbered { return named(selected, name, proto) }, v4, v6)
			if !ok {
				continue
			}
			add("Ingress", i, join("outport == @"+name, l3, l4))
		}
	}
	if egress {
		for i, r := range pol.Spec.Egress {
			l3, ok := l3Match(in.Network.Name, pol.Namespace, r.To, "dst", v4, v6)
			if !ok {
				continue
			}
			var peerPods []Pod
			for _, p := range namedPortPeers(pol.Namespace, r.To) {
				peerPods = append(peerPods, in.PeerPods[p.Key()]...)
			}
			l4, ok := l4Match(r.Ports, func(name, proto string) []numbered { return named(peerPods, name, proto) }, v4, v6)
			if !ok {
				continue
			}
			add("Egress", i, join("inport == @"+name, l3, l4))
		}
	}
	return rows
}

// PortGroupName is the name of a policy's port group on a network.
func PortGroupName(network, namespace, name string) string {
	return "np_" + hash(network+"|"+namespace+"/"+name)
}

// NamedPortPeers returns the peers whose pods egress rules' named ports
// resolve on (Input.PeerPods): the pod peers of egress rules with a named
// port, and every pod of every namespace for such a rule without peers.
func NamedPortPeers(pol *networkingv1.NetworkPolicy) []Peer {
	if _, egress := Types(pol); !egress {
		return nil
	}
	var out []Peer
	seen := map[string]bool{}
	for _, r := range pol.Spec.Egress {
		if !hasNamedPort(r.Ports) {
			continue
		}
		for _, p := range namedPortPeers(pol.Namespace, r.To) {
			if !seen[p.Key()] {
				seen[p.Key()] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func namedPortPeers(namespace string, to []networkingv1.NetworkPolicyPeer) []Peer {
	if len(to) == 0 {
		return []Peer{everyPod}
	}
	var out []Peer
	for _, np := range to {
		if p, ok := peerOf(namespace, np); ok {
			out = append(out, p)
		}
	}
	return out
}

func hasNamedPort(ports []networkingv1.NetworkPolicyPort) bool {
	for _, p := range ports {
		if p.Port != nil && p.Port.Type == intstr.String {
			return true
		}
	}
	return false
}

// l3Match returns the address part of a rule ("" for any address): the
// peers' address sets and ipBlocks on the side ("src" or "dst"); ok is false
// when the rule's peers can match nothing.
func l3Match(network, namespace string, peers []networkingv1.NetworkPolicyPeer, side string, v4, v6 bool) (string, bool) {
	if len(peers) == 0 {
		return "", true
	}
	var sets4, sets6, terms []string
	for _, np := range peers {
		if p, ok := peerOf(namespace, np); ok {
			sets4 = append(sets4, "$"+AddressSetName(network, p, false))
			sets6 = append(sets6, "$"+AddressSetName(network, p, true))
			continue
		}
		if np.IPBlock != nil {
			if t, ok := ipBlockMatch(np.IPBlock, side); ok {
				terms = append(terms, t)
			}
		}
	}
	if v4 && len(sets4) > 0 {
		terms = append(terms, fmt.Sprintf("ip4.%s == {%s}", side, strings.Join(sets4, ", ")))
	}
	if v6 && len(sets6) > 0 {
		terms = append(terms, fmt.Sprintf("ip6.%s == {%s}", side, strings.Join(sets6, ", ")))
	}
	if len(terms) == 0 {
		return "", false
	}
	return or(terms), true
}

// ipBlockMatch is the match of an ipBlock: its CIDR, minus its exceptions.
func ipBlockMatch(b *networkingv1.IPBlock, side string) (string, bool) {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return "", false
	}
	cidr = cidr.Masked()
	fam := "ip4"
	if cidr.Addr().Is6() {
		fam = "ip6"
	}
	m := fmt.Sprintf("%s.%s == %s", fam, side, cidr)
	var except []string
	for _, e := range b.Except {
		if p, err := netip.ParsePrefix(e); err == nil && p.Addr().Is4() == cidr.Addr().Is4() {
			except = append(except, p.Masked().String())
		}
	}
	if len(except) > 0 {
		m += fmt.Sprintf(" && %s.%s != {%s}", fam, side, strings.Join(except, ", "))
	}
	return m, true
}

// l4Match returns the port part of a rule ("" for any port); ok is false
// when every port is a named port nothing resolves. resolve resolves a named
// port on the pods it names (the destinations).
func l4Match(ports []networkingv1.NetworkPolicyPort, resolve func(name, proto string) []numbered, v4, v6 bool) (string, bool) {
	if len(ports) == 0 {
		return "", true
	}
	var terms []string
	for _, p := range ports {
		proto := "tcp"
		if p.Protocol != nil {
			proto = strings.ToLower(string(*p.Protocol))
		}
		switch {
		case p.Port == nil:
			terms = append(terms, proto)
		case p.Port.Type == intstr.Int && p.EndPort != nil && *p.EndPort > p.Port.IntVal:
			terms = append(terms, fmt.Sprintf("%s.dst >= %d && %s.dst <= %d", proto, p.Port.IntVal, proto, *p.EndPort))
		case p.Port.Type == intstr.Int:
			terms = append(terms, fmt.Sprintf("%s.dst == %d", proto, p.Port.IntVal))
		default:
			terms = append(terms, namedTerms(p.Port.StrVal, proto, resolve, v4, v6)...)
		}
	}
	if len(terms) == 0 {
		return "", false
	}
	sort.Strings(terms)
	return or(dedup(terms)), true
}

// namedTerms resolves a named port: one term per number it has on the pods,
// limited to those pods' addresses (ip4.dst/ip6.dst: a named port is always
// the destination's).
func namedTerms(name, proto string, resolve func(name, proto string) []numbered, v4, v6 bool) []string {
	byNumber := map[int32][]netip.Addr{}
	for _, a := range resolve(name, proto) {
		byNumber[a.number] = append(byNumber[a.number], a.addr)
	}
	nums := make([]int32, 0, len(byNumber))
	for n := range byNumber {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	var out []string
	for _, num := range nums {
		addrs := byNumber[num]
		var l3 []string
		for _, fam := range []struct {
			name string
			on   bool
			is4  bool
		}{{"ip4", v4, true}, {"ip6", v6, false}} {
			var s []string
			for _, a := range addrs {
				if a.Is4() == fam.is4 {
					s = append(s, a.String())
				}
			}
			if fam.on && len(s) > 0 {
				sort.Strings(s)
				l3 = append(l3, fmt.Sprintf("%s.dst == {%s}", fam.name, strings.Join(dedup(s), ", ")))
			}
		}
		if len(l3) == 0 {
			continue
		}
		dst := or(l3)
		if len(l3) > 1 {
			dst = "(" + dst + ")" // OVN refuses && and || mixed without parentheses
		}
		out = append(out, fmt.Sprintf("%s && %s.dst == %d", dst, proto, num))
	}
	return out
}

// numbered is a named port resolved on one pod address.
type numbered struct {
	addr   netip.Addr
	number int32
}

// named resolves a named port on pods: each address of each pod with a
// container port of that name and protocol, with its number.
func named(pods []Pod, name, proto string) []numbered {
	var out []numbered
	for _, p := range pods {
		for _, cp := range p.Ports {
			if cp.Name != name || !strings.EqualFold(protoOr(cp.Protocol), proto) {
				continue
			}
			for _, a := range p.IPs {
				out = append(out, numbered{addr: a, number: cp.Number})
			}
		}
	}
	return out
}

func protoOr(p string) string {
	if p == "" {
		return string(corev1.ProtocolTCP)
	}
	return p
}

// join ANDs the non-empty parts, parenthesizing each but the first.
func join(first string, parts ...string) string {
	out := first
	for _, p := range parts {
		if p != "" {
			out += " && (" + p + ")"
		}
	}
	return out
}

// or ORs terms, parenthesizing each when there are several.
func or(terms []string) string {
	if len(terms) == 1 {
		return terms[0]
	}
	return "(" + strings.Join(terms, ") || (") + ")"
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// families reports the IP families of a network's subnets.
func families(n topology.Network) (v4, v6 bool) {
	for _, s := range n.Subnets {
		if s.CIDR.Addr().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	return v4, v6
}

func ids(kind, name, network string) map[string]string {
	return map[string]string{KindKey: kind, NameKey: name, topology.NetworkKey: network, topology.ControllerKey: topology.ZoneController}
}

// aclName is an ACL's name for logs and ovn-trace: "<ns>:<policy>:<dir>:<rule>",
// cut to the 63 characters the schema allows.
func aclName(pol *networkingv1.NetworkPolicy, dir string, i int) *string {
	s := fmt.Sprintf("%s:%s:%s:%d", pol.Namespace, pol.Name, dir, i)
	if len(s) > 63 {
		s = s[:63]
	}
	return &s
}
