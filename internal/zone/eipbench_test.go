package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	libmodel "github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// BenchmarkEgressIPs measures EgressIPs at the scale in one zone:
// 50 Layer3 networks (a namespace each) with 10 pods each on node-a, and
// 500 EgressIPs (one per pod, by pod selector) held by node-b, a Ready,
// egress-assignable node with its own zone. It reports
//   - ms-converge: from the first EgressIP's creation until node-a's
//     Northbound holds a reroute policy for every pod (ms-created: the
//     last creation returned; ms-assigned: cluster-manager gave every one
//     its node);
//   - policies-per-eip: node-a's EgressIP router policies (reroutes and
//     the networks' allows) per EgressIP;
//   - pod-add latency (creation to the pod's port in the Northbound), p50
//     and p99 over 50 pods added one at a time, before the EgressIPs exist
//     (ms-port-*-without) and after, each new pod selected by one
//     (ms-port-*-with), in the same run.
//
// Run with
//
//	go test -run XXX -bench BenchmarkEgressIPs -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_EIP_NETWORKS and OVN_UDN_BENCH_EIP_PER_NETWORK change 50 and
// 10.
func BenchmarkEgressIPs(b *testing.B) {
	networks, per := envOr("OVN_UDN_BENCH_EIP_NETWORKS", 50), envOr("OVN_UDN_BENCH_EIP_PER_NETWORK", 10)
	for b.Loop() {
		benchEgressIPs(b, networks, per, 50)
	}
}

func envOr(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func benchEgressIPs(b *testing.B, networks, per, added int) {
	ctx := context.Background()
	// Every pod has a default-network interface too: node-a's default
	// slice must hold them all (a /20, as BenchmarkPodAdd's).
	cfg := config.Default()
	cfg.ClusterSubnets = []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.240.0.0/12"), HostPrefix: 20}}
	c := clustertest.StartWith(b, env, cfg, func(o *zone.Options) { o.RenderEverywhere = false }, "node-a", "node-b")
	// node-b may hold egress IPs: Ready and labelled.
	nb := c.Node("node-b")
	nb.Labels = map[string]string{v1.EgressAssignableLabel: ""}
	if err := c.Admin.Update(ctx, nb); err != nil {
		b.Fatal(err)
	}
	nb = c.Node("node-b")
	nb.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := c.Admin.Status().Update(ctx, nb); err != nil {
		b.Fatal(err)
	}

	ports, reroutes := newArrivals(), newArrivals()
	var mu sync.Mutex
	rows := map[string]bool{} // node-a's EgressIP rows by UUID
	watch := watchNBTables(b, c.Zones["node-a"].NB)
	watch.Cache().AddEventHandler(&cache.EventHandlerFuncs{AddFunc: func(_ string, m libmodel.Model) {
		switch r := m.(type) {
		case *nbdb.LogicalSwitchPort:
			ports.mark(r.Name)
		case *nbdb.LogicalRouterPolicy:
			if r.ExternalIDs[egressip.NetworkKey] == "" {
				return
			}
			mu.Lock()
			rows[r.UUID] = true
			mu.Unlock()
			if o := r.ExternalIDs[egressip.ObjectKey]; o != "" && r.Action == nbdb.LogicalRouterPolicyActionReroute {
				reroutes.mark(o)
			}
		}
	}})
	nsName := func(i int) string { return fmt.Sprintf("eipb-%d", i) }
	for i := range networks {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
		if err := c.Admin.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		if err := c.Admin.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1ObjectMeta(ns.Name, "net"),
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/14/24"}}}); err != nil {
			b.Fatal(err)
		}
	}
	pod := func(i, j int, name string) *corev1.Pod {
		p := newPod(nsName(i), name, "node-a", nil)
		p.Labels = map[string]string{"app": fmt.Sprintf("p%d", j)}
		return p
	}
	portOf := func(i int, name string) string {
		return podnet.PortName(podnet.Key(nsName(i), "net"), nsName(i), name)
	}
	for i := range networks {
		for j := range per {
			createPodB(b, c.Admin, pod(i, j, fmt.Sprintf("p%d", j)))
		}
	}
	for i := range networks {
		for j := range per {
			if _, ok := ports.wait(portOf(i, fmt.Sprintf("p%d", j)), 5*time.Minute); !ok {
				b.Fatalf("pod %s/p%d got no port", nsName(i), j)
			}
		}
	}
	addPods := func(round string, selected bool) (port []time.Duration) {
		for k := range added {
			i := k % networks
			j := per // selected by no EgressIP unless selected
			if selected {
				j = k % per
			}
			name := fmt.Sprintf("%s-%d", round, k)
			start := time.Now()
			createPodB(b, c.Admin, pod(i, j, name))
			at, ok := ports.wait(portOf(i, name), time.Minute)
			if !ok {
				b.Fatalf("pod %s/%s got no port in a minute", nsName(i), name)
			}
			port = append(port, at.Sub(start))
		}
		return port
	}
	without := addPods("before", false)

	eipName := func(i, j int) string { return fmt.Sprintf("eipb-%d-%d", i, j) }
	start := time.Now()
	for i := range networks {
		for j := range per {
			n := i*per + j
			addr := netip.AddrFrom4([4]byte{172, 18, byte(2 + n/250), byte(1 + n%250)})
			e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: eipName(i, j)}, Spec: v1.EgressIPSpec{EgressIPs: []string{addr.String()},
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: nsName(i)}},
				PodSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("p%d", j)}}}}
			if err := c.Admin.Create(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
	}
	created := time.Since(start)
	// When cluster-manager has given every one its node (a poll: the
	// figure is a measurement, nothing waits on it).
	var assigned time.Duration
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var list v1.EgressIPList
		if err := c.Admin.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, e := range list.Items {
			if len(e.Status.Items) == 1 {
				n++
			}
		}
		if n == networks*per {
			assigned = time.Since(start)
			break
		}
	}
	var last time.Time
	for i := range networks {
		for j := range per {
			at, ok := reroutes.wait(eipName(i, j), 5*time.Minute)
			if !ok {
				b.Fatalf("EgressIP %s: no reroute in node-a's zone", eipName(i, j))
			}
			if at.After(last) {
				last = at
			}
		}
	}
	converge := last.Sub(start)
	mu.Lock()
	held := len(rows)
	mu.Unlock()

	with := addPods("after", true)
	b.ReportMetric(created.Seconds()*1000, "ms-created")
	b.ReportMetric(assigned.Seconds()*1000, "ms-assigned")
	b.ReportMetric(converge.Seconds()*1000, "ms-converge")
	b.ReportMetric(float64(held)/float64(networks*per), "policies-per-eip")
	b.ReportMetric(pct(without, 50).Seconds()*1000, "ms-port-p50-without")
	b.ReportMetric(pct(without, 99).Seconds()*1000, "ms-port-p99-without")
	b.ReportMetric(pct(with, 50).Seconds()*1000, "ms-port-p50-with")
	b.ReportMetric(pct(with, 99).Seconds()*1000, "ms-port-p99-with")
}

// watchNBTables is a Northbound client caching ports and router policies.
func watchNBTables(b *testing.B, endpoint string) interface{ Cache() *cache.TableCache } {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: endpoint, Tables: []libmodel.Model{&nbdb.LogicalSwitchPort{}, &nbdb.LogicalRouterPolicy{}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}
