package nodeinfo

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubnetsRoundTrip(t *testing.T) {
	s := Subnets{"default": {netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:10:244:2::/64")}, "a.b": {netip.MustParsePrefix("10.128.0.0/24")}}
	v := s.String()
	if v != `{"a.b":["10.128.0.0/24"],"default":["10.244.1.0/24","fd00:10:244:2::/64"]}` {
		t.Fatalf("String() = %s", v)
	}
	back, err := ParseSubnets(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{`, `{"x":["nope"]}`, `{"x":"10.0.0.0/24"}`} {
		if _, err := ParseSubnets(bad); err == nil {
			t.Errorf("ParseSubnets(%s) accepted", bad)
		}
	}
	if got, _ := ParseSubnets(""); len(got) != 0 {
		t.Errorf("empty annotation parsed as %v", got)
	}
	if _, ok, err := NodeID(map[string]string{NodeIDAnnotation: "x"}); ok || err == nil {
		t.Error("bad node-id accepted")
	}
	if id, ok, _ := NodeID(map[string]string{NodeIDAnnotation: "7"}); !ok || id != 7 {
		t.Errorf("NodeID = %d, %v", id, ok)
	}
}

func TestParseGatewayNextHops(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{name: "one", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["192.168.100.1"]}`,
			want: []string{"192.168.100.1"}},
		{name: "two in order, the first stays first", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["192.168.100.2","192.168.100.1"]}`,
			want: []string{"192.168.100.2", "192.168.100.1"}},
		{name: "a duplicate is one next hop", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["192.168.100.1","192.168.100.2","192.168.100.1"]}`,
			want: []string{"192.168.100.1", "192.168.100.2"}},
		{name: "dual stack", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24","fd00::11/64"],"next-hops":["fd00::1","192.168.100.1"]}`,
			want: []string{"fd00::1", "192.168.100.1"}},
		{name: "none", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"]}`},
		{name: "off the subnet", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["192.168.100.1","10.0.0.1"]}`,
			err: "next-hops: 10.0.0.1 is on none of the subnets"},
		{name: "the node itself", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["192.168.100.11"]}`,
			err: "next-hops: 192.168.100.11 is on none of the subnets"},
		{name: "not an address", in: `{"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["router"]}`,
			err: `next-hops: "router" is not an address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGateway(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range g.NextHops {
				got = append(got, h.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("next hops (-want +got):\n%s", diff)
			}
		})
	}
}
