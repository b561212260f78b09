package gateway

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func input() Input {
	return Input{
		Physical:           1,
		NodeIPs:            []netip.Addr{netip.MustParseAddr("192.168.100.11")},
		MAC:                "02:00:c0:a8:64:0b",
		HostMasqueradeIPs:  []netip.Addr{netip.MustParseAddr("169.254.0.2")},
		MasqueradeNextHops: []netip.Addr{netip.MustParseAddr("169.254.0.4")},
		ServiceCIDRs:       []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16")},
		Networks: []Network{
			{Name: "default", ID: 0, Patch: 2},
			{Name: "blue", ID: 3, Patch: 5},
			{Name: "pending", ID: 9}, // no patch port yet
		},
		Services: []Service{
			{Name: "blue/web", Network: "blue", ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.50")},
				ExternalIPs: []netip.Addr{netip.MustParseAddr("172.30.0.10")},
				Ports:       []Port{{Protocol: "tcp", Port: 80, NodePort: 30080}}},
			{Name: "default/kubernetes", Network: "default", ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.1")},
				Ports: []Port{{Protocol: "tcp", Port: 443}}},
			{Name: "gone/x", Network: "pending", ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.99")},
				Ports: []Port{{Protocol: "udp", Port: 53, NodePort: 30053}}},
		},
	}
}

// pick returns the flows of f containing every fragment, without the cookie.
func pick(f []string, fragments ...string) []string {
	var out []string
next:
	for _, l := range f {
		for _, s := range fragments {
			if !strings.Contains(l, s) {
				continue next
			}
		}
		out = append(out, strings.TrimPrefix(l, "cookie="+cookie+","))
	}
	return out
}

