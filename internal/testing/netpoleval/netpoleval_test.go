package netpoleval

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The cluster of the table: x and y on the default network, z and w each on
// its own user-defined network with the same subnet (z/a and w/a even have
// the same address).
var (
	namespaces = []Namespace{
		{Name: "x", Labels: map[string]string{"ns": "x"}, Network: "default"},
		{Name: "y", Labels: map[string]string{"ns": "y"}, Network: "default"},
		{Name: "z", Labels: map[string]string{"ns": "z"}, Network: "z/tenant"},
		{Name: "w", Labels: map[string]string{"ns": "w"}, Network: "w/tenant"},
	}
	pods = map[string]Pod{}
)

func init() {
	add := func(ns, name, ip string, web int32) {
		pods[ns+"/"+name] = Pod{Namespace: ns, Name: name, IP: netip.MustParseAddr(ip),
			Labels: map[string]string{"pod": name, "app": map[bool]string{true: "server", false: "client"}[name == "a"]},
			Ports: []corev1.ContainerPort{
				{Name: "web", ContainerPort: web}, // no protocol: TCP
				{Name: "serve-81", ContainerPort: 81, Protocol: corev1.ProtocolTCP},
				{Name: "udp-80", ContainerPort: 80, Protocol: corev1.ProtocolUDP},
			}}
	}
	add("x", "a", "10.0.0.1", 80)
	add("x", "b", "10.0.0.2", 81)
	add("x", "c", "10.0.1.3", 81)
	add("y", "a", "10.0.1.1", 80)
	add("y", "b", "10.0.2.2", 80)
	add("z", "a", "10.9.0.1", 80)
	add("w", "a", "10.9.0.1", 80)
}

func np(ns, name string, spec networkingv1.NetworkPolicySpec) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func sel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func ports(ps ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyPort { return ps }

func tcp(port intstr.IntOrString) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: &port}
}

