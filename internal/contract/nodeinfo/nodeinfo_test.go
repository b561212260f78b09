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
	// A network listed with no slice is one the node lacks (cluster-manager
	// could not give one); a network not listed is not that.
	lacking, err := ParseSubnets(`{"a.b":["10.128.0.0/24"],"c.d":[]}`)
	if err != nil || !lacking.Lacks("c.d") || lacking.Lacks("a.b") || lacking.Lacks("e.f") || len(lacking["c.d"]) != 0 {
		t.Errorf("lacking networks: %v (%v)", lacking, err)
	}
	if v := lacking.String(); v != `{"a.b":["10.128.0.0/24"],"c.d":[]}` {
		t.Errorf("String() of a lacking network = %s", v)
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
			g := parseGateway(t, tc.in, tc.err)
			if g == nil {
				return
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

func TestParseGatewayUplinks(t *testing.T) {
	const first = `"mac-address":"02:00:00:00:00:01","ip-addresses":["192.168.100.11/24"],"next-hops":["192.168.100.1"]`
	type up struct {
		Physnet string
		IPs     []string
		Hops    []string
	}
	for _, tc := range []struct {
		name, in string
		want     []up
		err      string
	}{
		{name: "original form: one uplink on physnet", in: `{` + first + `}`,
			want: []up{{"physnet", []string{"192.168.100.11/24"}, []string{"192.168.100.1"}}}},
		{name: "a second bridge", in: `{` + first + `,"uplinks":[{"mac-address":"02:00:00:00:01:01","ip-addresses":["192.168.102.11/24"],"next-hops":["192.168.102.1","192.168.102.1"],"physical-network":"physnet2"}]}`,
			want: []up{{"physnet", []string{"192.168.100.11/24"}, []string{"192.168.100.1"}}, {"physnet2", []string{"192.168.102.11/24"}, []string{"192.168.102.1"}}}},
		{name: "overlapping subnets", in: `{` + first + `,"uplinks":[{"mac-address":"02:00:00:00:01:01","ip-addresses":["192.168.100.200/25"],"next-hops":["192.168.100.129"],"physical-network":"physnet2"}]}`,
			err: `uplinks on "physnet" and "physnet2" have overlapping subnets 192.168.100.0/24 and 192.168.100.128/25`},
		{name: "overlap between further uplinks", in: `{` + first + `,"uplinks":[{"mac-address":"02:00:00:00:01:01","ip-addresses":["10.1.0.2/16"],"physical-network":"a"},{"mac-address":"02:00:00:00:01:02","ip-addresses":["10.1.2.2/24"],"physical-network":"b"}]}`,
			err: `uplinks on "a" and "b" have overlapping subnets 10.1.0.0/16 and 10.1.2.0/24`},
		{name: "same physical network twice", in: `{` + first + `,"uplinks":[{"mac-address":"02:00:00:00:01:01","ip-addresses":["192.168.102.11/24"],"physical-network":"physnet"}]}`,
			err: `two uplinks on physical network "physnet"`},
		{name: "no physical network", in: `{` + first + `,"uplinks":[{"mac-address":"02:00:00:00:01:01","ip-addresses":["192.168.102.11/24"]}]}`,
			err: `uplinks[0]: physical-network is required`},
		{name: "next hop on another uplink's subnet", in: `{` + first + `,"uplinks":[{"mac-address":"02:00:00:00:01:01","ip-addresses":["192.168.102.11/24"],"next-hops":["192.168.100.1"],"physical-network":"physnet2"}]}`,
			err: `uplinks[0]: next-hops: 192.168.100.1 is on none of the subnets`},
		{name: "bad MAC", in: `{` + first + `,"uplinks":[{"mac-address":"nope","ip-addresses":["192.168.102.11/24"],"physical-network":"physnet2"}]}`,
			err: `uplinks[0]: mac-address "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := parseGateway(t, tc.in, tc.err)
			if g == nil {
				return
			}
			var got []up
			for _, u := range g.Uplinks() {
				x := up{Physnet: u.PhysicalNetwork}
				for _, p := range u.IPs {
					x.IPs = append(x.IPs, p.String())
				}
				for _, h := range u.NextHops {
					x.Hops = append(x.Hops, h.String())
				}
				got = append(got, x)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("uplinks (-want +got):\n%s", diff)
			}
			// What the node agent publishes parses back to the same.
			back, err := ParseGateway(Info{Gateway: g}.Annotations()[GatewayAnnotation])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(g, back, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// parseGateway parses in and checks the error against wantErr (a part of
// it; "" for none): nil when it failed as wanted.
func parseGateway(t *testing.T, in, wantErr string) *ParsedGateway {
	t.Helper()
	g, err := ParseGateway(in)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestLayer2TopologyVersion: absent and 2.0 are the transit router, 1.0 the
// old topology (and Annotations says it back), anything else reads as 2.0
// and does not make the node malformed.
func TestLayer2TopologyVersion(t *testing.T) {
	for v, want := range map[string]bool{"": false, Layer2TopologyV2: false, Layer2TopologyV1: true, "3.0": false} {
		a := Example("node1", 0).Annotations()
		a[NodeIDAnnotation] = "2"
		if v != "" {
			a[Layer2TopologyVersionAnnotation] = v
		}
		in, err := Parse("node1", a)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if in.Layer2V1 != want {
			t.Errorf("%q: Layer2V1 = %v, want %v", v, in.Layer2V1, want)
		}
		if got := in.Annotations()[Layer2TopologyVersionAnnotation]; want != (got == Layer2TopologyV1) {
			t.Errorf("%q: Annotations says %q", v, got)
		}
	}
}
