package allocator

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestSubnetPool(t *testing.T) {
	tests := []struct {
		cidr  string
		host  int
		want  []string // first allocations, in order
		count int      // slices in the pool (0: don't exhaust)
	}{
		{"10.244.0.0/16", 24, []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}, 256},
		{"10.0.0.0/24", 28, []string{"10.0.0.0/28", "10.0.0.16/28"}, 16},
		{"fd00:10:244::/48", 64, []string{"fd00:10:244::/64", "fd00:10:244:1::/64"}, 65536},
		{"2001:db8::/32", 64, []string{"2001:db8::/64", "2001:db8:0:1::/64"}, 0},
		{"2001:db8::/60", 64, []string{"2001:db8::/64", "2001:db8:0:1::/64"}, 16},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.cidr, tc.host), func(t *testing.T) {
			p, err := NewSubnetPool(netip.MustParsePrefix(tc.cidr), tc.host)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.want {
				got, err := p.Allocate(fmt.Sprint("node", i))
				if err != nil || got.String() != want {
					t.Fatalf("allocation %d = %s, %v; want %s", i, got, err, want)
				}
			}
			if tc.count == 0 {
				return
			}
			for i := len(tc.want); i < tc.count; i++ {
				if _, err := p.Allocate(fmt.Sprint("node", i)); err != nil {
					t.Fatalf("allocation %d of %d failed: %v", i, tc.count, err)
				}
			}
			if _, err := p.Allocate("one-too-many"); !errors.Is(err, ErrExhausted) {
				t.Fatalf("allocation past %d slices: err = %v, want ErrExhausted", tc.count, err)
			}
		})
	}
}

func TestSubnetPoolReserve(t *testing.T) {
	p, _ := NewSubnetPool(netip.MustParsePrefix("10.244.0.0/16"), 24)
	if err := p.Reserve("a", netip.MustParsePrefix("10.244.7.0/24")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"10.245.0.0/24", "10.244.7.0/25", "10.244.7.128/24"} {
		if err := p.Reserve("b", netip.MustParsePrefix(bad)); err == nil {
			t.Errorf("Reserve(%s) accepted", bad)
		}
	}
	if err := p.Reserve("b", netip.MustParsePrefix("10.244.7.0/24")); err == nil {
		t.Error("Reserve of a held slice accepted")
	}
	got, _ := p.Get("a")
	if got.String() != "10.244.7.0/24" {
		t.Errorf("Get(a) = %s", got)
	}
	next, _ := p.Allocate("c")
	if next.String() == "10.244.7.0/24" {
		t.Error("allocated a reserved slice")
	}
}

func TestDefaultHostPrefix(t *testing.T) {
	for cidr, want := range map[string]int{
		"10.0.0.0/8": 24, "10.128.0.0/16": 24, "10.0.0.0/23": 24, "10.0.0.0/24": 28, "10.0.0.0/25": 29, "10.0.0.0/27": 29, "10.0.0.0/28": 29,
		"fd00::/48": 64, "fd00::/63": 64, "fd00::/64": 72, "fd00::/120": 126, "fd00::/125": 126,
	} {
		if got := DefaultHostPrefix(netip.MustParsePrefix(cidr)); got != want {
			t.Errorf("DefaultHostPrefix(%s) = %d, want %d", cidr, got, want)
		}
	}
}

// TestSubnetPoolRefusesSlicesWithoutRoom: a node's slice must hold a gateway,
// a management port and a pod, so a pool of smaller slices (or of a subnet
// that cannot be split into big enough ones) is refused rather than handing
// out slices the zone controllers cannot use.
func TestSubnetPoolRefusesSlicesWithoutRoom(t *testing.T) {
	for _, tc := range []struct {
		cidr    string
		host    int
		wantErr string
	}{
		{"10.128.0.0/16", 29, ""},
		{"fd00::/64", 126, ""},
		{"10.128.0.0/16", 30, "host prefix /30 of 10.128.0.0/16 leaves no room in a node's slice for a gateway, a management port and a pod (at most /29)"},
		{"10.128.0.0/16", 31, "leaves no room"},
		{"10.128.0.0/16", 32, "leaves no room"},
		{"fd00::/64", 127, "host prefix /127 of fd00::/64 leaves no room in a node's slice for a gateway, a management port and a pod (at most /126)"},
		{"10.0.0.0/30", DefaultHostPrefix(netip.MustParsePrefix("10.0.0.0/30")), "does not split"},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.cidr, tc.host), func(t *testing.T) {
			_, err := NewSubnetPool(netip.MustParsePrefix(tc.cidr), tc.host)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if (tc.wantErr == "") != (got == "") || !strings.Contains(got, tc.wantErr) {
				t.Fatalf("err = %q, want %q", got, tc.wantErr)
			}
		})
	}
}