func TestFlows(t *testing.T) {
	f := Flows(input())
	for _, tc := range []struct {
		name      string
		fragments []string
		want      []string
	}{{
		name:      "egress of each network: SNAT to the node in the node zone, marked",
		fragments: []string{"priority=100,in_port="},
		want: []string{
			"table=0,priority=100,in_port=2,ip,actions=ct(commit,zone=61440,nat(src=192.168.100.11),exec(set_field:1->ct_mark),table=4)",
			"table=0,priority=100,in_port=5,ip,actions=ct(commit,zone=61440,nat(src=192.168.100.11),exec(set_field:4->ct_mark),table=4)",
			"table=0,priority=100,in_port=LOCAL,ip,nw_src=192.168.100.11,actions=ct(commit,zone=61440),output:1",
		},
	}, {
		name:      "replies find their router by mark",
		fragments: []string{"table=1,"},
		want: []string{
			"table=1,priority=0,actions=LOCAL",
			"table=1,priority=100,ct_state=+trk+est,ct_mark=1,actions=set_field:02:00:c0:a8:64:0b->eth_dst,output:2",
			"table=1,priority=100,ct_state=+trk+est,ct_mark=4,actions=set_field:02:00:c0:a8:64:0b->eth_dst,output:5",
			"table=1,priority=100,ct_state=+trk+rel,ct_mark=1,actions=set_field:02:00:c0:a8:64:0b->eth_dst,output:2",
			"table=1,priority=100,ct_state=+trk+rel,ct_mark=4,actions=set_field:02:00:c0:a8:64:0b->eth_dst,output:5",
		},
	}, {
		name:      "node port and external IP steered both ways, nothing for a network without a patch port",
		fragments: []string{"priority=700"},
		want: []string{
			"table=0,priority=700,in_port=1,tcp,nw_dst=172.30.0.10,tp_dst=80,actions=output:5",
			"table=0,priority=700,in_port=1,tcp,nw_dst=192.168.100.11,tp_dst=30080,actions=output:5",
			"table=0,priority=700,in_port=5,tcp,nw_src=172.30.0.10,tp_src=80,actions=output:1",
			"table=0,priority=700,in_port=5,tcp,nw_src=192.168.100.11,tp_src=30080,actions=output:1",
		},
	}, {
		name:      "host to a UDN ClusterIP and to the default network's service CIDR",
		fragments: []string{"in_port=LOCAL", "nat(src=169.254.0.2)"},
		want: []string{
			"table=0,priority=500,in_port=LOCAL,ip,nw_dst=10.96.0.0/16,actions=set_field:0x2->reg0,ct(commit,zone=61439,nat(src=169.254.0.2),table=2)",
			"table=0,priority=600,in_port=LOCAL,ip,nw_dst=10.96.0.50,actions=set_field:0x5->reg0,ct(commit,zone=61439,nat(src=169.254.0.2),table=2)",
		},
	}, {
		name:      "Geneve passes without conntrack",
		fragments: []string{"tp_dst=6081"},
		want: []string{
			"table=0,priority=1000,in_port=1,udp,nw_dst=192.168.100.11,tp_dst=6081,actions=LOCAL",
			"table=0,priority=1000,in_port=LOCAL,udp,nw_src=192.168.100.11,tp_dst=6081,actions=output:1",
		},
	}, {
		name:      "ARP replies reach every router and the host",
		fragments: []string{"arp_op=2"},
		want:      []string{"table=0,priority=400,in_port=1,arp,arp_op=2,arp_tpa=192.168.100.11,actions=LOCAL,output:2,output:5"},
	}, {
		name:      "whatever else a router sends goes out (never to NORMAL, which would learn the shared MAC)",
		fragments: []string{"table=0,priority=5,"},
		want: []string{
			"table=0,priority=5,in_port=2,actions=output:1",
			"table=0,priority=5,in_port=5,actions=output:1",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, pick(f, tc.fragments...)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]string{"table=0,priority=0,actions=NORMAL"}, pick(f, "table=0,priority=0,")); diff != "" {
		t.Errorf("switching fallback (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"table=0,priority=10,in_port=1,dl_dst=02:00:c0:a8:64:0b,actions=LOCAL"}, pick(f, "priority=10,in_port=1")); diff != "" {
		t.Errorf("uplink to the host (-want +got):\n%s", diff)
	}
	if got := pick(f, "10.96.0.99"); len(got) != 0 {
		t.Errorf("flows for a network without a patch port: %v", got)
	}
	if got := pick(f, "arp_tpa=169.254.0.4"); len(got) != 2 || !strings.Contains(got[0], "set_field:0a:58:a9:fe:00:04->arp_sha") {
		t.Errorf("ARP responder for the masquerade next hop: %v", got)
	}
}

func TestFlowsDeterministic(t *testing.T) {
	in := input()
	a := Flows(in)
	in.Networks[0], in.Networks[1] = in.Networks[1], in.Networks[0]
	in.Services[0], in.Services[2] = in.Services[2], in.Services[0]
	if diff := cmp.Diff(a, Flows(in)); diff != "" {
		t.Errorf("order of the input changed the flows (-first +second):\n%s", diff)
	}
}

func TestZonesAndMarks(t *testing.T) {
	if NodeZone != 61440 || HostServiceZone != 61439 {
		t.Fatalf("zones moved: node %d, host service %d (documented in docs/gateway.md)", NodeZone, HostServiceZone)
	}
	if Mark(0) == 0 {
		t.Fatal("the default network's mark must not be 0 (the host's)")
	}
}

// Two services claiming one external address and port: the first in input
// order keeps it (its network's patch), the other is reported, and a
// service repeating its own address on two ports is no conflict.
func TestBuildConflicts(t *testing.T) {
	in := input()
	shared := netip.MustParseAddr("172.30.0.10")
	in.Networks = append(in.Networks, Network{Name: "red", ID: 4, Patch: 6})
	in.Services = append(in.Services,
		Service{Name: "red/web", Network: "red", ExternalIPs: []netip.Addr{shared},
			Ports: []Port{{Protocol: "tcp", Port: 80}, {Protocol: "tcp", Port: 8080}, {Protocol: "udp", Port: 80}}},
		Service{Name: "blue/again", Network: "blue", ExternalIPs: []netip.Addr{shared},
			Ports: []Port{{Protocol: "tcp", Port: 8080}}},
	)
	got := Build(in)
	want := []Conflict{
		{Service: "red/web", Holder: "blue/web", Address: shared, Protocol: "tcp", Port: 80},
		{Service: "blue/again", Holder: "red/web", Address: shared, Protocol: "tcp", Port: 8080},
	}
	if d := cmp.Diff(want, got.Conflicts, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("conflicts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{
		"table=0,priority=700,in_port=1,tcp,nw_dst=172.30.0.10,tp_dst=80,actions=output:5",
		"table=0,priority=700,in_port=1,tcp,nw_dst=172.30.0.10,tp_dst=8080,actions=output:6",
		"table=0,priority=700,in_port=1,udp,nw_dst=172.30.0.10,tp_dst=80,actions=output:6",
	}, pick(got.Flows, "in_port=1,", "nw_dst=172.30.0.10")); d != "" {
		t.Errorf("steering of the shared address (-want +got):\n%s", d)
	}
	if s := want[0].String(); !strings.Contains(s, "172.30.0.10 TCP/80") || !strings.Contains(s, "blue/web") {
		t.Errorf("conflict message %q", s)
	}
}

// BFD from each next hop to the node's address goes to the default
// network's router (it runs the node's sessions); nothing without it.
func TestBFDFromNextHops(t *testing.T) {
	in := input()
	in.NextHops = []netip.Addr{netip.MustParseAddr("192.168.100.1"), netip.MustParseAddr("192.168.100.2"), netip.MustParseAddr("fc00::1")}
	want := []string{
		"table=0,priority=800,in_port=1,udp,nw_src=192.168.100.1,nw_dst=192.168.100.11,tp_dst=3784,actions=output:2",
		"table=0,priority=800,in_port=1,udp,nw_src=192.168.100.2,nw_dst=192.168.100.11,tp_dst=3784,actions=output:2",
	}
	if d := cmp.Diff(want, pick(Flows(in), "tp_dst=3784")); d != "" {
		t.Errorf("BFD steering (-want +got):\n%s", d)
	}
	in.Networks = in.Networks[1:] // no default router patch yet
	if got := pick(Flows(in), "tp_dst=3784"); len(got) != 0 {
		t.Errorf("BFD steered with no default router: %q", got)
	}
}

// TestEgressIPFlows: an egress IP the node holds is answered for (ARP) on
// the uplink only, what arrives for it asks the node zone like the node's
// address, and what any router sends from it leaves SNATed to itself in the
// node zone, marked with the router's network (not to the node's address).
func TestEgressIPFlows(t *testing.T) {
	in := input()
	in.EgressIPs = []netip.Addr{netip.MustParseAddr("192.168.100.150")}
	f := Flows(in)
	want := []string{
		"table=0,priority=110,in_port=2,ip,nw_src=192.168.100.150,actions=ct(commit,zone=61440,nat(src=192.168.100.150),exec(set_field:1->ct_mark),table=4)",
		"table=0,priority=110,in_port=5,ip,nw_src=192.168.100.150,actions=ct(commit,zone=61440,nat(src=192.168.100.150),exec(set_field:4->ct_mark),table=4)",
		"table=0,priority=50,in_port=1,ip,nw_dst=192.168.100.150,actions=ct(zone=61440,nat,table=1)",
	}
	if d := cmp.Diff(want, pick(f, "192.168.100.150", "ip,")); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	arp := pick(f, "arp_tpa=192.168.100.150")
	if len(arp) != 1 || !strings.Contains(arp[0], "priority=450,in_port=1,arp,arp_op=1") || !strings.Contains(arp[0], "set_field:02:00:c0:a8:64:0b->arp_sha") {
		t.Errorf("ARP responder for the egress IP: %v", arp)
	}
	if got := pick(Flows(input()), "192.168.100.150"); len(got) != 0 {
		t.Errorf("flows for an egress IP the node does not hold: %v", got)
	}
	// IPv6: the solicitation is answered in two tables (OVS sets the
	// target link-layer address only in a flow matching an
	// advertisement), and duplicate address detection is not.
	in.EgressIPs = []netip.Addr{netip.MustParseAddr("fd00:192:168:100::150")}
	nd := pick(Flows(in), "nd_target=fd00:192:168:100::150")
	if len(nd) != 3 {
		t.Fatalf("neighbour flows for the IPv6 egress IP: %v", nd)
	}
	for _, want := range []string{
		"table=0,priority=451,in_port=1,icmp6,icmp_type=135,ipv6_src=::,nd_target=fd00:192:168:100::150,actions=drop",
		"table=0,priority=450,in_port=1,icmp6,icmp_type=135,nd_target=fd00:192:168:100::150,actions=",
		"set_field:136->icmpv6_type,set_field:0->icmpv6_code,set_field:0x60000000->nd_reserved,set_field:2->nd_options_type,resubmit(,5)",
		"table=5,priority=450,in_port=1,icmp6,icmp_type=136,nd_target=fd00:192:168:100::150,actions=set_field:02:00:c0:a8:64:0b->nd_tll,IN_PORT",
	} {
		if !strings.Contains(strings.Join(nd, "\n"), want) {
			t.Errorf("neighbour flows lack %q:\n%s", want, strings.Join(nd, "\n"))
		}
	}
}
