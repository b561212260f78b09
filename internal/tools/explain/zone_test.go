package explain

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestPolicyOn: northd makes one logical flow of the same policy on
// several routers, hinting at one router's row; when that row is gone (its
// network left the zone), explain finds the router's own policy by its
// priority and match (a real Northbound).
func TestPolicyOn(t *testing.T) {
	z := ovntest.StartNB(t, "explain")
	z.MustNBCtl("lr-add", "blue_ovn_cluster_router")
	z.MustNBCtl("lr-policy-add", "blue_ovn_cluster_router", "1200", "ip4.dst == 10.244.0.0/16", "drop")
	z.MustNBCtl("lr-policy-add", "blue_ovn_cluster_router", "1004", "ip4.dst == 10.244.0.0/16", "allow")
	z.MustNBCtl("lr-add", "red_ovn_cluster_router")
	z.MustNBCtl("lr-policy-add", "red_ovn_cluster_router", "1200", "ip4.dst == 10.244.0.0/16", "drop")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nb, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Tables: nbTables})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	zr := &zoneReader{node: "node1", nb: nb}
	r, err := zr.policyOn(ctx, "blue_ovn_cluster_router", 1200, "ip4.dst == 10.244.0.0/16")
	if err != nil || r == nil {
		t.Fatalf("policyOn: %v, %v; want blue's drop policy", r, err)
	}
	want := z.MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Router_Policy", "priority=1200", "action=drop")
	if r.Priority != 1200 || r.Action != "drop" || !slices.Contains(strings.Fields(want), r.UUID) {
		t.Errorf("policyOn found %+v, want one of the drop policies %q", r, want)
	}
	red := z.MustNBCtl("--bare", "--columns=policies", "list", "Logical_Router", "red_ovn_cluster_router")
	if red == r.UUID {
		t.Errorf("policyOn found red's policy for blue's router")
	}
	if r, err := zr.policyOn(ctx, "blue_ovn_cluster_router", 1200, "ip4.dst == 10.0.0.0/8"); err != nil || r != nil {
		t.Errorf("policyOn with another match: %+v, %v; want nothing", r, err)
	}
	if r, err := zr.policyOn(ctx, "green_ovn_cluster_router", 1200, "ip4.dst == 10.244.0.0/16"); err != nil || r != nil {
		t.Errorf("policyOn on a router that is not there: %+v, %v; want nothing", r, err)
	}
}
