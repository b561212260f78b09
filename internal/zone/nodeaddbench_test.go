package zone_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// BenchmarkNodeAdd: a zone converged with N networks rendered on M nodes
// (every network everywhere, as BenchmarkZoneConverge), then one more node
// joins and every network is planned again, as the zone controller does
// when a Node appears: the time until every network has the new node's
// parts (its port on each transit switch, its routes), the transactions
// and the rows written. northd is paused for it, standing in for the idle
// northd of a steady state (BenchmarkZoneRestart). Then a second node
// joins and every network plans only its part for that node
// (topology.RenderRemote, zone.SyncRemote), as the zone controller does
// for a remote node: the same metrics with the suffix -parts, and
// ratio-parts, the parts' time over the whole re-plans'.
//
//	go test -run XXX -bench BenchmarkNodeAdd -benchtime 1x ./internal/zone/
//	OVN_UDN_BENCH_SIZE=1000x20,4000x20 (the default)
//	OVN_UDN_BENCH_NODEADD_PROFILE=cpu.out (a CPU profile of the node add;
//	OVN_UDN_BENCH_NODEADD_PROFILE_PARTS for the parts')
func BenchmarkNodeAdd(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{1000, 20}, benchSize{4000, 20}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchNodeAdd(b, size.networks, size.nodes)
			}
		})
	}
}

func benchNodeAdd(b *testing.B, networks, nodes int) {
	ctx := context.Background()
	cfg := config.Default()
	nets, infos := benchInputs(networks, nodes+2)
	z := ovntest.StartZone(b, "nodeadd")
	s, _, _ := benchSyncer(b, z)
	syncAll(b, s, nets, infos[:nodes], cfg)
	defer pauseNorthd(b, z)()
	nb := strconv.Itoa(z.Processes()["nb"].PID())

	// measure times one node's add and reports its metrics with suffix.
	measure := func(suffix string, add func() int) float64 {
		serverCPU0, selfCPU0, txns0 := cpuSeconds(nb), cpuSeconds("self"), s.Transactions()
		stop := profile(b, "OVN_UDN_BENCH_NODEADD_PROFILE"+strings.ToUpper(strings.ReplaceAll(suffix, "-", "_")))
		start := time.Now()
		inserted := add()
		took := time.Since(start)
		stop()
		b.ReportMetric(took.Seconds(), "s/node-add"+suffix)
		b.ReportMetric(float64(s.Transactions()-txns0), "txns"+suffix)
		b.ReportMetric(float64(inserted), "rows-inserted"+suffix)
		b.ReportMetric(cpuSeconds("self")-selfCPU0, "s-cpu-controller"+suffix)
		b.ReportMetric(cpuSeconds(nb)-serverCPU0, "s-cpu-ovsdb-server"+suffix)
		b.ReportMetric(took.Seconds()*1000/float64(networks), "ms-per-network"+suffix)
		return took.Seconds()
	}
	// Node M+1: every network rendered and planned whole.
	whole := measure("", func() int { return syncAll(b, s, nets, infos[:nodes+1], cfg) })
	// Node M+2: every network's part for the node alone.
	parts := measure("-parts", func() int {
		joined := infos[:nodes+2]
		name := joined[nodes+1].Name
		return eachNetwork(b, nets, func(n topology.Network) (int, error) {
			part, err := topology.RenderRemote(topology.Input{Network: n, Nodes: joined, Zone: "node0", Cluster: cfg}, []string{name})
			if err != nil {
				return 0, err
			}
			p, err := zone.SyncRemote(ctx, s, n.Name, []string{name}, part)
			if err != nil {
				return 0, err
			}
			return p.Inserted, nil
		})
	})
	b.ReportMetric(parts/whole, "ratio-parts")
}
