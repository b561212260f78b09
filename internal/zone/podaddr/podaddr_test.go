package podaddr

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func pfx(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func addr(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

// TestAssign: a pod gets the next free address of each family, skipping
// the slice's gateway (.1) and management (.2) addresses and the
// exclusions; keeps the one it wants when free; a taken wanted address is
// replaced (and said) unless the pod requested it, and a failure leaves
// nothing held.
func TestAssign(t *testing.T) {
	var m IPAM
	m.Lock()
	defer m.Unlock()
	pools, err := m.Pools("blue", pfx("10.128.1.0/24", "fd00:1::/64"), pfx("10.128.1.3/32"))
	if err != nil {
		t.Fatal(err)
	}
	type out struct {
		Addrs      []netip.Prefix
		Gateways   []netip.Addr
		Reassigned []string
		Err        bool
	}
	for _, tc := range []struct {
		name      string
		pod       string
		want      []netip.Addr
		requested bool
		out       out
	}{
		{"first pod: next free of each family", "ns/a", nil, false,
			out{Addrs: pfx("10.128.1.4/24", "fd00:1::3/64"), Gateways: addr("10.128.1.1", "fd00:1::1")}},
		{"wanted and free: kept", "ns/b", addr("10.128.1.50"), false,
			out{Addrs: pfx("10.128.1.50/24", "fd00:1::4/64"), Gateways: addr("10.128.1.1", "fd00:1::1")}},
		{"wanted but taken: replaced, and said", "ns/c", addr("10.128.1.50"), false,
			out{Addrs: pfx("10.128.1.5/24", "fd00:1::5/64"), Gateways: addr("10.128.1.1", "fd00:1::1"),
				Reassigned: []string{"10.128.1.50: 10.128.1.50 is already in use (by ns/b)"}}},
		{"requested but taken: refused", "ns/d", addr("fd00:1::3"), true, out{Err: true}},
	} {
		addrs, gws, re, err := Assign(pools, tc.pod, tc.want, tc.requested)
		got := out{Addrs: addrs, Gateways: gws, Reassigned: re, Err: err != nil}
		if d := cmp.Diff(tc.out, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
	// The refused pod holds nothing: its IPv4 address (allocated before the
	// IPv6 one failed) is free again.
	if errs := Recover(pools, "ns/e", pfx("10.128.1.6/24")); len(errs) != 0 {
		t.Errorf("the refused pod still holds 10.128.1.6: %v", errs)
	}
	// Released, a pod's addresses are given again; recovered, they are not.
	m.Release("ns/a")
	if errs := Recover(pools, "ns/f", pfx("10.128.1.4/24")); len(errs) != 0 {
		t.Errorf("recovering a released address: %v", errs)
	}
	if errs := Recover(pools, "ns/g", pfx("10.128.1.4/24")); len(errs) != 1 {
		t.Errorf("recovering an address another pod holds: %v, want one error", errs)
	}
	// New slices make new pools; the same slices keep them.
	same, _ := m.Pools("blue", pfx("10.128.1.0/24", "fd00:1::/64"), nil)
	other, _ := m.Pools("blue", pfx("10.128.2.0/24"), nil)
	if same[0] != pools[0] || len(other) != 1 || other[0] == pools[0] {
		t.Errorf("pools: same slices kept %v, new slices remade %v", same[0] == pools[0], len(other) == 1 && other[0] != pools[0])
	}
}
