package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	ovsdbclient "github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// BenchmarkZoneConverge converges one zone (an empty, real ovsdb-server) with
// N primary Layer3 networks across M nodes, the way the zone controller does
// (render each network, one owner-scoped sync per network, 4 workers), and
// compares it with floors that write the same rows with no controller logic:
//
//   - the raw floor (rawfloor_test.go): the same rows, from the same
//     renderer, encoded beforehand and sent as OVSDB JSON-RPC "transact"
//     requests, one per network, pipelined on one connection, to a fresh NB
//     with nothing else connected, again to a fresh zone with northd
//     running beside its NB, and a third time with northd and a monitor of
//     the controller's tables on the floor's connection (timed until the
//     monitor has shown every row, as the controller's converge is);
//   - the libovsdb bulk floor: the same rows, planned beforehand, as one
//     libovsdb transaction from a write-only connection (northd running);
//   - the libovsdb bulk floor with a cache: the same bulk write while another
//     connection caches it.
//
// Each floor's NB must hold as many rows per table as the controller's, or
// the benchmark fails. Run with
//
//	go test -run XXX -bench BenchmarkZoneConverge -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_SIZE=NxM[,NxM...] chooses the sizes; OVN_UDN_BENCH_FLOORS=0
// skips the floors, OVN_UDN_BENCH_FLOORS=raw runs only the raw floors;
// OVN_UDN_BENCH_HEAPPROFILE=FILE writes the converged controller's live
// heap there (and reports it as MiB-heap-live).
func BenchmarkZoneConverge(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{500, 100}, benchSize{2000, 20}, benchSize{4000, 20}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchConverge(b, size.networks, size.nodes)
			}
		})
	}
}

// benchSize is a benchmark's networks × nodes.
type benchSize struct{ networks, nodes int }

// benchSizes returns the sizes OVN_UDN_BENCH_SIZE names (NxM[,NxM...], e.g.
// 100x50 or 500x100,4000x100), or def.
func benchSizes(b *testing.B, def ...benchSize) []benchSize {
	v := os.Getenv("OVN_UDN_BENCH_SIZE")
	if v == "" {
		return def
	}
	var sizes []benchSize
	for _, one := range strings.Split(v, ",") {
		var n, m int
		if _, err := fmt.Sscanf(one, "%dx%d", &n, &m); err != nil {
			b.Fatalf("OVN_UDN_BENCH_SIZE=%q: want NxM[,NxM...]", v)
		}
		sizes = append(sizes, benchSize{n, m})
	}
	return sizes
}

func benchInputs(networks, nodes int) ([]topology.Network, []nodeinfo.Info) {
	cfg := config.Default()
	var nets []topology.Network
	for i := 0; i < networks; i++ {
		c := &netconf.NetConf{Name: fmt.Sprintf("ns%d.net", i), Type: netconf.CNIType, Topology: netconf.TopologyLayer3,
			Role: netconf.RolePrimary, Subnets: "10.128.0.0/14/24"}
		n, err := topology.FromNetConf(c, i+1, nil, cfg)
		if err != nil {
			panic(err)
		}
		nets = append(nets, n)
	}
	var infos []nodeinfo.Info
	for j := 0; j < nodes; j++ {
		name := fmt.Sprintf("node%d", j)
		subnets := nodeinfo.Subnets{"default": {netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 244+j/256, j%256))}}
		for _, n := range nets {
			subnets[n.Name] = []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 128+j/256, j%256))}
		}
		ip := netip.MustParsePrefix(fmt.Sprintf("172.18.%d.%d/16", j/200, 10+j%200))
		infos = append(infos, nodeinfo.Info{Name: name, ID: j + 2, ChassisID: "chassis-" + name, Zone: name, Subnets: subnets,
			PrimaryIPs: []netip.Prefix{ip}, EncapIP: ip.Addr(),
			Gateway: &nodeinfo.ParsedGateway{Uplink: nodeinfo.Uplink{MAC: "02:42:ac:12:00:02", IPs: []netip.Prefix{ip},
				NextHops: []netip.Addr{netip.MustParseAddr("172.18.0.1")}, PhysicalNetwork: "physnet"}}})
	}
	return nets, infos
}

