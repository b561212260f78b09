package zone_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/rows/services"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// serviceInputs are n services of one network with e ready endpoints each.
func serviceInputs(n, e int, network topology.Network) []services.Input {
	out := make([]services.Input, n)
	for i := range out {
		ip := fmt.Sprintf("10.96.%d.%d", i/250, 1+i%250)
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", i%50), Name: fmt.Sprintf("svc%d", i)},
			Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
		sl := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
		for j := 0; j < e; j++ {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.244.%d.%d", (i*e+j)/250%250, 2+(i*e+j)%250)}})
		}
		out[i] = services.Input{Service: svc, Network: network, Slices: []discoveryv1.EndpointSlice{sl}, Node: "node0"}
	}
	return out
}

// BenchmarkServiceLoadBalancers writes 1,000 services × 10 endpoints of one
// network into one zone (a real ovsdb-server) the way the zone controller
// does (one owner and one transaction per service, 4 workers, each adding
// its load balancer to the network's group), then changes one endpoint of
// one service 200 times (one small transaction each, p50/p99), then writes
// the same load balancers as one bulk transaction with no controller logic
// (the floor). Run with
//
//	go test -run XXX -bench BenchmarkServiceLoadBalancers -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_SERVICES=NxE changes the size.
func BenchmarkServiceLoadBalancers(b *testing.B) {
	n, e := 1000, 10
	if v := os.Getenv("OVN_UDN_BENCH_SERVICES"); v != "" {
		if _, err := fmt.Sscanf(v, "%dx%d", &n, &e); err != nil {
			b.Fatalf("OVN_UDN_BENCH_SERVICES=%q: want NxE", v)
		}
	}
	for b.Loop() {
		benchServices(b, n, e)
	}
}

func benchServices(b *testing.B, n, e int) {
	ctx := context.Background()
	cfg := config.Default()
	nets, infos := benchInputs(1, 3)
	network := nets[0]
	topo, err := topology.Render(topology.Input{Network: network, Nodes: infos, Zone: "node0", Cluster: cfg})
	if err != nil {
		b.Fatal(err)
	}
	inputs := serviceInputs(n, e, network)

	z := ovntest.StartZone(b, "svc")
	c := connectBench(b, z, false)
	s, err := zone.NewSyncer(c)
	if err != nil {
		b.Fatal(err)
	}
	s.WithWriter(connectBench(b, z, true))
	if _, err := s.Sync(ctx, feature.NetworkKey(network.Name).String(), topo.Rows); err != nil {
		b.Fatal(err)
	}
	txns0 := s.Transactions()
	work := make(chan services.Input)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for in := range work {
				out := services.Render(in)
				if _, err := s.Sync(ctx, feature.ServiceKey(in.Service.Namespace, in.Service.Name).String(), out.Rows, out.Contributions...); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, in := range inputs {
		work <- in
	}
	close(work)
	wg.Wait()
	converge := time.Since(start)
	b.ReportMetric(converge.Seconds(), "s/converge")
	b.ReportMetric(float64(s.Transactions()-txns0), "txns")
	b.ReportMetric(float64(n), "lb-rows")
	if got := groupSize(b, z, network.ClusterLBGroup()); got != n {
		b.Fatalf("the group holds %d load balancers, want %d", got, n)
	}

	// One endpoint changes, 200 times (a pod replaced): one transaction each.
	var lat []time.Duration
	in := inputs[n/2]
	for i := 0; i < 200; i++ {
		in.Slices[0].Endpoints[0].Addresses = []string{fmt.Sprintf("10.250.%d.%d", i/250, 1+i%250)}
		out := services.Render(in)
		t0 := time.Now()
		p, err := s.Sync(ctx, feature.ServiceKey(in.Service.Namespace, in.Service.Name).String(), out.Rows, out.Contributions...)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if p.Updated != 1 || len(p.Ops) != 1 {
			b.Fatalf("an endpoint change planned %s (%d ops), want one update", p, len(p.Ops))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-endpoint-change-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-endpoint-change-p99")

	// The floor: the same load balancers and group members, planned
	// beforehand, in one transaction from a connection without a monitor
	// (as BenchmarkZoneConverge's floor).
	zf := ovntest.StartZone(b, "svc-floor")
	cf := connectBench(b, zf, false)
	sf, err := zone.NewSyncer(cf)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sf.Sync(ctx, feature.NetworkKey(network.Name).String(), topo.Rows); err != nil {
		b.Fatal(err)
	}
	var ops []ovsdb.Operation
	for _, in := range inputs {
		out := services.Render(in)
		p, err := sf.Plan(feature.ServiceKey(in.Service.Namespace, in.Service.Name).String(), out.Rows, out.Contributions...)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, p.Ops...)
	}
	writer := connectBench(b, zf, true)
	cf.Close() // the floor does not pay for a monitor
	floor := bulkWrite(b, writer, ops)
	b.ReportMetric(floor.Seconds(), "s/floor")
	b.ReportMetric(converge.Seconds()/floor.Seconds(), "ratio")
}

func groupSize(b *testing.B, z *ovntest.Zone, group string) int {
	out := z.MustNBCtl("--bare", "--columns=load_balancer", "find", "Load_Balancer_Group", "name="+group)
	return len(strings.Fields(strings.NewReplacer("[", " ", "]", " ", ",", " ").Replace(out)))
}