func TestCheckNodeSlice(t *testing.T) {
	for s, ok := range map[string]bool{"10.0.0.0/24": true, "10.0.0.8/29": true, "10.0.0.4/30": false, "10.0.0.2/31": false,
		"10.0.0.1/32": false, "fd00::/64": true, "fd00::4/126": true, "fd00::2/127": false, "fd00::1/128": false} {
		if err := CheckNodeSlice(netip.MustParsePrefix(s)); (err == nil) != ok {
			t.Errorf("CheckNodeSlice(%s) = %v, want ok=%v", s, err, ok)
		}
	}
}

// TestDerivations checks the derived addresses against seed 000's worked
// examples (and the conventions the seed states in words).
func TestDerivations(t *testing.T) {
	v4 := netip.MustParsePrefix("100.88.0.0/16")
	v6 := netip.MustParsePrefix("fd97::/64")
	for _, tc := range []struct {
		transit      netip.Prefix
		nodeID       int
		router, gwID string
	}{
		// "node1: 100.88.0.4/31 ... GR and transit_router peers ports should use 100.88.0.4 and 100.88.0.5"
		{v4, 2, "100.88.0.4/31", "100.88.0.5/31"},
		// "node3: 100.88.0.6/31" and "node2: 100.88.0.8/31"
		{v4, 3, "100.88.0.6/31", "100.88.0.7/31"},
		{v4, 4, "100.88.0.8/31", "100.88.0.9/31"},
		// "node1 gateway and ovn_cluster routers peer ports should use fd97::8 and fd97::9"
		{v6, 4, "fd97::8/127", "fd97::9/127"},
		{v6, 2, "fd97::4/127", "fd97::5/127"},
	} {
		r, g, err := TransitPeers(tc.transit, tc.nodeID)
		if err != nil || r.String() != tc.router || g.String() != tc.gwID {
			t.Errorf("TransitPeers(%s, %d) = %s, %s, %v; want %s, %s", tc.transit, tc.nodeID, r, g, err, tc.router, tc.gwID)
		}
	}
	if _, _, err := TransitPeers(netip.MustParsePrefix("100.88.0.0/24"), 200); err == nil {
		t.Error("TransitPeers beyond the subnet accepted")
	}
	if got, _ := TransitSwitchIP(v4, 2); got.String() != "100.88.0.2/16" {
		t.Errorf("TransitSwitchIP = %s", got)
	}
	// "rtotr-GR-node1 ... 100.65.0.2/16" for node ID 2.
	if got, _ := GatewayJoinIP(netip.MustParsePrefix("100.65.0.0/16"), 2); got.String() != "100.65.0.2/16" {
		t.Errorf("GatewayJoinIP = %s", got)
	}
	if got, _ := GatewayJoinIP(netip.MustParsePrefix("fd99::/64"), 4); got.String() != "fd99::4/64" {
		t.Errorf("GatewayJoinIP v6 = %s", got)
	}
	if got := RouterJoinIP(netip.MustParsePrefix("100.65.0.0/16")); got.String() != "100.65.0.1/16" {
		t.Errorf("RouterJoinIP = %s", got)
	}
	gw, mp, err := MasqueradeIPs(netip.MustParsePrefix("169.254.0.0/17"), 5, 16)
	if err != nil || gw.String() != "169.254.0.26" || mp.String() != "169.254.0.27" {
		t.Errorf("MasqueradeIPs = %s, %s, %v", gw, mp, err)
	}
	gw6, _, _ := MasqueradeIPs(netip.MustParsePrefix("fd69::/112"), 5, 16)
	if gw6.String() != "fd69::1a" {
		t.Errorf("MasqueradeIPs v6 = %s", gw6)
	}
	// "default gw 203.203.0.1 (0a:58:CB:CB:00:01)" and "fe80::858:cbff:fecb:1".
	mac := MAC(netip.MustParseAddr("203.203.0.1"))
	if mac.String() != "0a:58:cb:cb:00:01" {
		t.Errorf("MAC = %s", mac)
	}
	if lla := LinkLocal(mac); lla.String() != "fe80::858:cbff:fecb:1" {
		t.Errorf("LinkLocal = %s", lla)
	}
	if got := MAC(netip.MustParseAddr("2001:db8::a:b")).String(); got != "0a:58:00:0a:00:0b" {
		t.Errorf("MAC v6 = %s", got)
	}
}