// benchWorkers is how many networks the benchmarks sync at once
// (OVN_UDN_BENCH_WORKERS, default 4, as the zone controller).
func benchWorkers() int {
	if v, err := strconv.Atoi(os.Getenv("OVN_UDN_BENCH_WORKERS")); err == nil {
		return v
	}
	return 4
}

// syncAll renders and syncs every network, each as its own owner (one
// transaction when anything changed), benchWorkers at a time, as the zone
// controller does; it returns the rows inserted.
func syncAll(b *testing.B, s *ovsdbsync.Syncer, nets []topology.Network, infos []nodeinfo.Info, cfg config.Cluster) int {
	ctx := context.Background()
	return eachNetwork(b, nets, func(n topology.Network) (int, error) {
		res, err := topology.Render(topology.Input{Network: n, Nodes: infos, Zone: "node0", Cluster: cfg})
		if err != nil {
			return 0, err
		}
		p, err := s.Sync(ctx, feature.NetworkKey(n.Name).String(), res.Rows)
		if err != nil {
			return 0, err
		}
		return p.Inserted, nil
	})
}

// eachNetwork calls f for every network, benchWorkers at a time, and
// returns the sum of what it returned.
func eachNetwork(b *testing.B, nets []topology.Network, f func(topology.Network) (int, error)) int {
	work := make(chan topology.Network)
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for w := 0; w < benchWorkers(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				k, err := f(n)
				if err != nil {
					b.Error(err)
					continue
				}
				mu.Lock()
				sum += k
				mu.Unlock()
			}
		}()
	}
	for _, n := range nets {
		work <- n
	}
	close(work)
	wg.Wait()
	return sum
}

// benchSyncer is a zone controller's Syncer on z: a monitoring connection
// (its cache) and a write-only one, as the controller has.
func benchSyncer(b testing.TB, z *ovntest.Zone) (s *ovsdbsync.Syncer, monitor, writer client.Client) {
	monitor = connectBench(b, z, false)
	s, err := zone.NewSyncer(monitor)
	if err != nil {
		b.Fatal(err)
	}
	writer = connectBench(b, z, true)
	s.WithWriter(writer)
	return s, monitor, writer
}

// unmonitored are the columns the benchmark's monitor leaves out, as the
// zone's does (OVN_UDN_BENCH_UNMONITORED=none: every column).
func unmonitored() []string {
	if os.Getenv("OVN_UDN_BENCH_UNMONITORED") == "none" {
		return nil
	}
	return ovsdbsync.OthersColumns()
}

