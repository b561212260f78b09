package ovsdb_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestCacheHiddenWhileReconnecting: from losing its server until the new
// monitor has filled the cache, a reconnecting client shows no cache (its
// callers treat it as not connected), never the fresh, empty one libovsdb
// makes on connecting again, from which a controller would take the
// database for empty. The cache is watched in a tight loop across several
// restarts of the server, and the client reconnects after each.
func TestCacheHiddenWhileReconnecting(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own monitor %v", own), func(t *testing.T) { testCacheHiddenWhileReconnecting(t, own) })
	}
}

func testCacheHiddenWhileReconnecting(t *testing.T, own bool) {
	z := ovntest.StartZone(t, "reconnect")
	z.MustNBCtl("ls-add", "sw")
	var reconnects atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Reconnect: true, OwnMonitor: own,
		OnReconnect: func() { reconnects.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	var seen, empty, hidden atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			tc := c.Cache()
			switch {
			case tc == nil:
				hidden.Add(1)
			case tc.Table(nbdb.LogicalSwitchTable).Len() == 0:
				empty.Add(1)
			default:
				seen.Add(1)
			}
		}
	}()
	for i := 0; i < 3; i++ {
		before := reconnects.Load()
		if err := z.RestartDB("nb", false); err != nil {
			t.Fatal(err)
		}
		if err := proc.WaitFor(20*time.Second, 10*time.Millisecond, func() (bool, error) {
			return reconnects.Load() > before, nil
		}); err != nil {
			t.Fatalf("the client did not reconnect: %v", err)
		}
	}
	close(stop)
	<-done
	if empty.Load() > 0 {
		t.Errorf("the cache was seen empty %d times while reconnecting (hidden %d times, full %d)", empty.Load(), hidden.Load(), seen.Load())
	}
	if hidden.Load() == 0 || seen.Load() == 0 {
		t.Errorf("the loop saw the cache hidden %d times and full %d times: it watched nothing", hidden.Load(), seen.Load())
	}
}
