package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// BenchmarkZoneControllerNodeAdd measures a node joining through the whole
// zone controller, where BenchmarkNodeAdd measures the Northbound side
// alone: a real API server and cluster-manager, N Layer3 UDNs on M nodes,
// node-a's zone rendering every network, converged (as
// BenchmarkZoneControllerRestart); then a node joins, twice: first with
// every network planned whole on each change (as before remote parts,
// zone.PlanWholeOnly), then a second node with the networks' parts for it
// alone. Each is timed from the Node's creation until zone A's Northbound
// holds the node's rows of every network (its transit switch port and
// routes: 3 rows each), the cluster-manager giving the node its slices
// included (s-allocated: until its annotation has them all), then until
// the controller's queue stays empty: the transactions, and the CPU of
// the test process (zone controller and cluster-manager). northd is paused.
//
//	go test -run XXX -bench BenchmarkZoneControllerNodeAdd -benchtime 1x -timeout 30m ./internal/zone/
//	OVN_UDN_BENCH_SIZE=1000x20 (the default)
//	OVN_UDN_BENCH_CTRLNODEADD_PROFILE_WHOLE=file, OVN_UDN_BENCH_CTRLNODEADD_PROFILE_PARTS=file: CPU profiles
func BenchmarkZoneControllerNodeAdd(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{1000, 20}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchControllerNodeAdd(b, size.networks, size.nodes)
			}
		})
	}
}

func benchControllerNodeAdd(b *testing.B, networks, nodes int) {
	ctx := context.Background()
	c := benchCluster(b, nodes)
	for range networks {
		benchUDN(b, c, "ctrlnodeadd")
	}
	allocated(b, c, networks+1)
	r := c.StartZoneController("node-a")
	settled(b, r, "zone-node-a")
	defer pauseNorthd(b, c.Zones["node-a"])()

	inserted := func() float64 {
		return testutil.ToFloat64(metrics.Rows.WithLabelValues("node-a", "net", "insert")) +
			testutil.ToFloat64(metrics.Rows.WithLabelValues("node-a", "net-part", "insert"))
	}
	times := map[string]float64{}
	for i, mode := range []string{"whole", "parts"} {
		zone.PlanWholeOnly(r, mode == "whole")
		name := "join-" + mode
		rows0, txns0, cpu0 := inserted(), r.Transactions(), cpuSeconds("self")
		stop := profile(b, "OVN_UDN_BENCH_CTRLNODEADD_PROFILE_"+strings.ToUpper(mode))
		start := time.Now()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: clustertest.NodeInfo(name, nodes+i).Annotations()}}
		if err := c.Admin.Create(ctx, n); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Admin.Delete(context.Background(), n) })
		var sliced time.Duration
		cmtest.Eventually(b, 10*time.Minute, func() error {
			if sliced == 0 {
				if info, err := c.TryNodeInfo(name); err == nil && len(info.Subnets) >= networks+1 {
					sliced = time.Since(start)
				}
			}
			if got, want := inserted()-rows0, float64(3*(networks+1)); got < want {
				return fmt.Errorf("%v of %v rows of node %s inserted", got, want, name)
			}
			return nil
		})
		took := time.Since(start)
		stop()
		ports, err := ovsdb.List(ctx, r.NB, func(p *nbdb.LogicalSwitchPort) bool {
			return p.Type == "remote" && p.ExternalIDs[topology.NodeKey] == name
		})
		if err != nil || len(ports) != networks+1 {
			b.Fatalf("node %s has %d remote ports in zone A (%v), want %d", name, len(ports), err, networks+1)
		}
		quietAfter(b, "zone-node-a", 0, 0)
		times[mode] = took.Seconds()
		b.ReportMetric(took.Seconds(), "s/node-add-"+mode)
		b.ReportMetric(sliced.Seconds(), "s-allocated-"+mode)
		b.ReportMetric(float64(r.Transactions()-txns0), "txns-"+mode)
		b.ReportMetric(cpuSeconds("self")-cpu0, "s-cpu-process-"+mode)
	}
	b.ReportMetric(times["parts"]/times["whole"], "ratio-parts")
}
