package zone_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/ovntest"
)

// BenchmarkNodeAdd: a zone converged with N networks rendered on M nodes
// (every network everywhere, as BenchmarkZoneConverge), then one more node
// joins and every network is planned again, as the zone controller does
// when a Node appears: the time until every network has the new node's
// parts (its port on each transit switch, its routes), the transactions
// and the rows written. northd is paused for it, standing in for the idle
// northd of a steady state (BenchmarkZoneRestart).
//
//	go test -run XXX -bench BenchmarkNodeAdd -benchtime 1x ./internal/zone/
//	OVN_UDN_BENCH_SIZE=1000x20,4000x20 (the default)
//	OVN_UDN_BENCH_NODEADD_PROFILE=cpu.out (a CPU profile of the node add)
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
	cfg := config.Default()
	nets, infos := benchInputs(networks, nodes+1)
	z := ovntest.StartZone(b, "nodeadd")
	s, _, _ := benchSyncer(b, z)
	syncAll(b, s, nets, infos[:nodes], cfg)
	defer pauseNorthd(b, z)()
	serverCPU0 := cpuSeconds(strconv.Itoa(z.Processes()["nb"].PID()))
	selfCPU0 := cpuSeconds("self")
	txns0 := s.Transactions()
	stop := profile(b, "OVN_UDN_BENCH_NODEADD_PROFILE")
	start := time.Now()
	inserted := syncAll(b, s, nets, infos, cfg)
	took := time.Since(start)
	stop()
	b.ReportMetric(took.Seconds(), "s/node-add")
	b.ReportMetric(float64(s.Transactions()-txns0), "txns")
	b.ReportMetric(float64(inserted), "rows-inserted")
	b.ReportMetric(cpuSeconds("self")-selfCPU0, "s-cpu-controller")
	b.ReportMetric(cpuSeconds(strconv.Itoa(z.Processes()["nb"].PID()))-serverCPU0, "s-cpu-ovsdb-server")
	b.ReportMetric(took.Seconds()*1000/float64(networks), "ms-per-network")
}
