package zone_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// BenchmarkZoneNetworkAdd: what one more network costs a zone that already
// renders N networks in a cluster of M nodes (a real API server and
// cluster-manager, node-a's zone controller running): the UDN is created,
// cluster-manager gives every Node its slice (M Node updates, which the
// zone watches), and the zone renders it. It reports how many reconciles
// the zone controller ran from the creation until its queue stayed empty
// for half a second, and how long that took.
//
//	go test -run XXX -bench BenchmarkZoneNetworkAdd -benchtime 1x ./internal/zone/
//	OVN_UDN_BENCH_SIZE=200x20 (the default)
func BenchmarkZoneNetworkAdd(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{200, 20}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchNetworkAdd(b, size.networks, size.nodes)
			}
		})
	}
}

func benchNetworkAdd(b *testing.B, networks, nodes int) {
	c := benchCluster(b, nodes)
	for range networks {
		benchUDN(b, c, "netadd")
	}
	allocated(b, c, networks+1)
	r := c.StartZoneController("node-a")
	settled(b, r, "zone-node-a")

	base := reconcileTotal(b, "zone-node-a")
	start := time.Now()
	benchUDN(b, c, "netadd")
	allocated(b, c, networks+2)
	var quiet time.Time
	last := -1.0
	if err := proc.WaitFor(5*time.Minute, 20*time.Millisecond, func() (bool, error) {
		done := reconcileTotal(b, "zone-node-a") - base
		if depth := metricValue(b, "workqueue_depth", "name", "zone-node-a"); depth > 0 || done != last {
			last, quiet = done, time.Now()
			return false, nil
		}
		return time.Since(quiet) >= 500*time.Millisecond, nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(last, "reconciles")
	b.ReportMetric(quiet.Sub(start).Seconds(), "s/settled")
}
