package feature

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKeyOwners: every kind of key spells its OVSDB owner exactly as the
// zone's databases already hold it (a changed spelling would orphan every
// row at upgrade), and reads back from it.
func TestKeyOwners(t *testing.T) {
	for _, tc := range []struct {
		key   Key
		owner string
	}{
		{ChassisKey(), "chassis"},
		{NetworkKey("l3-blue.tenant"), "net:l3-blue.tenant"},
		{NetworkKey("default"), "net:default"},
		{PodKey("shop", "a"), "pod:shop/a"},
		{ServiceKey("web", "echo"), "svc:web/echo"},
		{PolicyKey("shop", "deny-all"), "np:shop/deny-all"},
		{DenyKey("shop"), "npdeny:shop"},
		{Key{Kind: KindPeer, Network: "cluster_udn_x", Name: "ns=shop|pods=app:web"}, "npas:cluster_udn_x|ns=shop|pods=app:web"},
		{ConnectKey("blue-red"), "cnc:blue-red"},
		{LinkKey("b.net", "a.net"), "primary-link:a.net|b.net"},
		{LinkKey("a.net", "b.net"), "primary-link:a.net|b.net"},
		{EgressIPKey("l2-blue.tenant"), "egressip:l2-blue.tenant"},
		{EgressIPKey("default"), "egressip:default"},
		{EgressFirewallKey("shop"), "egressfirewall:shop"},
		{EgressQoSKey("shop"), "egressqos:shop"},
		{VMKey("shop", "vm-a"), "vm:shop/vm-a"},
	} {
		if got := tc.key.String(); got != tc.owner {
			t.Errorf("%+v.String() = %q, want %q", tc.key, got, tc.owner)
		}
		back, ok := ParseKey(tc.owner)
		if !ok {
			t.Errorf("ParseKey(%q) failed", tc.owner)
			continue
		}
		if d := cmp.Diff(tc.key, back); d != "" {
			t.Errorf("ParseKey(%q) (-want +got):\n%s", tc.owner, d)
		}
	}
	for _, bad := range []string{"", "zone/chassis", "pod:noslash", "svc:/x", "npas:nobar", "other:thing", "primary-link:onlyone", "egressip:", "egressfirewall:", "egressqos:", "vm:noslash"} {
		if k, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) = %+v, want not a key", bad, k)
		}
	}
}
