package zone_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// BenchmarkRenderWhereUsed measures rendering a network only where it is
// used: N primary Layer3 networks over M nodes, network i used on K nodes
// (pods on nodes i, i+1, ... mod M; OVN_UDN_BENCH_ACTIVE=K, default 3).
// It reports
//
//   - rows per zone, mean and max over every zone, rendered where used, and
//     the rows one zone holds when every network is rendered everywhere
//     (all networks are alike: one network's rows times N), from the same
//     renderer, without a database;
//   - node0's zone converged on an empty, real ovsdb-server as the
//     controller does it: every network's activity (activity.Of over the
//     pods of its namespace), its rendering (nothing where not used) and
//     its sync, 4 workers;
//   - the first pod of a network on node0: the network's plan and sync.
//
// Run with
//
//	go test -run XXX -bench BenchmarkRenderWhereUsed -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_SIZE=NxM[,NxM...] chooses the sizes (default 4000x500).
func BenchmarkRenderWhereUsed(b *testing.B) {
	k := 3
	if v, err := strconv.Atoi(os.Getenv("OVN_UDN_BENCH_ACTIVE")); err == nil {
		k = v
	}
	for _, size := range benchSizes(b, benchSize{4000, 500}) {
		b.Run(fmt.Sprintf("%dx%d-on-%d", size.networks, size.nodes, k), func(b *testing.B) {
			for b.Loop() {
				benchWhereUsed(b, size.networks, size.nodes, k)
			}
		})
	}
}

// usedView is a cluster for activity.Of: network i's namespace "ns<i>" has
// one pod on each of k nodes.
type usedView struct {
	nodes, k int
}

func (v usedView) NetworkNamespaces(network string) ([]string, error) {
	return []string{strings.TrimSuffix(network, ".net")}, nil
}
func (v usedView) Connected(string) ([]string, error) { return nil, nil }
func (v usedView) NamespacePods(ns string) ([]corev1.Pod, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(ns, "ns"))
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, v.k)
	for j := range out {
		out[j].Spec.NodeName = fmt.Sprintf("node%d", (i+j)%v.nodes)
		out[j].Status.Phase = corev1.PodRunning
	}
	return out, nil
}
func (v usedView) NamespaceServices(string) ([]corev1.Service, error) { return nil, nil }
func (v usedView) NamespaceEgressNodes(string) ([]string, error)      { return nil, nil }

func benchWhereUsed(b *testing.B, networks, nodes, k int) {
	cfg := config.Default()
	nets, infos := benchInputs(networks, nodes)
	view := usedView{nodes: nodes, k: k}
	active := make([]activity.Nodes, len(nets))
	for i, n := range nets {
		var err error
		if active[i], err = activity.Of(view, n.Name); err != nil {
			b.Fatal(err)
		}
	}

	// Rows per zone, every zone, without a database.
	start := time.Now()
	var total, most int
	for _, node := range infos {
		rows := 0
		for i, n := range nets {
			if !active[i].Has(node.Name) {
				continue
			}
			res, err := topology.Render(topology.Input{Network: n, Nodes: infos, Zone: node.Zone, Cluster: cfg, Active: active[i]})
			if err != nil {
				b.Fatal(err)
			}
			rows += len(res.Rows)
		}
		total += rows
		most = max(most, rows)
	}
	b.ReportMetric(time.Since(start).Seconds(), "s-render-every-zone")
	b.ReportMetric(float64(total)/float64(nodes), "rows-per-zone")
	b.ReportMetric(float64(most), "rows-per-zone-max")
	one, err := topology.Render(topology.Input{Network: nets[0], Nodes: infos, Zone: "node0", Cluster: cfg})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(one.Rows)*networks), "rows-per-zone-everywhere")

	// node0's zone on a real NB: activity, rendering and sync of every
	// network, as the controller's workers do.
	z := ovntest.StartZone(b, "used")
	s, _, _ := benchSyncer(b, z)
	ctx := context.Background()
	start = time.Now()
	work := make(chan int)
	errs := make(chan error, benchWorkers())
	for w := 0; w < benchWorkers(); w++ {
		go func() {
			var first error
			for i := range work {
				set, err := activity.Of(view, nets[i].Name)
				if err == nil {
					var res topology.Result
					if res, err = topology.Render(topology.Input{Network: nets[i], Nodes: infos, Zone: "node0", Cluster: cfg, Active: set}); err == nil {
						_, err = s.Sync(ctx, feature.NetworkKey(nets[i].Name).String(), res.Rows)
					}
				}
				if err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for i := range nets {
		work <- i
	}
	close(work)
	for w := 0; w < benchWorkers(); w++ {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds(), "s/converge-node0")
	b.ReportMetric(float64(totalRows(nbRows(b, z))), "rows-node0")
	b.ReportMetric(float64(s.Transactions()), "txns-node0")

	// The first pod of a network on node0: one not used there yet.
	for i, n := range nets {
		if active[i].Has("node0") {
			continue
		}
		set := active[i].Union(activity.On("node0"))
		start := time.Now()
		res, err := topology.Render(topology.Input{Network: n, Nodes: infos, Zone: "node0", Cluster: cfg, Active: set})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Sync(ctx, feature.NetworkKey(n.Name).String(), res.Rows); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms/first-pod-network-plan")
		break
	}
}
