package explain

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
)

func segment(t *testing.T, file, node, dp, inport string) Segment {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	hops := ovntrace.ParseHops(string(b))
	seg := Segment{Node: node, Datapath: dp, Packet: ovntrace.Packet{InPort: inport}, Hops: hops}
	for _, h := range hops {
		var notes []string
		for _, s := range h.Stages {
			if n := stageNote(s, nil); n != "" {
				notes = append(notes, n)
			}
		}
		seg.Notes = append(seg.Notes, notes)
	}
	return seg
}

// TestWrite: a path across two zones, ingress and egress pipelines of a
// datapath on one line, the route under its router; and a drop.
func TestWrite(t *testing.T) {
	from := Endpoint{Pod: "l3-blue/a", Node: "node1", Network: "l3-blue.tenant", Addr: netip.MustParseAddr("10.128.2.3")}
	to := Endpoint{Pod: "l3-blue/c", Node: "node2", Network: "l3-blue.tenant", Addr: netip.MustParseAddr("10.128.0.3")}
	r := &Report{From: from, To: to, Protocol: "tcp", Port: 8080, Outcome: Delivered,
		Delivered: []string{"l3-blue.tenant_l3-blue_c (pod l3-blue/c on node node2)"},
		Segments: []Segment{
			segment(t, "remote.txt", "node1", "l3-blue.tenant_node1", "l3-blue.tenant_l3-blue_a"),
			segment(t, "fromremote.txt", "node2", "l3-blue.tenant_transit_switch", "tstor-l3-blue.tenant_node1"),
		}}
	var b strings.Builder
	if err := r.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	want := `from l3-blue/a (10.128.2.3 on network l3-blue.tenant, node node1)
to   l3-blue/c (10.128.0.3 on network l3-blue.tenant, node node2), tcp port 8080

zone of node1, entering l3-blue.tenant_node1 at l3-blue.tenant_l3-blue_a:
  l3-blue.tenant_node1               l3-blue.tenant_l3-blue_a -> stor-l3-blue.tenant_node1
  l3-blue.tenant_ovn_cluster_router  rtos-l3-blue.tenant_node1 -> rtots-l3-blue.tenant_node1
                                         route ip4.dst == 10.128.0.0/24 out rtots-l3-blue.tenant_node1
  l3-blue.tenant_transit_switch      tstor-l3-blue.tenant_node1 -> tstor-l3-blue.tenant_node2 (remote: on another node)

zone of node2, entering l3-blue.tenant_transit_switch at tstor-l3-blue.tenant_node1:
  l3-blue.tenant_transit_switch      tstor-l3-blue.tenant_node1 -> tstor-l3-blue.tenant_node2
  l3-blue.tenant_ovn_cluster_router  rtots-l3-blue.tenant_node2 -> rtos-l3-blue.tenant_node2
                                         route ip4.dst == 10.128.0.0/24 out rtos-l3-blue.tenant_node2
  l3-blue.tenant_node2               stor-l3-blue.tenant_node2 -> l3-blue.tenant_l3-blue_c

DELIVERED to l3-blue.tenant_l3-blue_c (pod l3-blue/c on node node2)
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}

	drop := &Report{From: from, To: Endpoint{Addr: netip.MustParseAddr("10.132.0.4")}, Protocol: "icmp", Outcome: Dropped, Reason: "by X",
		Segments: []Segment{segment(t, "acldrop.txt", "node2", "shop.tenant_node2", "shop.tenant_shop_b")}}
	b.Reset()
	if err := drop.Write(&b, false); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"to   10.132.0.4, icmp\n",
		"  shop.tenant_node2  shop.tenant_shop_b -> shop.tenant_shop_echo-67cfc5d9b5-5gt59: dropped at 6. ls_out_acl_eval\n",
		"DROPPED\nwhy: by X\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("drop report lacks %q:\n%s", line, b.String())
		}
	}
}