func connectBench(b testing.TB, z *ovntest.Zone, writeOnly bool) client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ovsdbclient.ConnectNB(ctx, ovsdbclient.ClientOptions{Endpoint: z.NB, Indexes: ovsdbsync.Indexes(zone.NBTableNames...),
		Tables: zone.NBTables, NoMonitor: writeOnly, OwnMonitor: os.Getenv("OVN_UDN_BENCH_MONITOR") != "libovsdb", Views: zone.NBTableNames,
		Unmonitored: unmonitored(),
		OwnTransact: os.Getenv("OVN_UDN_BENCH_TRANSACT") != "libovsdb"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

func benchConverge(b *testing.B, networks, nodes int) {
	cfg := config.Default()
	nets, infos := benchInputs(networks, nodes)

	// The controller: render and sync network by network, 4 workers
	// (OVN_UDN_BENCH_WORKERS).
	z := ovntest.StartZone(b, "bench")
	s, c, cw := benchSyncer(b, z)
	start := time.Now()
	// The CPU of every process on the machine's cores during the converge:
	// the controller, its NB server, and northd with the SB server
	// translating the same rows beside them.
	pid := func(role string) string { return strconv.Itoa(z.Processes()[role].PID()) }
	serverCPU0, northdCPU0, sbCPU0 := cpuSeconds(pid("nb")), cpuSeconds(pid("northd")), cpuSeconds(pid("sb"))
	selfCPU0 := cpuSeconds("self")
	rows := syncAll(b, s, nets, infos, cfg)
	controller := time.Since(start)
	b.ReportMetric(cpuSeconds(pid("nb"))-serverCPU0, "s-cpu-ovsdb-server")
	b.ReportMetric(cpuSeconds(pid("northd"))-northdCPU0, "s-cpu-northd")
	b.ReportMetric(cpuSeconds(pid("sb"))-sbCPU0, "s-cpu-sb-server")
	b.ReportMetric(cpuSeconds("self")-selfCPU0, "s-cpu-controller")
	ctrlRSS := rssMiB("self", "VmHWM")
	if path := os.Getenv("OVN_UDN_BENCH_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	serverRSS := rssMiB(strconv.Itoa(z.Processes()["nb"].PID()), "VmRSS")
	txns := s.Transactions()
	// Until northd has translated it all: the zone converged, not only
	// its NB (the raw floor with northd is timed the same way). It takes
	// minutes at 4000 × 20, so only with OVN_UDN_BENCH_TRANSLATED=1.
	untilTranslated := os.Getenv("OVN_UDN_BENCH_TRANSLATED") == "1"
	var translated time.Duration
	if untilTranslated {
		if err := z.Sync(translatedWithin); err != nil {
			b.Fatalf("the controller's zone: %v", err)
		}
		translated = time.Since(start)
		b.ReportMetric(translated.Seconds(), "s/converge-translated")
		b.ReportMetric(cpuSeconds(pid("northd"))-northdCPU0, "s-cpu-northd-translated")
	}

	b.ReportMetric(controller.Seconds(), "s/converge")
	b.ReportMetric(float64(txns), "txns")
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(ctrlRSS, "MiB-controller-peak")
	b.ReportMetric(serverRSS, "MiB-ovsdb-server")
	floors := os.Getenv("OVN_UDN_BENCH_FLOORS")
	if floors == "0" {
		return
	}

	// What the controller wrote, per table, for the floors to match. Then
	// its zone goes, so that its northd (still translating the NB) and its
	// processes take no CPU or memory from the floors.
	want := nbRows(b, z)
	if totalRows(want) != rows {
		b.Fatalf("the controller's NB holds %d rows, it inserted %d", totalRows(want), rows)
	}
	c.Close()
	cw.Close()
	z.Stop()

	// The raw floor, without and with northd beside the NB. The rows are
	// rendered and encoded before the clock starts (s-raw-render-encode, one
	// goroutine, is what that took; the floor does not pay it).
	encStart := time.Now()
	raw, rawRows := rawTransactions(b, nets, infos, cfg)
	b.ReportMetric(time.Since(encStart).Seconds(), "s-raw-render-encode")
	if rawRows != rows {
		b.Fatalf("the raw floor has %d rows to insert, the controller inserted %d", rawRows, rows)
	}
	// The third floor also monitors what it writes, as the controller
	// does (and any controller that knows what it wrote): the NB server
	// sends every row back once more.
	rawMonitor, err := rawMonitorParams()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		northd  bool
		monitor []byte
		name    string
	}{{false, nil, "raw-floor"}, {true, nil, "raw-floor-northd"}, {true, rawMonitor, "raw-floor-northd-monitor"}} {
		var zr *ovntest.Zone
		if f.northd {
			zr = ovntest.StartZone(b, f.name)
		} else {
			zr = ovntest.StartNB(b, f.name)
		}
		floorStart := time.Now()
		northd0 := 0.0
		if f.northd {
			northd0 = cpuSeconds(strconv.Itoa(zr.Processes()["northd"].PID()))
		}
		took, cpu, clientCPU := rawFloor(b, zr, raw, f.monitor)
		if f.northd && f.monitor == nil && untilTranslated {
			if err := zr.Sync(translatedWithin); err != nil {
				b.Fatalf("%s: %v", f.name, err)
			}
			all := time.Since(floorStart)
			b.ReportMetric(all.Seconds(), "s/"+f.name+"-translated")
			b.ReportMetric(cpuSeconds(strconv.Itoa(zr.Processes()["northd"].PID()))-northd0, "s-cpu-northd-"+f.name+"-translated")
			b.ReportMetric(translated.Seconds()/all.Seconds(), "ratio-translated")
		}
		sameRows(b, f.name, zr, want)
		zr.Stop()
		b.ReportMetric(took.Seconds(), "s/"+f.name)
		b.ReportMetric(cpu, "s-cpu-ovsdb-server-"+f.name)
		b.ReportMetric(clientCPU, "s-cpu-client-"+f.name)
		b.ReportMetric(controller.Seconds()/took.Seconds(), "ratio-to-"+f.name)
	}
	raw = nil // for the collector, before the libovsdb floors
	if floors == "raw" {
		return
	}

	// The libovsdb bulk floor: the same rows, planned beforehand, in one
	// transaction from a connection without a monitor (libovsdb's fastest
	// write path), northd running.
	zf := ovntest.StartZone(b, "floor")
	cf := connectBench(b, zf, false)
	sf, err := zone.NewSyncer(cf)
	if err != nil {
		b.Fatal(err)
	}
	var ops []ovsdb.Operation
	for _, n := range nets {
		res, err := topology.Render(topology.Input{Network: n, Nodes: infos, Zone: "node0", Cluster: cfg})
		if err != nil {
			b.Fatal(err)
		}
		p, err := sf.Plan(feature.NetworkKey(n.Name).String(), res.Rows)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, p.Ops...)
	}
	writer := connectBench(b, zf, true)
	cf.Close() // the floor does not pay for a monitor
	floor := bulkWrite(b, writer, ops)
	writer.Close()
	sameRows(b, "the libovsdb bulk floor", zf, want)
	zf.Stop()

	// The floor with a cache: the same bulk write while another connection
	// monitors, until its cache holds every row (what any libovsdb-based
	// controller pays to know what it wrote).
	zc := ovntest.StartZone(b, "floor-cache")
	monitor := connectBench(b, zc, false)
	writer2 := connectBench(b, zc, true)
	start = time.Now()
	if _, err := writer2.Transact(context.Background(), ops...); err != nil {
		b.Fatal(err)
	}
	if err := proc.WaitFor(10*time.Minute, time.Millisecond, func() (bool, error) { return cachedRows(monitor) >= len(ops), nil }); err != nil {
		b.Fatalf("the monitoring connection's cache never held the %d rows written: %v", len(ops), err)
	}
	floorCache := time.Since(start)
	monitor.Close()
	writer2.Close()
	sameRows(b, "the libovsdb bulk floor with a cache", zc, want)
	zc.Stop()
	b.ReportMetric(floorCache.Seconds(), "s/floor-with-cache")
	b.ReportMetric(controller.Seconds()/floorCache.Seconds(), "ratio-to-cached-floor")

	b.ReportMetric(floor.Seconds(), "s/floor")
	b.ReportMetric(controller.Seconds()/floor.Seconds(), "ratio")
}

// bulkWrite commits ops as one transaction and returns how long it took (the
// floor a controller is compared with).
func bulkWrite(b *testing.B, writer client.Client, ops []ovsdb.Operation) time.Duration {
	start := time.Now()
	res, err := writer.Transact(context.Background(), ops...)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func cachedRows(c client.Client) int {
	n := 0
	for _, t := range zone.NBTableNames {
		n += c.Cache().Table(t).Len()
	}
	return n
}

// cpuSeconds reads a process's user+system CPU time from /proc.
func cpuSeconds(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b)[strings.LastIndex(string(b), ")")+2:])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // clock ticks (USER_HZ = 100)
}

// writeHeapProfile writes the live heap, once collected, to path: what the
// converged controller holds (go tool pprof -sample_index=inuse_space).
// It also reports the live heap in MiB.
func writeHeapProfile(b *testing.B, path string) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "MiB-heap-live")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// rssMiB reads a memory figure (VmHWM, VmRSS) of a process from /proc.
func rssMiB(pid, field string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
