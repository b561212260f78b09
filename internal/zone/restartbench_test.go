package zone_test

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// BenchmarkZoneRestart measures a zone controller's restart (issue 19, part
// 5): a zone converged with N Layer3 networks × M nodes (as
// BenchmarkZoneConverge's controller path), then a new controller's
// connections (a new libovsdb cache, filled by the server's initial monitor
// reply) and its first full pass over every network, which must write
// nothing; then a second pass on the warm cache (a resync with nothing
// changed), which must write nothing either. It fails if either writes.
// northd is paused meanwhile, standing in for the idle northd of a steady
// state (it would otherwise still be translating the rows just written).
//
//	go test -run XXX -bench BenchmarkZoneRestart -benchtime 1x ./internal/zone/
//	OVN_UDN_BENCH_SIZE=1000x20,1000x100 (the default)
func BenchmarkZoneRestart(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{1000, 20}, benchSize{1000, 100}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchRestart(b, size.networks, size.nodes)
			}
		})
	}
}

func benchRestart(b *testing.B, networks, nodes int) {
	cfg := config.Default()
	nets, infos := benchInputs(networks, nodes)
	z := ovntest.StartZone(b, "restart")
	s, c, cw := benchSyncer(b, z)
	rows := syncAll(b, s, nets, infos, cfg)
	c.Close()
	cw.Close()
	// A controller restarts in a steady state, with northd done with the
	// rows it has (at 1000 × 100 it takes more than 10 minutes here):
	// northd is paused for the restart and the resync, so it does not share
	// the 2 cores and the NB server with them. Nothing is written, so it
	// has nothing to catch up on.
	defer pauseNorthd(b, z)()
	serverCPU0 := cpuSeconds(strconv.Itoa(z.Processes()["nb"].PID()))

	// The restart: connect (the cache downloads every row), then plan every
	// network against it.
	start := time.Now()
	selfCPU0 := cpuSeconds("self")
	stopProfile := profile(b, "OVN_UDN_BENCH_CONNECT_PROFILE")
	s2, _, _ := benchSyncer(b, z)
	stopProfile()
	connected := time.Since(start)
	b.ReportMetric(cpuSeconds("self")-selfCPU0, "s-cpu-controller-connect")
	b.ReportMetric(cpuSeconds(strconv.Itoa(z.Processes()["nb"].PID()))-serverCPU0, "s-cpu-ovsdb-server-connect")
	if inserted := syncAll(b, s2, nets, infos, cfg); inserted != 0 {
		b.Fatalf("the restarted controller inserted %d rows", inserted)
	}
	restart := time.Since(start)
	if t := s2.Transactions(); t != 0 {
		b.Fatalf("the restarted controller wrote %d transactions, want none", t)
	}

	// A resync with nothing changed, on the warm cache.
	start = time.Now()
	syncAll(b, s2, nets, infos, cfg)
	resync := time.Since(start)
	if t := s2.Transactions(); t != 0 {
		b.Fatalf("a resync with nothing changed wrote %d transactions, want none", t)
	}
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(connected.Seconds(), "s/connect")
	b.ReportMetric(restart.Seconds(), "s/restart")
	b.ReportMetric(resync.Seconds(), "s/resync")
	b.ReportMetric(float64(s2.Transactions()), "txns-after-restart")
	b.ReportMetric(rssMiB("self", "VmHWM"), "MiB-controller-peak")
}

// profile starts a CPU profile into the file named by the environment
// variable env, if set, and returns what stops it.
func profile(b *testing.B, env string) func() {
	name := os.Getenv(env)
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
