package zone_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// BenchmarkZoneControllerRestart measures the whole zone controller (issue
// 19, part 5), where BenchmarkZoneRestart measures its Northbound side
// alone: a real API server with N Layer3 UDNs (created through the API,
// allocated by a real cluster-manager) and M nodes, one zone (node-a's,
// rendering every network); the controller started on an empty Northbound
// until it has reconciled every key with its queue empty (converge), then
// stopped and started again (restart: manager, API caches, database
// connections and cache, a plan of every key), which must write nothing.
// northd is paused for the restart, as in BenchmarkZoneRestart.
//
//	go test -run XXX -bench BenchmarkZoneControllerRestart -benchtime 1x -timeout 30m ./internal/zone/
//	OVN_UDN_BENCH_SIZE=1000x20 (the default)
//	OVN_UDN_BENCH_RESTART_PROFILE=file: a CPU profile of the restart
func BenchmarkZoneControllerRestart(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{1000, 20}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchControllerRestart(b, size.networks, size.nodes)
			}
		})
	}
}

func benchControllerRestart(b *testing.B, networks, nodes int) {
	for name, c := range pollable {
		if c == nil {
			b.Logf("%s is not registered as expected: polling gathers every metric, which slows the controller measured", name)
		}
	}
	c := benchCluster(b, nodes)
	// The networks, through the API (tenants may reuse a subnet).
	start := time.Now()
	for range networks {
		benchUDN(b, c, "ctrlrestart")
	}
	// Every network allocated and every node given its slice of each.
	allocated(b, c, networks+1)
	b.ReportMetric(time.Since(start).Seconds(), "s-allocated")

	// Converge from an empty Northbound.
	start = time.Now()
	r := c.StartZoneController("node-a")
	keys, last := settled(b, r, "zone-node-a")
	b.ReportMetric(last.Sub(start).Seconds(), "s/converge")
	b.ReportMetric(float64(keys), "keys")
	b.ReportMetric(float64(r.Syncer.Transactions()), "txns-converge")
	c.StopZoneController("node-a")

	// The restart, northd paused (an idle northd in a steady state).
	defer pauseNorthd(b, c.Zones["node-a"])()
	start = time.Now()
	stopProfile := profile(b, "OVN_UDN_BENCH_RESTART_PROFILE")
	r = c.StartZoneController("node-a")
	_, last = settled(b, r, "zone-node-a")
	stopProfile()
	b.ReportMetric(last.Sub(start).Seconds(), "s/restart")
	if t := r.Syncer.Transactions(); t != 0 {
		b.Fatalf("the restarted zone controller wrote %d transactions, want none", t)
	}
	b.ReportMetric(rssMiB("self", "VmHWM"), "MiB-process-peak")
}

// settled waits until the zone controller named controller has reconciled
// at least every key of r once since the call and its queue has stayed
// empty for half a second, and returns the number of keys and when the
// last reconcile was seen to finish (within the 20 ms of a poll).
func settled(b *testing.B, r *zone.Reconciler, controller string) (int, time.Time) {
	b.Helper()
	base := reconcileTotal(b, controller)
	var keys []feature.Key
	cmtest.Eventually(b, time.Minute, func() error {
		var err error
		keys, err = r.Keys(context.Background())
		return err
	})
	return len(keys), quietAfter(b, controller, base, len(keys))
}

// quietAfter waits until the controller has reconciled at least min keys
// since its reconcile count was base and its queue has stayed empty for
// half a second, and returns when the last reconcile was seen to finish.
func quietAfter(b *testing.B, controller string, base float64, min int) time.Time {
	b.Helper()
	var quiet time.Time
	last := -1.0
	err := proc.WaitFor(20*time.Minute, 20*time.Millisecond, func() (bool, error) {
		done := reconcileTotal(b, controller) - base
		depth := metricValue(b, "workqueue_depth", "name", controller)
		if done < float64(min) || depth > 0 || done != last {
			last, quiet = done, time.Now()
			return false, fmt.Errorf("%v of %d keys reconciled, %v queued", done, min, depth)
		}
		return time.Since(quiet) >= 500*time.Millisecond, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return quiet
}

// reconcileTotal is controller-runtime's count of the controller's
// reconciles, whatever their result.
func reconcileTotal(b *testing.B, controller string) float64 {
	return metricValue(b, "controller_runtime_reconcile_total", "controller", controller)
}

// pollable are the two controller-runtime metrics settled reads, as
// collectors of their own: gathering the whole registry would run every
// collector of the process (the zone's and the cluster-manager's read
// their caches, ~20 ms a time at 1000 networks), competing with the
// controller being measured.
var pollable = map[string]prometheus.Collector{
	"controller_runtime_reconcile_total": registered(prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "controller_runtime_reconcile_total", Help: "Total number of reconciliations per controller",
	}, []string{"controller", "result"})),
	"workqueue_depth": registered(prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth", Help: "Current depth of workqueue by workqueue and priority",
	}, []string{"name", "controller", "priority"})),
}

