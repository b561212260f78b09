package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// TestThirdPartyEditsPutBack: rows of the zone that someone else changes in
// the Northbound (an option removed, a route deleted) are put back by the
// periodic resync, though no event of the controller's inputs came; and a
// periodic resync with nothing changed writes nothing.
func TestThirdPartyEditsPutBack(t *testing.T) {
	const period = time.Second
	c := clustertest.StartWith(t, env, config.Default(), func(o *zone.Options) { o.RenderEverywhere, o.ResyncPeriod = true, period }, "node-a")
	z := c.Zones["node-a"]
	network, udn := layer3UDN(t, c.Admin, "10.139.0.0/16/24")
	// The zone tests share one API server; a network left behind is one
	// more for every later test's zones (and their Events) to handle.
	t.Cleanup(func() { _ = c.Admin.Delete(context.Background(), udn) })
	gr := topology.Network{Name: network}.GatewayRouter("node-a")

	// intact reports whether the router has its forced-SNAT option and its
	// default route.
	intact := func() error {
		opt, err := z.NBCtl("--if-exists", "get", "Logical_Router", gr, "options:lb_force_snat_ip")
		if err != nil {
			return err
		}
		if strings.TrimSpace(opt) != `"router_ip"` && strings.TrimSpace(opt) != "router_ip" {
			return fmt.Errorf("%s options:lb_force_snat_ip = %q, want router_ip", gr, opt)
		}
		routes, err := z.NBCtl("lr-route-list", gr)
		if err != nil {
			return err
		}
		if !strings.Contains(routes, "0.0.0.0/0") {
			return fmt.Errorf("%s has no default route:\n%s", gr, routes)
		}
		return nil
	}
	cmtest.Eventually(t, time.Minute, intact)

	z.MustNBCtl("remove", "Logical_Router", gr, "options", "lb_force_snat_ip")
	z.MustNBCtl("lr-route-del", gr, "0.0.0.0/0")
	if intact() == nil {
		t.Fatal("the edits did not take")
	}
	start := time.Now()
	cmtest.Eventually(t, 30*time.Second, intact)
	t.Logf("put back after %v (resync period %v)", time.Since(start).Round(10*time.Millisecond), period)

	// Two periodic resyncs in a row with no transaction between them. The
	// shared API server holds earlier tests' networks, which the zone may
	// still be writing: a window that met a write is tried again, for at
	// most a minute.
	r := c.Controller("node-a")
	err := proc.WaitFor(time.Minute, 10*time.Millisecond, func() (bool, error) {
		before, from, planned := r.Transactions(), zone.Resyncs(r), zone.WholePlans(r)
		// Resyncs from+1 and from+2 run whole within the window (a
		// resync of a few networks takes milliseconds, the period a
		// second).
		if err := proc.WaitFor(10*time.Second, 50*time.Millisecond, func() (bool, error) {
			return zone.Resyncs(r) >= from+3, nil
		}); err != nil {
			return false, err
		}
		if n := r.Transactions() - before; n != 0 {
			return false, fmt.Errorf("%d transactions over two resyncs", n)
		}
		// Not vacuous: the resyncs planned this test's network (and any
		// other) whole, and found nothing to write.
		if n := zone.WholePlans(r) - planned; n < 2 {
			return false, fmt.Errorf("two resyncs planned %d networks whole, want at least 2", n)
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("a periodic resync with nothing changed: %v", err)
	}
}
