package ovntest_test

import (
	"context"
	"testing"

	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestZoneSwitchDelivery proves the zone harness end to end: rows written with
// libovsdb reach northd, and ovn-trace verdicts are parsed.
func TestZoneSwitchDelivery(t *testing.T) {
	z := ovntest.StartZone(t, "zone-a")
	nb := z.NBClient()
	ctx := context.Background()

	p1 := &nbdb.LogicalSwitchPort{UUID: "p1", Name: "p1", Addresses: []string{"0a:58:0a:00:00:01 10.0.0.1"}}
	p2 := &nbdb.LogicalSwitchPort{UUID: "p2", Name: "p2", Addresses: []string{"0a:58:0a:00:00:02 10.0.0.2"}}
	sw := &nbdb.LogicalSwitch{UUID: "sw", Name: "sw", Ports: []string{"p1", "p2"}}
	var ops []ovsdb.Operation
	for _, m := range []any{p1, p2, sw} {
		op, err := nb.Create(m)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op...)
	}
	res, err := nb.Transact(ctx, ops...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		t.Fatal(err)
	}
	z.MustSync()

	pkt := ovntrace.Packet{InPort: "p1", EthSrc: "0a:58:0a:00:00:01", EthDst: "0a:58:0a:00:00:02", IPSrc: "10.0.0.1", IPDst: "10.0.0.2", Proto: "tcp", DstPort: 80}
	ovntest.ExpectDelivered(t, z.Trace("sw", pkt), "p2")

	unknown := pkt
	unknown.EthDst, unknown.IPDst = "0a:58:0a:00:00:09", "10.0.0.9"
	ovntest.ExpectDropped(t, z.Trace("sw", unknown))
}

// TestTwoZones proves several zones can run in one test, independent of each other.
func TestTwoZones(t *testing.T) {
	a := ovntest.StartZone(t, "zone-a")
	b := ovntest.StartZone(t, "zone-b")
	if a.NB == b.NB || a.SB == b.SB {
		t.Fatalf("zones share a database: %s/%s and %s/%s", a.NB, a.SB, b.NB, b.SB)
	}
	a.MustNBCtl("ls-add", "only-in-a")
	a.MustSync()
	if got := b.MustNBCtl("ls-list"); got != "" {
		t.Fatalf("zone-b sees zone-a's switch: %q", got)
	}
	if got := a.MustNBCtl("get", "NB_Global", ".", "name"); got != `"zone-a"` && got != "zone-a" {
		t.Fatalf("NB_Global name = %s, want zone-a", got)
	}
}

// TestNoProbesOnZoneConnections pins what keeps a busy zone connected: the
// databases' own inactivity probe is off (Connection inactivity_probe=0),
// and so is northd's probe of both databases (NB_Global
// options:northd_probe_interval=0). With northd's default 5 s probe on
// TCP, northd translating a large change for longer than that drops both
// connections as dead, loses its lock and starts over (in the zone
// benchmark at 4000 networks × 20 nodes, the controller's zone was not
// translated within 10 minutes with the probe on, and was within about 6
// with it off; ovnrun.serveDB).
func TestNoProbesOnZoneConnections(t *testing.T) {
	z := ovntest.StartZone(t, "probes")
	if got := z.MustNBCtl("get", "NB_Global", ".", "options:northd_probe_interval"); got != `"0"` {
		t.Errorf("NB_Global options:northd_probe_interval = %s, want \"0\"", got)
	}
	for db, ctl := range map[string]func(...string) string{"nb": z.MustNBCtl, "sb": z.MustSBCtl} {
		if got := ctl("get", "Connection", ".", "inactivity_probe"); got != "0" {
			t.Errorf("%s Connection inactivity_probe = %s, want 0", db, got)
		}
	}
}
