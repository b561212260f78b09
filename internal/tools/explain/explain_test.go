package explain

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    target
		wantErr string
	}{
		{in: "shop/echo-0", want: target{pod: "shop/echo-0"}},
		{in: "shop/echo-0:8080", want: target{pod: "shop/echo-0", port: 8080}},
		{in: "10.96.0.10", want: target{addr: netip.MustParseAddr("10.96.0.10")}},
		{in: "10.96.0.10:53", want: target{addr: netip.MustParseAddr("10.96.0.10"), port: 53}},
		{in: "[fd00::5]:80", want: target{addr: netip.MustParseAddr("fd00::5"), port: 80}},
		{in: "fd00::5", want: target{addr: netip.MustParseAddr("fd00::5")}},
		{in: "", wantErr: "no destination"},
		{in: "echo", wantErr: "neither an address nor <namespace>/<pod>"},
		{in: "a/b/c", wantErr: "neither an address"},
		{in: "shop/echo:http", wantErr: `port "http" is not a number`},
		{in: "shop/echo:70000", wantErr: "from 1 to 65535"},
		{in: "10.0.0.1:0", wantErr: "port 0"},
	}
	for _, tc := range tests {
		got, err := parseTarget(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseTarget(%q) error %v, want one containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseTarget(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestProtocol(t *testing.T) {
	for _, tc := range []struct {
		q    string
		port int
		want string
		err  bool
	}{
		{"", 80, "tcp", false}, {"", 0, "icmp", false}, {"udp", 53, "udp", false},
		{"icmp", 0, "icmp", false}, {"icmp", 80, "", true}, {"sctp", 80, "", true},
	} {
		got, err := protocol(tc.q, tc.port)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("protocol(%q, %d) = %q, %v; want %q, error %v", tc.q, tc.port, got, err, tc.want, tc.err)
		}
	}
}

// TestRouteAttachment: a pod with a primary UDN sends to cluster DNS and
// the API server through its default-network attachment (the host routes
// of the infrastructure services), everything else through the UDN.
func TestRouteAttachment(t *testing.T) {
	nets := podnet.Networks{
		"default": {IPs: []string{"10.244.0.10/24"}, Role: podnet.RoleInfrastructure, Routes: []podnet.Route{
			{Dest: "10.244.0.0/16", NextHop: "10.244.0.1"}, {Dest: "10.96.0.10/32", NextHop: "10.244.0.1"}}},
		"shop/tenant": {IPs: []string{"10.132.2.3/24"}, Role: podnet.RolePrimary, Routes: []podnet.Route{
			{Dest: "10.132.0.0/16", NextHop: "10.132.2.1"}, {Dest: "10.96.0.0/16", NextHop: "10.132.2.1"}}},
		"shop/sec": {IPs: []string{"192.168.5.4/24"}, Role: podnet.RoleSecondary},
	}
	for _, tc := range []struct{ dst, want string }{
		{"10.96.0.10", "default"},
		{"10.96.0.20", "shop/tenant"},
		{"10.132.1.5", "shop/tenant"},
		{"10.244.1.5", "default"},
		{"192.168.5.9", "shop/sec"},
		{"8.8.8.8", "shop/tenant"},
		{"", "shop/tenant"},
	} {
		var dst netip.Addr
		if tc.dst != "" {
			dst = netip.MustParseAddr(tc.dst)
		}
		if got := routeAttachment(nets, dst); got != tc.want {
			t.Errorf("routeAttachment(%s) = %q, want %q", tc.dst, got, tc.want)
		}
	}
}

func TestGatewayOf(t *testing.T) {
	p := netip.MustParsePrefix("10.244.1.8/24")
	for _, tc := range []struct {
		name string
		a    podnet.Attachment
		want string
	}{
		{"gateway address", podnet.Attachment{Gateways: []string{"fd00::1", "10.244.1.1"}}, "10.244.1.1"},
		{"route next hop", podnet.Attachment{Routes: []podnet.Route{{Dest: "10.244.0.0/16", NextHop: "10.244.1.254"}}}, "10.244.1.254"},
		{"first address", podnet.Attachment{}, "10.244.1.1"},
	} {
		if got := gatewayOf(tc.a, p); got.String() != tc.want {
			t.Errorf("%s: gatewayOf = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestAdvance: the packet entering the next zone comes in by the port it
// entered the remote port's datapath through, with the MACs the router set
// and the TTL it decremented.
func TestAdvance(t *testing.T) {
	b, err := os.ReadFile("testdata/remote.txt")
	if err != nil {
		t.Fatal(err)
	}
	v, err := ovntrace.Parse(string(b))
	if err != nil {
		t.Fatal(err)
	}
	o, ok := v.DeliveredTo("tstor-l3-blue.tenant_node2")
	if !ok {
		t.Fatalf("not delivered to the remote port: %v", v.Outputs)
	}
	in := ovntrace.Packet{InPort: "l3-blue.tenant_l3-blue_a", EthSrc: "0a:58:0a:80:02:03", EthDst: "0a:58:0a:80:02:01",
		IPSrc: "10.128.2.3", IPDst: "10.128.0.3", Proto: "tcp", SrcPort: 40000, DstPort: 8080}
	want := ovntrace.Packet{InPort: "tstor-l3-blue.tenant_node1", EthSrc: "0a:58:64:58:00:02", EthDst: "0a:58:64:58:00:03",
		IPSrc: "10.128.2.3", IPDst: "10.128.0.3", Proto: "tcp", SrcPort: 40000, DstPort: 8080, TTL: 63}
	if diff := cmp.Diff(want, advance(in, "tstor-l3-blue.tenant_node1", o)); diff != "" {
		t.Errorf("advance (-want +got):\n%s", diff)
	}
	dnat := ovntrace.Output{Fields: map[string]string{"ip4.dst": "10.0.0.9", "tcp.dst": "8081"}}
	if got := advance(in, "x", dnat); got.IPDst != "10.0.0.9" || got.DstPort != 8081 || got.TTL != 64 {
		t.Errorf("advance with DNAT fields = %+v", got)
	}
}

func TestParseStageHints(t *testing.T) {
	out := `{"data":[[["uuid","9d8191ed-7d64-4202-86d4-00528a2355f0"],["map",[["source","northd.c:11810"],["stage-hint","98c250f6"],["stage-name","lr_in_policy"]]]],` +
		`[["uuid","05c87bad-2d7f-4c99-923b-2ee1157777bd"],["map",[["source","northd.c:12824"],["stage-name","lr_in_ip_routing"]]]]],"headings":["_uuid","external_ids"]}`
	got, err := parseStageHints(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"9d8191ed": "98c250f6"}, got); diff != "" {
		t.Errorf("hints (-want +got):\n%s", diff)
	}
	if _, err := parseStageHints("not json"); err == nil {
		t.Error("no error for output that is not JSON")
	}
}

func TestSelecting(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "echo"}}}
	np := func(name string, sel map[string]string, types []networkingv1.PolicyType, egress bool) networkingv1.NetworkPolicy {
		p := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types}}
		if egress {
			p.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
		}
		return p
	}
	in, eg := networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress
	policies := []networkingv1.NetworkPolicy{
		np("z-all", nil, nil, false),
		np("echo-in", map[string]string{"app": "echo"}, []networkingv1.PolicyType{in}, false),
		np("web-in", map[string]string{"app": "web"}, []networkingv1.PolicyType{in}, false),
		np("echo-out", map[string]string{"app": "echo"}, []networkingv1.PolicyType{eg}, false),
		np("implied-egress", nil, nil, true),
	}
	if diff := cmp.Diff([]string{"echo-in", "implied-egress", "z-all"}, selecting(policies, pod, in)); diff != "" {
		t.Errorf("ingress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"echo-out", "implied-egress"}, selecting(policies, pod, eg)); diff != "" {
		t.Errorf("egress (-want +got):\n%s", diff)
	}
}
