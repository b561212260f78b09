package chassis

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// TestDesiredChassis: every other zone's node with a chassis ID and an
// encapsulation address is registered, sorted by chassis; the zone's own
// node and half-annotated nodes are not.
func TestDesiredChassis(t *testing.T) {
	ip := netip.MustParseAddr
	nodes := []nodeinfo.Info{
		{Name: "node-a", Zone: "node-a", ChassisID: "ch-a", EncapIP: ip("10.0.0.1")},
		{Name: "node-c", Zone: "node-c", ChassisID: "ch-c", EncapIP: ip("10.0.0.3")},
		{Name: "node-b", Zone: "node-b", ChassisID: "ch-b", EncapIP: ip("10.0.0.2")},
		{Name: "node-d", Zone: "node-d", EncapIP: ip("10.0.0.4")},
		{Name: "node-e", Zone: "node-e", ChassisID: "ch-e"},
	}
	got := desiredChassis(nodes, "node-a")
	want := []remoteChassis{
		{name: "ch-b", hostname: "node-b", encapIP: "10.0.0.2"},
		{name: "ch-c", hostname: "node-c", encapIP: "10.0.0.3"},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(remoteChassis{})); d != "" {
		t.Errorf("desiredChassis (-want +got):\n%s", d)
	}
}