// registered returns the collector controller-runtime registered with c's
// description (nil if its description changed: then the whole registry is
// gathered).
func registered(c prometheus.Collector) prometheus.Collector {
	var already prometheus.AlreadyRegisteredError
	if err := ctrlmetrics.Registry.Register(c); errors.As(err, &already) {
		return already.ExistingCollector
	} else if err == nil {
		ctrlmetrics.Registry.Unregister(c)
	}
	return nil
}

// metricValue sums the counters or gauges of family name whose label is
// value in controller-runtime's registry.
func metricValue(b *testing.B, name, label, value string) float64 {
	b.Helper()
	if c := pollable[name]; c != nil {
		ch := make(chan prometheus.Metric, 64)
		go func() { c.Collect(ch); close(ch) }()
		sum := 0.0
		for m := range ch {
			var d dto.Metric
			if err := m.Write(&d); err != nil {
				b.Fatal(err)
			}
			if hasLabel(&d, label, value) {
				sum += d.GetCounter().GetValue() + d.GetGauge().GetValue()
			}
		}
		return sum
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabel(m, label, value) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// benchCluster starts a real API server and cluster-manager with node-a's
// zone (its controller stopped) and nodes-1 more Nodes carrying what their
// agents would publish.
func benchCluster(b *testing.B, nodes int) *clustertest.Cluster {
	c := clustertest.Start(b, env, config.Default(), "node-a")
	c.StopZoneController("node-a")
	for i := 1; i < nodes; i++ {
		name := fmt.Sprintf("bench-node-%d", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: clustertest.NodeInfo(name, i).Annotations()}}
		if err := c.Admin.Create(context.Background(), n); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Admin.Delete(context.Background(), n) })
	}
	return c
}

// benchUDN creates a primary Layer3 UDN in a new namespace (tenants may
// reuse a subnet), deleted at the end.
func benchUDN(b *testing.B, c *clustertest.Cluster, prefix string) {
	ns := cmtest.Namespace(b, c.Admin, prefix, map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}}}
	if err := c.Admin.Create(context.Background(), u); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Admin.Delete(context.Background(), u) })
}

// allocated waits until every Node has a slice of want networks (the
// default one included).
func allocated(b *testing.B, c *clustertest.Cluster, want int) {
	cmtest.Eventually(b, 10*time.Minute, func() error {
		var list corev1.NodeList
		if err := c.Admin.List(context.Background(), &list); err != nil {
			return err
		}
		for _, n := range list.Items {
			subnets, err := nodeinfo.ParseSubnets(n.Annotations[nodeinfo.NodeSubnetsAnnotation])
			if err != nil {
				return err
			}
			if len(subnets) < want {
				return fmt.Errorf("node %s has %d slices, want %d", n.Name, len(subnets), want)
			}
		}
		return nil
	})
}

// processes is a zone's processes by role (ovntest.Zone, ovnrun.Zone).
type processes interface {
	Processes() map[string]*proc.Process
}

// pauseNorthd stops the zone's northd (SIGSTOP) until the returned resume:
// an idle northd of a steady state, which would otherwise still be
// translating the rows just written, on the cores the measure shares.
func pauseNorthd(b *testing.B, z processes) (resume func()) {
	northd := z.Processes()["northd"].PID()
	if err := syscall.Kill(northd, syscall.SIGSTOP); err != nil {
		b.Fatal(err)
	}
	return func() { _ = syscall.Kill(northd, syscall.SIGCONT) }
}
