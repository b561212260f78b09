package netpol

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

var (
	blue = topology.Network{Name: "blue", ID: 1, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary,
		Subnets: []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.128.0.0/16"), HostPrefix: 24}}}
	dual = topology.Network{Name: "dual", ID: 2, Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary,
		Subnets: []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.0.0.0/16")}, {CIDR: netip.MustParsePrefix("fd00::/64")}}}
)

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func policy(mutate func(*networkingv1.NetworkPolicySpec)) *networkingv1.NetworkPolicy {
	p := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pol"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "web")}}
	mutate(&p.Spec)
	return p
}

func port(proto corev1.Protocol, p intstr.IntOrString, end ...int32) networkingv1.NetworkPolicyPort {
	out := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &p}
	if len(end) > 0 {
		out.EndPort = &end[0]
	}
	return out
}

var (
	web1 = Pod{Namespace: "ns", Name: "web1", Labels: map[string]string{"app": "web"}, PortUUID: "u-web1",
		IPs: []netip.Addr{netip.MustParseAddr("10.128.1.5")}, Ports: []ContainerPort{{Name: "http", Protocol: "TCP", Number: 8080}}}
	web2 = Pod{Namespace: "ns", Name: "web2", Labels: map[string]string{"app": "web"}, PortUUID: "u-web2",
		IPs: []netip.Addr{netip.MustParseAddr("10.128.1.6")}, Ports: []ContainerPort{{Name: "http", Protocol: "TCP", Number: 9090}}}
	db = Pod{Namespace: "ns", Name: "db", Labels: map[string]string{"app": "db"}, PortUUID: "u-db",
		IPs: []netip.Addr{netip.MustParseAddr("10.128.1.7")}, Ports: []ContainerPort{{Name: "sql", Protocol: "TCP", Number: 5432}}}
	remote = Pod{Namespace: "ns", Name: "web3", Labels: map[string]string{"app": "web"}, IPs: []netip.Addr{netip.MustParseAddr("10.128.2.5")}}
)

// mixesOperators reports whether a match has && and || at one parenthesis
// depth, which OVN refuses to parse.
func mixesOperators(m string) bool {
	type ops struct{ and, or bool }
	stack := []ops{{}}
	for i := 0; i < len(m); i++ {
		switch {
		case m[i] == '(':
			stack = append(stack, ops{})
		case m[i] == ')':
			stack = stack[:len(stack)-1]
		case strings.HasPrefix(m[i:], "&&"):
			stack[len(stack)-1].and = true
		case strings.HasPrefix(m[i:], "||"):
			stack[len(stack)-1].or = true
		}
		if top := stack[len(stack)-1]; top.and && top.or {
			return true
		}
	}
	return false
}

// summary prints rows as one line each, sorted, so table cases read as what
// an operator sees in ovn-nbctl.
func summary(rows []model.Model) []string {
	var out []string
	for _, r := range rows {
		switch r := r.(type) {
		case *nbdb.PortGroup:
			out = append(out, fmt.Sprintf("PG %s ports=%v acls=%d", r.Name, r.Ports, len(r.ACLs)))
		case *nbdb.ACL:
			if mixesOperators(r.Match) {
				out = append(out, "MIXES && AND || UNPARENTHESIZED: "+r.Match)
			}
			opts := ""
			if r.Options["apply-after-lb"] == "true" {
				opts = " after-lb"
			}
			out = append(out, fmt.Sprintf("ACL %s %d %s tier%d%s: %s", r.Direction, r.Priority, r.Action, r.Tier, opts, r.Match))
		case *nbdb.AddressSet:
			out = append(out, fmt.Sprintf("AS %s %v", r.Name, r.Addresses))
		default:
			out = append(out, fmt.Sprintf("%T", r))
		}
	}
	sort.Strings(out)
	return out
}

func TestRender(t *testing.T) {
	pg := PortGroupName("blue", "ns", "pol")
	sameNS := Peer{Namespace: "ns", Pods: selector(sel("app", "db"))}
	prodNS := Peer{Namespaces: selector(sel("env", "prod")), Pods: selector(&metav1.LabelSelector{})}
	both := Peer{Namespaces: selector(sel("env", "prod")), Pods: selector(sel("app", "db"))}
	as := func(p Peer) string { return "$" + AddressSetName("blue", p, false) }
	for _, c := range []struct {
		name string
		pol  *networkingv1.NetworkPolicy
		net  topology.Network
		pods []Pod
		peer map[string][]Pod
		want []string
	}{{
		name: "default deny ingress: a port group without ACLs",
		pol:  policy(func(s *networkingv1.NetworkPolicySpec) {}),
		pods: []Pod{web1, web2, db},
		want: []string{"PG " + pg + " ports=[u-web1 u-web2] acls=0"},
	}, {
		name: "selects nothing in the zone: no rows",
		pol:  policy(func(s *networkingv1.NetworkPolicySpec) {}),
		pods: []Pod{db, remote},
	}, {
		name: "allow from everything: an empty from",
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		}),
		pods: []Pod{web1},
		want: []string{
			"ACL to-lport 1001 allow-related tier2: outport == @" + pg,
			"PG " + pg + " ports=[u-web1] acls=1",
		},
	}, {
		name: "pod selector, namespace selector, both: address sets of the network",
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: sel("app", "db")}, {NamespaceSelector: sel("env", "prod")},
			}}, {From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "db"), NamespaceSelector: sel("env", "prod")}}}}
		}),
		pods: []Pod{web1},
		want: []string{
			"ACL to-lport 1001 allow-related tier2: outport == @" + pg + " && (ip4.src == {" + as(sameNS) + ", " + as(prodNS) + "})",
			"ACL to-lport 1001 allow-related tier2: outport == @" + pg + " && (ip4.src == {" + as(both) + "})",
			"PG " + pg + " ports=[u-web1] acls=2",
		},
	}, {
		name: "ipBlock with except, and ports: number, range, protocol only",
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.128.0.1/16", Except: []string{"10.128.1.0/24", "fd00::/64"}}}},
				Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromInt32(80)), port(corev1.ProtocolUDP, intstr.FromInt32(1000), 2000),
					{Protocol: ptr.To(corev1.ProtocolSCTP)}},
			}}
		}),
		pods: []Pod{web1},
		want: []string{
			"ACL to-lport 1001 allow-related tier2: outport == @" + pg + " && (ip4.src == 10.128.0.0/16 && ip4.src != {10.128.1.0/24}) && ((sctp) || (tcp.dst == 80) || (udp.dst >= 1000 && udp.dst <= 2000))",
			"PG " + pg + " ports=[u-web1] acls=1",
		},
	}, {
		name: "ingress named port: resolved on each selected pod",
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromString("http"))}}}
		}),
		pods: []Pod{web1, web2, db},
		want: []string{
			"ACL to-lport 1001 allow-related tier2: outport == @" + pg + " && ((ip4.dst == {10.128.1.5} && tcp.dst == 8080) || (ip4.dst == {10.128.1.6} && tcp.dst == 9090))",
			"PG " + pg + " ports=[u-web1 u-web2] acls=1",
		},
	}, {
		name: "a named port nothing has: the rule matches nothing",
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolUDP, intstr.FromString("http"))}}}
		}),
		pods: []Pod{web1},
		want: []string{"PG " + pg + " ports=[u-web1] acls=0"},
	}, {
		name: "egress: from-lport after load balancing, named ports on the peers",
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{}} // ignored: not an ingress policy
			s.Egress = []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "db")}},
				Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromString("sql"))},
			}, {
				To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}},
			}}
		}),
		pods: []Pod{web1},
		peer: map[string][]Pod{sameNS.Key(): {db}},
		want: []string{
			"ACL from-lport 1001 allow-related tier2 after-lb: inport == @" + pg + " && (ip4.dst == 192.0.2.0/24)",
			"ACL from-lport 1001 allow-related tier2 after-lb: inport == @" + pg + " && (ip4.dst == {" + as(sameNS) + "}) && (ip4.dst == {10.128.1.7} && tcp.dst == 5432)",
			"PG " + pg + " ports=[u-web1] acls=2",
		},
	}, {
		name: "dual-stack network: both families' address sets",
		net:  dual,
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "db")}}}}
		}),
		pods: []Pod{web1},
		want: []string{
			"ACL to-lport 1001 allow-related tier2: outport == @" + PortGroupName("dual", "ns", "pol") + " && ((ip4.src == {$" + AddressSetName("dual", sameNS, false) + "}) || (ip6.src == {$" + AddressSetName("dual", sameNS, true) + "}))",
			"PG " + PortGroupName("dual", "ns", "pol") + " ports=[u-web1] acls=1",
		},
	}, {
		name: "dual-stack named port: both families, parenthesized before the port",
		net:  dual,
		pol: policy(func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(corev1.ProtocolTCP, intstr.FromString("http"))}}}
		}),
		pods: []Pod{{Namespace: "ns", Name: "web1", Labels: map[string]string{"app": "web"}, PortUUID: "u-web1",
			IPs:   []netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")},
			Ports: []ContainerPort{{Name: "http", Protocol: "TCP", Number: 8080}}}},
		want: []string{
			"ACL to-lport 1001 allow-related tier2: outport == @" + PortGroupName("dual", "ns", "pol") + " && (((ip4.dst == {10.0.0.5}) || (ip6.dst == {fd00::5})) && tcp.dst == 8080)",
			"PG " + PortGroupName("dual", "ns", "pol") + " ports=[u-web1] acls=1",
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			n := c.net
			if n.Name == "" {
				n = blue
			}
			got := summary(Render(Input{Policy: c.pol, Network: n, Pods: c.pods, PeerPods: c.peer}))
			sort.Strings(c.want)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeny(t *testing.T) {
	in := "np_" + hash("blue|ns") + "_ingressDefaultDeny"
	eg := "np_" + hash("blue|ns") + "_egressDefaultDeny"
	ingressOnly := policy(func(s *networkingv1.NetworkPolicySpec) {})
	egressDB := policy(func(s *networkingv1.NetworkPolicySpec) {
		s.PodSelector = *sel("app", "db")
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	})
	mgmt := []netip.Addr{netip.MustParseAddr("10.128.1.2")}
	for _, c := range []struct {
		name string
		pols []*networkingv1.NetworkPolicy
		pods []Pod
		keep map[string]bool
		want []string
	}{{
		name: "no policy: nothing",
		pods: []Pod{web1, db},
	}, {
		name: "ingress policy: the selected pods, ARP/ND and the node allowed",
		pols: []*networkingv1.NetworkPolicy{ingressOnly},
		pods: []Pod{web1, web2, db, remote},
		want: []string{
			"ACL to-lport 1000 drop tier2: outport == @" + in,
			"ACL to-lport 1001 allow tier2: outport == @" + in + " && (arp || nd)",
			"ACL to-lport 1001 allow-related tier2: outport == @" + in + " && ip4.src == 10.128.1.2",
			"ACL to-lport 1001 allow-related tier2: outport == @" + in + " && ip4.src == 169.254.0.5",
			"PG " + in + " ports=[u-web1 u-web2] acls=4",
		},
	}, {
		name: "policies of both directions on different pods",
		pols: []*networkingv1.NetworkPolicy{ingressOnly, egressDB},
		pods: []Pod{web1, db},
		want: []string{
			"ACL from-lport 1000 drop tier2 after-lb: inport == @" + eg,
			"ACL from-lport 1001 allow tier2 after-lb: inport == @" + eg + " && (arp || nd)",
			"ACL from-lport 1001 allow-related tier2 after-lb: inport == @" + eg + " && ip4.dst == 10.128.1.2",
			"ACL to-lport 1000 drop tier2: outport == @" + in,
			"ACL to-lport 1001 allow tier2: outport == @" + in + " && (arp || nd)",
			"ACL to-lport 1001 allow-related tier2: outport == @" + in + " && ip4.src == 10.128.1.2",
			"ACL to-lport 1001 allow-related tier2: outport == @" + in + " && ip4.src == 169.254.0.5",
			"PG " + eg + " ports=[u-db] acls=3",
			"PG " + in + " ports=[u-web1] acls=4",
		},
	}, {
		name: "no policy, but the egress group exists: it stays, empty",
		pods: []Pod{web1},
		keep: map[string]bool{"Egress": true},
		want: []string{
			"ACL from-lport 1000 drop tier2 after-lb: inport == @" + eg,
			"ACL from-lport 1001 allow tier2 after-lb: inport == @" + eg + " && (arp || nd)",
			"ACL from-lport 1001 allow-related tier2 after-lb: inport == @" + eg + " && ip4.dst == 10.128.1.2",
			"PG " + eg + " ports=[] acls=3",
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			got := summary(Deny(DenyInput{Namespace: "ns", Network: blue, Policies: c.pols, Pods: c.pods, Management: mgmt,
				Hairpin: []netip.Addr{netip.MustParseAddr("169.254.0.5")}, Keep: c.keep}))
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPeers(t *testing.T) {
	prod := Namespace{Name: "shop", Labels: map[string]string{"env": "prod"}}
	dev := Namespace{Name: "ns", Labels: map[string]string{"env": "dev"}}
	shopDB := Pod{Namespace: "shop", Name: "db", Labels: map[string]string{"app": "db"}, IPs: []netip.Addr{netip.MustParseAddr("10.128.3.9")}}
	pol := policy(func(s *networkingv1.NetworkPolicySpec) {
		s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: sel("app", "db")}, {PodSelector: sel("app", "db"), NamespaceSelector: sel("env", "prod")},
			{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}},
		}}}
		s.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "db")}}}}
	})
	peers := Peers(pol)
	var keys []string
	for _, p := range peers {
		keys = append(keys, p.Key())
		back, err := ParsePeerKey(p.Key())
		if err != nil || back.Key() != p.Key() {
			t.Errorf("key %q reads back as %q (%v)", p.Key(), back.Key(), err)
		}
	}
	if diff := cmp.Diff([]string{"ns:ns;pods:app=db", "nss:env=prod;pods:app=db"}, keys); diff != "" {
		t.Errorf("peers (-want +got):\n%s", diff)
	}
	namespaces := []Namespace{prod, dev}
	pods := []Pod{web1, db, shopDB}
	for _, c := range []struct {
		peer Peer
		want []string
	}{
		{peers[0], []string{"10.128.1.7"}},
		{peers[1], []string{"10.128.3.9"}},
		{everyPod, []string{"10.128.1.5", "10.128.1.7", "10.128.3.9"}},
	} {
		var got []string
		for _, a := range PeerAddresses(c.peer, namespaces, pods) {
			got = append(got, a.String())
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("peer %s (-want +got):\n%s", c.peer.Key(), diff)
		}
	}
	// A namespace of another network is not among namespaces: its pods
	// contribute nothing.
	if got := PeerAddresses(peers[1], []Namespace{dev}, pods); len(got) != 0 {
		t.Errorf("peer of another network's namespace got %v", got)
	}
	rows := summary(PeerRows(dual, peers[0], []netip.Addr{netip.MustParseAddr("fd00::5"), netip.MustParseAddr("10.0.0.5")}))
	want := []string{"AS " + AddressSetName("dual", peers[0], false) + " [10.0.0.5]", "AS " + AddressSetName("dual", peers[0], true) + " [fd00::5]"}
	sort.Strings(want)
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("peer rows (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"pods:x", "ns:a", "nss:!!;pods:"} {
		if _, err := ParsePeerKey(bad); err == nil {
			t.Errorf("ParsePeerKey(%q) accepted it", bad)
		}
	}
	if !strings.HasPrefix(AddressSetName("blue", peers[0], false), "a") {
		t.Error("address set names must be identifiers")
	}
}

func TestTypes(t *testing.T) {
	for _, c := range []struct {
		spec         networkingv1.NetworkPolicySpec
		ingress, egr bool
	}{
		{networkingv1.NetworkPolicySpec{}, true, false},
		{networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}}, true, true},
		{networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}, false, true},
		{networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}, true, true},
	} {
		i, e := Types(&networkingv1.NetworkPolicy{Spec: c.spec})
		if i != c.ingress || e != c.egr {
			t.Errorf("Types(%+v) = %v, %v; want %v, %v", c.spec, i, e, c.ingress, c.egr)
		}
	}
}
