package egressfirewall

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

func network(name string, subnets ...string) topology.Network {
	n := topology.Network{Name: name}
	for _, s := range subnets {
		n.Subnets = append(n.Subnets, netconf.Subnet{CIDR: netip.MustParsePrefix(s)})
	}
	return n
}

// acls returns the ACLs' "priority action match" lines, in row order.
func acls(rows []model.Model) []string {
	var out []string
	for _, m := range rows {
		if a, ok := m.(*nbdb.ACL); ok {
			out = append(out, fmt.Sprintf("%s %d %d %s %s", a.Direction, a.Tier, a.Priority, a.Action, a.Match))
		}
	}
	return out
}

func TestRender(t *testing.T) {
	blue := network("blue.net", "10.128.0.0/16", "fd00:10:128::/48")
	pg := PortGroupName("blue.net", "blue")
	for _, tc := range []struct {
		name     string
		in       Input
		want     []string
		problems []string
	}{
		{
			name: "rule order is priority order; allow and drop; ports grouped by protocol",
			in: Input{Namespace: "blue", Network: blue, Ports: []string{"p2", "p1"}, Rules: []Rule{
				{Action: Allow, CIDR: netip.MustParsePrefix("198.51.100.10/32"), Ports: []Port{{"TCP", 9000}, {"UDP", 53}, {"TCP", 80}, {"TCP", 9000}}},
				{Action: Deny, CIDR: netip.MustParsePrefix("0.0.0.0/0")},
			}},
			want: []string{
				"to-lport 2 10000 allow (ip4.dst == 198.51.100.10/32) && inport == @" + pg + " && ((tcp && (tcp.dst == 80 || tcp.dst == 9000)) || (udp && (udp.dst == 53)))",
				"to-lport 2 9999 drop (ip4.dst == 0.0.0.0/0 && ip4.dst != 10.128.0.0/16) && inport == @" + pg,
			},
		},
		{
			name: "IPv6: the network's own subnet is taken out",
			in: Input{Namespace: "blue", Network: blue, Ports: []string{"p1"}, Rules: []Rule{
				{Action: Deny, CIDR: netip.MustParsePrefix("fd00:10::/32")},
			}},
			want: []string{"to-lport 2 10000 drop (ip6.dst == fd00:10::/32 && ip6.dst != fd00:10:128::/48) && inport == @" + pg},
		},
		{
			name: "a DNS name's and a node selector's addresses; one that has none is left out",
			in: Input{Namespace: "blue", Network: blue, Ports: []string{"p1"}, Rules: []Rule{
				{Action: Allow, Resolved: true, Source: "dnsName example.com", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}},
				{Action: Allow, Resolved: true, Source: "dnsName nowhere.example"},
				{Action: Deny, Resolved: true, Source: "nodeSelector", Addresses: []netip.Addr{netip.MustParseAddr("172.18.0.10"), netip.MustParseAddr("172.18.0.11")}},
			}},
			want: []string{
				"to-lport 2 10000 allow (ip4.dst == {192.0.2.1} || ip6.dst == {2001:db8::1}) && inport == @" + pg,
				"to-lport 2 9998 drop (ip4.dst == {172.18.0.10, 172.18.0.11}) && inport == @" + pg,
			},
			problems: []string{"rule 1: dnsName nowhere.example has no address"},
		},
		{
			name: "an unresolved destination says why; the stale addresses it still has are not used",
			in: Input{Namespace: "blue", Network: blue, Ports: []string{"p1"}, Rules: []Rule{
				{Action: Allow, Resolved: true, Source: "dnsName gone.example", Unresolved: "10.0.0.53:53 answers NXDOMAIN", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.1")}},
				{Action: Deny, CIDR: netip.MustParsePrefix("192.0.2.0/24")},
			}},
			want:     []string{"to-lport 2 9999 drop (ip4.dst == 192.0.2.0/24) && inport == @" + pg},
			problems: []string{"rule 0: dnsName gone.example: 10.0.0.53:53 answers NXDOMAIN"},
		},
		{
			name: "other in-cluster subnets are left out too; resolved addresses sorted, those in the cluster dropped",
			in: Input{Namespace: "blue", Network: blue, Ports: []string{"p1"}, Exclude: []netip.Prefix{netip.MustParsePrefix("10.129.0.0/16")}, Rules: []Rule{
				{Action: Deny, CIDR: netip.MustParsePrefix("10.0.0.0/8")},
				{Action: Allow, Resolved: true, Source: "dnsName svc.example", Addresses: []netip.Addr{netip.MustParseAddr("192.0.2.9"), netip.MustParseAddr("10.129.3.4"), netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.9")}},
			}},
			want: []string{
				"to-lport 2 10000 drop (ip4.dst == 10.0.0.0/8 && ip4.dst != 10.128.0.0/16 && ip4.dst != 10.129.0.0/16) && inport == @" + pg,
				"to-lport 2 9999 allow (ip4.dst == {192.0.2.1, 192.0.2.9}) && inport == @" + pg,
			},
		},
		{
			name: "no pod of the namespace in the zone: nothing",
			in:   Input{Namespace: "blue", Network: blue, Rules: []Rule{{Action: Deny, CIDR: netip.MustParsePrefix("0.0.0.0/0")}}},
		},
		{
			name:     "too many rules: nothing, and why",
			in:       Input{Namespace: "blue", Network: blue, Ports: []string{"p1"}, Rules: make([]Rule, MaxRules+1)},
			problems: []string{"8002 rules: at most 8001 are allowed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Render(tc.in)
			if d := cmp.Diff(tc.want, acls(res.Rows)); d != "" {
				t.Errorf("ACLs (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.problems, res.Problems); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			if len(tc.want) > 0 {
				p, ok := res.Rows[0].(*nbdb.PortGroup)
				if !ok || p.Name != pg || len(p.ACLs) != len(tc.want) || !slicesSorted(p.Ports) {
					t.Errorf("port group %+v", res.Rows[0])
				}
			}
		})
	}
}

func slicesSorted(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] > s[i] {
			return false
		}
	}
	return true
}

// TestSameSubnetTenants: two tenants with one subnet get port groups and
// matches of their own, never each other's.
func TestSameSubnetTenants(t *testing.T) {
	rule := []Rule{{Action: Deny, CIDR: netip.MustParsePrefix("0.0.0.0/0")}}
	a := Render(Input{Namespace: "blue", Network: network("blue.net", "10.128.0.0/16"), Ports: []string{"p"}, Rules: rule})
	b := Render(Input{Namespace: "red", Network: network("red.net", "10.128.0.0/16"), Ports: []string{"p"}, Rules: rule})
	pa, pb := a.Rows[0].(*nbdb.PortGroup), b.Rows[0].(*nbdb.PortGroup)
	if pa.Name == pb.Name {
		t.Fatalf("one port group name for two tenants: %s", pa.Name)
	}
	if m := a.Rows[1].(*nbdb.ACL).Match; strings.Contains(m, pb.Name) {
		t.Errorf("blue's ACL names red's port group: %s", m)
	}
}