var (
	ingress    = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress     = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	both       = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	all        = metav1.LabelSelector{}
	allIngress = []networkingv1.NetworkPolicyIngressRule{{}}
	allEgress  = []networkingv1.NetworkPolicyEgressRule{{}}
	tcp80      = Port{corev1.ProtocolTCP, 80}
	tcp81      = Port{corev1.ProtocolTCP, 81}
	udp80      = Port{corev1.ProtocolUDP, 80}
	fromPeers  = func(p ...networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyIngressRule {
		return []networkingv1.NetworkPolicyIngressRule{{From: p}}
	}
	toPeers = func(p ...networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyEgressRule {
		return []networkingv1.NetworkPolicyEgressRule{{To: p}}
	}
	onPorts = func(p ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyIngressRule {
		return []networkingv1.NetworkPolicyIngressRule{{Ports: p}}
	}
	egressPorts = func(p ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyEgressRule {
		return []networkingv1.NetworkPolicyEgressRule{{Ports: p}}
	}
)

// q is a question and its answer: "x/a>y/b" on a port, allowed or not.
type q struct {
	pair string
	port Port
	want bool
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		qs       []q
	}{
		{"no policy: one network reaches itself, networks do not reach each other", nil, []q{
			{"x/a>x/b", tcp80, true}, {"x/a>y/b", udp80, true}, {"y/b>x/c", tcp81, true},
			{"x/a>z/a", tcp80, false}, {"z/a>x/a", tcp80, false},
			{"z/a>w/a", tcp80, false}, {"w/a>z/a", udp80, false}, // same subnet, same address, other network
		}},
		{"default deny ingress", []networkingv1.NetworkPolicy{np("x", "deny", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: ingress})}, []q{
			{"y/a>x/a", tcp80, false}, {"x/b>x/a", tcp80, false}, {"x/a>y/a", tcp80, true}, {"y/a>y/b", tcp80, true},
		}},
		{"default deny egress", []networkingv1.NetworkPolicy{np("x", "deny", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: egress})}, []q{
			{"x/a>y/a", tcp80, false}, {"x/a>x/b", udp80, false}, {"y/a>x/a", tcp80, true},
		}},
		{"deny both", []networkingv1.NetworkPolicy{np("x", "deny", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: both})}, []q{
			{"x/a>y/a", tcp80, false}, {"y/a>x/a", tcp80, false}, {"y/a>y/b", tcp80, true},
		}},
		{"no policy types and no egress rules: ingress only", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all})}, []q{
			{"y/a>x/a", tcp80, false}, {"x/a>y/a", tcp80, true},
		}},
		{"no policy types with egress rules: both", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: *sel("pod", "a"),
			Egress: toPeers(networkingv1.NetworkPolicyPeer{PodSelector: sel("pod", "b")})})}, []q{
			{"x/a>x/b", tcp80, true}, {"x/a>y/b", tcp80, false}, {"y/a>x/a", tcp80, false},
		}},
		{"egress-only policy: its ingress rules are ignored", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: egress,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{PodSelector: sel("pod", "b")}),
			Egress:  toPeers(networkingv1.NetworkPolicyPeer{PodSelector: &all})})}, []q{
			{"y/a>x/a", tcp80, true}, {"x/a>x/b", tcp81, true}, {"x/a>y/a", tcp80, false},
		}},
		{"podSelector alone: the policy's namespace", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{PodSelector: &all})})}, []q{
			{"x/b>x/a", tcp80, true}, {"y/a>x/a", tcp80, false},
		}},
		{"empty namespaceSelector: every namespace, but not another network", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: &all})})}, []q{
			{"x/b>x/a", tcp80, true}, {"y/a>x/a", tcp80, true}, {"z/a>x/a", tcp80, false},
		}},
		{"namespaceSelector AND podSelector in one peer", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("ns", "y"), PodSelector: sel("pod", "b")})})}, []q{
			{"y/b>x/a", tcp80, true}, {"y/a>x/a", tcp80, false}, {"x/b>x/a", tcp80, false},
		}},
		{"namespaceSelector OR podSelector as two peers", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("ns", "y")}, networkingv1.NetworkPolicyPeer{PodSelector: sel("pod", "b")})})}, []q{
			{"y/b>x/a", tcp80, true}, {"y/a>x/a", tcp80, true}, {"x/b>x/a", tcp80, true}, {"x/c>x/a", tcp80, false},
		}},
		{"the API server's metadata.name label", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel(MetadataNameLabel, "y")})})}, []q{
			{"y/a>x/a", tcp80, true}, {"x/b>x/a", tcp80, false},
		}},
		{"podSelector of the policy picks its pods, with expressions", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"server"}}}},
			PolicyTypes: ingress})}, []q{
			{"y/a>x/a", tcp80, true}, {"y/a>x/b", tcp80, false}, {"x/a>x/c", tcp80, false},
		}},
		{"a numbered port; the protocol defaults to TCP", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: onPorts(networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(80))})})}, []q{
			{"y/a>x/a", tcp80, true}, {"y/a>x/a", tcp81, false}, {"y/a>x/a", udp80, false},
		}},
		{"a port without a number: every port of its protocol", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: onPorts(networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP)})})}, []q{
			{"y/a>x/a", udp80, true}, {"y/a>x/a", Port{corev1.ProtocolUDP, 81}, true}, {"y/a>x/a", tcp80, false},
		}},
		{"a named port resolves on each destination pod", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: onPorts(tcp(intstr.FromString("web")))})}, []q{
			{"y/a>x/a", tcp80, true}, {"y/a>x/a", tcp81, false}, {"y/a>x/b", tcp81, true}, {"y/a>x/b", tcp80, false},
		}},
		{"a named port matches only a container port of its protocol", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: onPorts(networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromString("web"))},
				networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromString("udp-80"))})})}, []q{
			{"y/a>x/a", udp80, true}, {"y/a>x/a", tcp80, false}, {"y/a>x/b", Port{corev1.ProtocolUDP, 81}, false},
		}},
		{"an egress named port resolves on the destination", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: egress,
			Egress: egressPorts(tcp(intstr.FromString("web")))})}, []q{
			{"x/b>y/a", tcp80, true}, {"x/b>y/a", tcp81, false}, {"x/a>x/b", tcp81, true}, {"x/a>x/b", tcp80, false},
		}},
		{"endPort: a range, both ends included", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: onPorts(networkingv1.NetworkPolicyPort{Port: ptr.To(intstr.FromInt32(81)), EndPort: ptr.To(int32(83))})})}, []q{
			{"y/a>x/a", tcp80, false}, {"y/a>x/a", tcp81, true}, {"y/a>x/a", Port{corev1.ProtocolTCP, 83}, true},
			{"y/a>x/a", Port{corev1.ProtocolTCP, 84}, false}, {"y/a>x/a", Port{corev1.ProtocolUDP, 81}, false},
		}},
		{"ipBlock with except, for ingress", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.0.0.2/32", "10.0.2.0/24"}}})})}, []q{
			{"y/a>x/a", tcp80, true}, {"x/c>x/a", tcp80, true}, {"x/b>x/a", tcp80, false}, {"y/b>x/a", tcp80, false},
		}},
		{"ipBlock, for egress", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: egress,
			Egress: toPeers(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.1.1/32"}})})}, []q{
			{"x/a>y/a", tcp80, true}, {"x/a>y/b", tcp80, false}, {"x/a>x/c", tcp80, false},
		}},
		{"ipBlock does not reach another network with the same addresses", []networkingv1.NetworkPolicy{np("z", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}})})}, []q{
			{"w/a>z/a", tcp80, false}, {"x/a>z/a", tcp80, false},
		}},
		{"two policies on one pod add up", []networkingv1.NetworkPolicy{
			np("x", "p1", networkingv1.NetworkPolicySpec{PodSelector: *sel("pod", "a"), Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("pod", "b")}}, Ports: ports(tcp(intstr.FromInt32(80)))}}}),
			np("x", "p2", networkingv1.NetworkPolicySpec{PodSelector: *sel("pod", "a"), Ingress: []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("ns", "y")}}, Ports: ports(tcp(intstr.FromInt32(81)))}}}),
		}, []q{
			{"x/b>x/a", tcp80, true}, {"x/b>x/a", tcp81, false}, {"y/a>x/a", tcp81, true}, {"y/a>x/a", tcp80, false},
			{"x/c>x/a", tcp80, false}, {"y/a>x/b", tcp80, true}, // x/b: no policy selects it
		}},
		{"a deny and an allow-all add up to allow-all", []networkingv1.NetworkPolicy{
			np("x", "deny", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: both}),
			np("x", "allow", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: both, Ingress: allIngress, Egress: allEgress}),
		}, []q{
			{"y/a>x/a", tcp80, true}, {"x/a>y/a", udp80, true}, {"x/a>z/a", tcp80, false},
		}},
		{"a policy selecting no pods has no effect", []networkingv1.NetworkPolicy{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: *sel("pod", "none"), PolicyTypes: both})}, []q{
			{"y/a>x/a", tcp80, true}, {"x/a>y/a", tcp80, true},
		}},
		{"a policy selects only in its own namespace", []networkingv1.NetworkPolicy{np("y", "p", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: both})}, []q{
			{"x/a>x/b", tcp80, true}, {"x/a>y/a", tcp80, false}, {"y/a>x/a", tcp80, false},
		}},
		{"both ends must allow: egress of the source and ingress of the destination", []networkingv1.NetworkPolicy{
			np("x", "egress-to-y", networkingv1.NetworkPolicySpec{PodSelector: all, PolicyTypes: egress, Egress: toPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("ns", "y")})}),
			np("y", "ingress-from-x-b", networkingv1.NetworkPolicySpec{PodSelector: all, Ingress: fromPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("ns", "x"), PodSelector: sel("pod", "b")})}),
		}, []q{
			{"x/b>y/a", tcp80, true}, {"x/a>y/a", tcp80, false}, {"x/a>x/b", tcp80, false},
			{"y/a>x/a", tcp80, true}, // x's policy is egress only
			{"y/a>y/b", tcp80, false},
		}},
		{"a namespaceSelector picking another network's namespace contributes nothing", []networkingv1.NetworkPolicy{np("z", "p", networkingv1.NetworkPolicySpec{PodSelector: all,
			Ingress: fromPeers(networkingv1.NetworkPolicyPeer{NamespaceSelector: sel("ns", "w")})})}, []q{
			{"w/a>z/a", tcp80, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(namespaces, tc.policies)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range tc.qs {
				from, to, _ := strings.Cut(q.pair, ">")
				got, why := c.Allowed(pods[from], pods[to], q.port)
				if got != q.want {
					t.Errorf("%s %s: allowed %v (%s), want %v", q.pair, q.port, got, why, q.want)
				}
				if !got && why == "" {
					t.Errorf("%s %s: denied without a reason", q.pair, q.port)
				}
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tc := range []struct {
		policy networkingv1.NetworkPolicy
		want   string
	}{
		{np("nowhere", "p", networkingv1.NetworkPolicySpec{}), "unknown namespace"},
		{np("x", "p", networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}), "podSelector"},
		{np("x", "p", networkingv1.NetworkPolicySpec{Ingress: fromPeers(networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0"}})}), "ipBlock"},
		{np("x", "p", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{"Sideways"}}), "policy type"},
	} {
		if _, err := New(namespaces, []networkingv1.NetworkPolicy{tc.policy}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", tc.policy.Spec, err, tc.want)
		}
	}
}
