package zone_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// TestViewTablesAreShared: the zone's Northbound client keeps a view of
// exactly the tables its Syncer shares (a table left out would be read by
// copying every row a pod contributes to).
func TestViewTablesAreShared(t *testing.T) {
	z := ovntest.StartNB(t, "views")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Tables: zone.NBTables, Indexes: ovsdbsync.Indexes(zone.NBTableNames...)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := zone.NewSyncer(c)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(slices.Sorted(slices.Values(zone.NBViewTables)), s.SharedTables()); d != "" {
		t.Errorf("NBViewTables are not the shared tables (-views +shared):\n%s", d)
	}
}
