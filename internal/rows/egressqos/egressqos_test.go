package egressqos

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

func TestRender(t *testing.T) {
	l3 := networkOf("blue.net", netconf.TopologyLayer3)
	l2 := networkOf("red.net", netconf.TopologyLayer2)
	for _, tc := range []struct {
		name   string
		in     Input
		want   []string
		onto   string
		member int
	}{
		{
			name: "rule order is priority order; a CIDR limits the family",
			in: Input{Namespace: "blue", Network: l3, Node: "node1", Rules: []Rule{
				{DSCP: 46, CIDR: netip.MustParsePrefix("198.51.100.7/24"), Sources: addrs("10.128.1.4", "10.128.1.3", "fd00::3")},
				{DSCP: 10, Sources: addrs("10.128.1.3", "fd00::3")},
			}},
			want: []string{
				"to-lport 1000 dscp=46 ip4.src == {10.128.1.3, 10.128.1.4} && ip4.dst == 198.51.100.0/24",
				"to-lport 999 dscp=10 (ip4.src == {10.128.1.3}) || (ip6.src == {fd00::3})",
			},
			onto: "blue.net_node1", member: 2,
		},
		{
			name: "a rule with no pod of its family in the zone: nothing; a Layer2 network's one switch",
			in: Input{Namespace: "red", Network: l2, Node: "node1", Rules: []Rule{
				{DSCP: 46, CIDR: netip.MustParsePrefix("2001:db8::/32"), Sources: addrs("10.0.0.5")},
				{DSCP: 8, Sources: addrs("10.0.0.5")},
			}},
			want: []string{"to-lport 999 dscp=8 ip4.src == {10.0.0.5}"},
			onto: "red.net_ovn_layer2_switch", member: 1,
		},
		{
			name: "no pod: no row, no contribution",
			in:   Input{Namespace: "red", Network: l2, Node: "node1", Rules: []Rule{{DSCP: 8}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Render(tc.in)
			var got []string
			for _, m := range res.Rows {
				q := m.(*nbdb.QoS)
				got = append(got, fmt.Sprintf("%s %d dscp=%d %s", q.Direction, q.Priority, q.Action[nbdb.QoSActionDSCP], q.Match))
				if q.ExternalIDs[NamespaceKey] != tc.in.Namespace {
					t.Errorf("row %s: namespace %q", q.UUID, q.ExternalIDs[NamespaceKey])
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("QoS rows (-want +got):\n%s", d)
			}
			var want []ovsdbsync.Contribution
			if tc.onto != "" {
				var ids []string
				for _, m := range res.Rows {
					ids = append(ids, m.(*nbdb.QoS).UUID)
				}
				want = []ovsdbsync.Contribution{{Target: &nbdb.LogicalSwitch{Name: tc.onto}, Column: "qos_rules", Members: ids}}
				if len(ids) != tc.member {
					t.Errorf("%d rows, want %d", len(ids), tc.member)
				}
			}
			if d := cmp.Diff(want, res.Contributions); d != "" {
				t.Errorf("contributions (-want +got):\n%s", d)
			}
		})
	}
}

func networkOf(name, topo string) topology.Network {
	return topology.Network{Name: name, Topology: topo}
}
