package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/client"
	libmodel "github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	kclient "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/podnet"
)

// BenchmarkPodAdd measures, with 1000 pods already in a zone on a Layer3 UDN,
// how long a new pod takes from its creation to (a) its pod-networks
// annotation and (b) its UDN port in the zone's Northbound, over 200 pods
// added one at a time. Run with
//
//	go test -run XXX -bench BenchmarkPodAdd -benchtime 1x ./internal/zone/
func BenchmarkPodAdd(b *testing.B) {
	for b.Loop() {
		benchPodAdd(b, benchExisting(), 200)
	}
}

func benchPodAdd(b *testing.B, existing, added int) {
	// 1000 pods on one node: the default network's node slices must be larger
	// than the kind-like /24 (253 pods per node).
	cfg := config.Default()
	cfg.ClusterSubnets = []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.240.0.0/12"), HostPrefix: 20}}
	c := clustertest.Start(b, env, cfg, "node-a")
	ctx := context.Background()
	ns := "bench-" + fmt.Sprint(time.Now().UnixNano()%100000)
	if err := c.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1ObjectMeta("", ns)}); err != nil {
		b.Fatal(err)
	}
	nsObj := &corev1.Namespace{}
	_ = c.Admin.Get(ctx, kclient.ObjectKey{Name: ns}, nsObj)
	nsObj.Labels = map[string]string{v1.PrimaryNetworkLabel: ""}
	if err := c.Admin.Update(ctx, nsObj); err != nil {
		b.Fatal(err)
	}
	if err := c.Admin.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1ObjectMeta(ns, "net"),
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/14/20"}}}); err != nil {
		b.Fatal(err)
	}
	key := podnet.Key(ns, "net")
	c.WaitNB("node-a", "Logical_Router:GR_"+ns+".net_node-a")
	nb := watchNB(b, c.Zones["node-a"].NB)
	hasPort := func(name string) bool {
		var ports []nbdb.LogicalSwitchPort
		_ = nb.WhereCache(func(p *nbdb.LogicalSwitchPort) bool { return p.Name == name }).List(ctx, &ports)
		return len(ports) == 1
	}
	for i := 0; i < existing; i++ {
		createPodB(b, c.Admin, newPod(ns, fmt.Sprintf("old-%d", i), "node-a", nil))
	}
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; i < existing; i++ {
		for !hasPort(podnet.PortName(key, ns, fmt.Sprintf("old-%d", i))) {
			if time.Now().After(deadline) {
				b.Fatalf("the %d existing pods did not all get ports", existing)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var annotated, ported []time.Duration
	for i := 0; i < added; i++ {
		p := newPod(ns, fmt.Sprintf("new-%d", i), "node-a", nil)
		start := time.Now()
		createPodB(b, c.Admin, p)
		for {
			if err := c.Admin.Get(ctx, kclient.ObjectKeyFromObject(p), p); err == nil {
				if nets, _ := podnet.Parse(p.Annotations); len(nets) == 2 {
					break
				}
			}
			time.Sleep(time.Millisecond)
		}
		annotated = append(annotated, time.Since(start))
		for !hasPort(podnet.PortName(key, ns, p.Name)) {
			time.Sleep(time.Millisecond)
		}
		ported = append(ported, time.Since(start))
	}
	b.ReportMetric(pct(annotated, 50).Seconds()*1000, "ms-annotated-p50")
	b.ReportMetric(pct(annotated, 99).Seconds()*1000, "ms-annotated-p99")
	b.ReportMetric(pct(ported, 50).Seconds()*1000, "ms-port-p50")
	b.ReportMetric(pct(ported, 99).Seconds()*1000, "ms-port-p99")
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100]
}

func createPodB(b *testing.B, c kclient.Client, p *corev1.Pod) {
	if err := c.Create(context.Background(), p); err != nil {
		b.Fatal(err)
	}
}

func watchNB(b *testing.B, endpoint string) client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: endpoint, Tables: []libmodel.Model{&nbdb.LogicalSwitchPort{}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// benchExisting is how many pods are in the zone before measuring (1000, or
// OVN_UDN_BENCH_PODS).
func benchExisting() int {
	if n, err := strconv.Atoi(os.Getenv("OVN_UDN_BENCH_PODS")); err == nil {
		return n
	}
	return 1000
}
