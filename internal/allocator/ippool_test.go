package allocator

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
)

func TestIPPool(t *testing.T) {
	p, err := NewIPPool(netip.MustParsePrefix("10.0.0.0/28"), []netip.Prefix{netip.MustParsePrefix("10.0.0.4/30")},
		netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	// .0 network, .1/.2 reserved, .4-.7 excluded, .15 broadcast: 3, 8..14 usable = 8 addresses.
	var got []string
	for i := 0; i < 8; i++ {
		if !p.HasRoom() {
			t.Fatalf("HasRoom false after %d of 8 allocations", i)
		}
		a, err := p.Allocate(fmt.Sprint("pod", i))
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		got = append(got, a.String())
	}
	want := "[10.0.0.3 10.0.0.8 10.0.0.9 10.0.0.10 10.0.0.11 10.0.0.12 10.0.0.13 10.0.0.14]"
	if fmt.Sprint(got) != want {
		t.Fatalf("allocations %v, want %s", got, want)
	}
	if p.HasRoom() {
		t.Fatal("HasRoom true with every address held")
	}
	if _, err := p.Allocate("one-more"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("ninth allocation: %v, want ErrExhausted", err)
	}
	p.Release("pod3")
	if !p.HasRoom() {
		t.Fatal("HasRoom false after a release")
	}
	if a, _ := p.Allocate("again"); a.String() != "10.0.0.10" {
		t.Fatalf("after release got %s, want the freed 10.0.0.10 (the only free one)", a)
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.5", "10.0.0.15", "10.0.0.0", "10.0.1.3", "10.0.0.3"} {
		if err := p.Reserve("x", netip.MustParseAddr(bad)); err == nil {
			t.Errorf("Reserve(%s) accepted", bad)
		}
	}
	if err := p.Reserve("pod0", netip.MustParseAddr("10.0.0.3")); err != nil {
		t.Errorf("re-reserving a holder's own address: %v", err)
	}
}

func TestIPPoolLargeAndIPv6(t *testing.T) {
	// A /8 with a /9 excluded costs nothing up front.
	p, err := NewIPPool(netip.MustParsePrefix("10.0.0.0/8"), []netip.Prefix{netip.MustParsePrefix("10.0.0.0/9")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reserve("x", netip.MustParseAddr("10.200.0.1")); err != nil {
		t.Fatal(err)
	}
	v6, _ := NewIPPool(netip.MustParsePrefix("fd00::/64"), nil, netip.MustParseAddr("fd00::1"))
	a, _ := v6.Allocate("a")
	if a.String() != "fd00::2" {
		t.Fatalf("first IPv6 allocation %s, want fd00::2", a)
	}
	if err := v6.Reserve("b", netip.MustParseAddr("fd00::ffff")); err != nil {
		t.Fatal(err)
	}
	if got, _ := v6.Get("b"); got.String() != "fd00::ffff" {
		t.Fatalf("Get(b) = %s", got)
	}
}

func TestIPPoolSkipsLargeExclusions(t *testing.T) {
	p, _ := NewIPPool(netip.MustParsePrefix("10.0.0.0/8"), []netip.Prefix{netip.MustParsePrefix("10.0.0.0/9")})
	a, err := p.Allocate("first")
	if err != nil || a.String() != "10.128.0.0" {
		t.Fatalf("first allocation past a /9 exclusion: %s, %v; want 10.128.0.0", a, err)
	}
}

// BenchmarkIPPoolAllocate allocates every address of a /16 (65 533 of them).
func BenchmarkIPPoolAllocate(b *testing.B) {
	names := make([]string, 65533)
	for i := range names {
		names[i] = fmt.Sprint("ns/pod-", i)
	}
	for b.Loop() {
		p, _ := NewIPPool(netip.MustParsePrefix("10.0.0.0/16"), nil, netip.MustParseAddr("10.0.0.1"))
		for _, n := range names {
			if _, err := p.Allocate(n); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(names)), "ns/address")
}

// TestNewNetworkPool: a primary network's pool keeps its gateway and
// management addresses; a secondary one's does not.
func TestNewNetworkPool(t *testing.T) {
	for _, tc := range []struct {
		primary bool
		want    string
	}{
		{true, "[10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6]"},
		{false, "[10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6]"},
	} {
		p, err := NewNetworkPool(netip.MustParsePrefix("10.0.0.0/29"), nil, tc.primary)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i := 0; p.HasRoom(); i++ {
			a, err := p.Allocate(fmt.Sprint("pod", i))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, a.String())
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("primary=%v: %v, want %s", tc.primary, got, tc.want)
		}
	}
}
