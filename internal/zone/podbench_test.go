package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	libmodel "github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	kclient "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// BenchmarkPodAdd measures, with 1000 pods already in a zone on a Layer3 UDN,
// how long a new pod takes from its creation to (a) its pod-networks
// annotation and (b) its UDN port in the zone's Northbound, over 200 pods
// added one at a time. Run with
//
//	go test -run XXX -bench BenchmarkPodAdd -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_PODS sets the pods already there; OVN_UDN_BENCH_WHERE_USED=1
// renders the network only where used (the zone controller's default; the
// harness renders everywhere).
func BenchmarkPodAdd(b *testing.B) {
	for b.Loop() {
		benchPodAdd(b, benchExisting(), 200)
	}
}

func benchPodAdd(b *testing.B, existing, added int) {
	// 1000 pods on one node: the default network's node slices must be larger
	// than the kind-like /24 (253 pods per node): /20, or /18 beyond 4000.
	host := 20
	if existing+added > 4000 {
		host = 18
	}
	cfg := config.Default()
	cfg.ClusterSubnets = []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.240.0.0/12"), HostPrefix: host}}
	// OVN_UDN_BENCH_WHERE_USED=1: the zone renders the network only where
	// used (the controller's default; its first pod brings it).
	whereUsed := os.Getenv("OVN_UDN_BENCH_WHERE_USED") == "1"
	c := clustertest.StartWith(b, env, cfg, func(o *zone.Options) { o.RenderEverywhere = !whereUsed }, "node-a")
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
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(fmt.Sprintf("10.128.0.0/14/%d", host))}}}); err != nil {
		b.Fatal(err)
	}
	key := podnet.Key(ns, "net")
	if !whereUsed {
		c.WaitNB("node-a", "Logical_Router:GR_"+ns+".net_node-a")
	}
	// Arrivals are timed by events, not polling (a poll every millisecond
	// of the API server and of a 10,000-port cache took a core of its own):
	// a watch of the namespace's pods, and the bench's own Northbound
	// cache's insert events.
	annotations, ports := newArrivals(), newArrivals()
	nb := watchNB(b, c.Zones["node-a"].NB)
	nb.Cache().AddEventHandler(&cache.EventHandlerFuncs{AddFunc: func(table string, m libmodel.Model) {
		if lsp, ok := m.(*nbdb.LogicalSwitchPort); ok {
			ports.mark(lsp.Name)
		}
	}})
	wc, err := kclient.NewWithWatch(c.Env.Config, kclient.Options{Scheme: c.Admin.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := wc.Watch(wctx, &corev1.PodList{}, kclient.InNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				if nets, _ := podnet.Parse(p.Annotations); len(nets) == 2 {
					annotations.mark(p.Name)
				}
			}
		}
	}()
	for i := 0; i < existing; i++ {
		createPodB(b, c.Admin, newPod(ns, fmt.Sprintf("old-%d", i), "node-a", nil))
	}
	for i := 0; i < existing; i++ {
		if _, ok := ports.wait(podnet.PortName(key, ns, fmt.Sprintf("old-%d", i)), 5*time.Minute); !ok {
			b.Fatalf("existing pod %d got no port", i)
		}
	}
	var annotated, ported []time.Duration
	for i := 0; i < added; i++ {
		p := newPod(ns, fmt.Sprintf("new-%d", i), "node-a", nil)
		start := time.Now()
		createPodB(b, c.Admin, p)
		at, ok := annotations.wait(p.Name, time.Minute)
		if !ok {
			b.Fatalf("pod %s not annotated in a minute", p.Name)
		}
		pt, ok := ports.wait(podnet.PortName(key, ns, p.Name), time.Minute)
		if !ok {
			b.Fatalf("pod %s got no port in a minute", p.Name)
		}
		annotated = append(annotated, at.Sub(start))
		ported = append(ported, pt.Sub(start))
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

// arrivals records when named things first arrive, and lets a caller wait
// for one.
type arrivals struct {
	mu sync.Mutex
	at map[string]time.Time
	ch map[string]chan struct{}
}

func newArrivals() *arrivals {
	return &arrivals{at: map[string]time.Time{}, ch: map[string]chan struct{}{}}
}

func (a *arrivals) mark(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.at[name]; ok {
		return
	}
	a.at[name] = time.Now()
	if c, ok := a.ch[name]; ok {
		close(c)
		return
	}
	c := make(chan struct{})
	close(c)
	a.ch[name] = c
}

// wait returns when name arrived, or false after d.
func (a *arrivals) wait(name string, d time.Duration) (time.Time, bool) {
	a.mu.Lock()
	c, ok := a.ch[name]
	if !ok {
		c = make(chan struct{})
		a.ch[name] = c
	}
	a.mu.Unlock()
	select {
	case <-c:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.at[name], true
	case <-time.After(d):
		return time.Time{}, false
	}
}
