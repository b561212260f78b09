package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// scrape reads a Prometheus text exposition into series -> value, the
// series written as exposed (name{label="value",...}).
func scrape(addr string) (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", addr, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: line %q: %v", addr, line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// metricsOf returns where a sandbox process serves its metrics.
func metricsOf(t *testing.T, name string) string {
	t.Helper()
	p := process(t, name)
	if p.Metrics == "" {
		t.Fatalf("%s serves no metrics", name)
	}
	return p.Metrics
}

// steady waits until a series has kept its value over three scrapes half a
// second apart.
func steady(t *testing.T, addr, series string) {
	t.Helper()
	var last []float64
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := scrape(addr)
		if err != nil {
			t.Fatal(err)
		}
		last = append(last, m[series])
		if n := len(last); n >= 3 && last[n-1] == last[n-2] && last[n-2] == last[n-3] {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%s at %s kept changing: %v", series, addr, last)
}

// plumbedIsReady checks node1's agent's ovn_udn_pods_plumbed against the
// API: once things settle, the pods plumbed are the Ready pods of node1
// (a pod is Ready only once plumbed; refused pods are neither), leaving
// out host-network pods, which have no interface to plumb.
func plumbedIsReady(agent string) error {
	var pods corev1.PodList
	if err := admin.List(context.Background(), &pods); err != nil {
		return err
	}
	ready := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "node1" && !p.Spec.HostNetwork && p.DeletionTimestamp == nil && kubeobj.PodReady(p) {
			ready++
		}
	}
	m, err := scrape(agent)
	if err != nil {
		return err
	}
	if got := m[`ovn_udn_pods_plumbed{node="node1"}`]; got != float64(ready) {
		return fmt.Errorf("node1's agent has %v pods plumbed, the API %d Ready pods on node1", got, ready)
	}
	return nil
}

// TestMetricsScrape scrapes the sandbox's running cluster-manager, node1's
// zone controller and node1's node agent (each on its own --metrics-addr)
// before and after a namespace with a Layer3 UDN and a pod on node1 is
// created, and after it is deleted: the network and its ID, node subnets on
// every node, the network's first render and the pod's annotation timed in
// the zone, its port counted there, its interfaces plumbed and timed by the
// agent, and the counts back when it is gone.
func TestMetricsScrape(t *testing.T) {
	ctx := context.Background()
	cm, zone, agent := metricsOf(t, "cluster-manager"), metricsOf(t, "zone-controller/node1"), metricsOf(t, "node-agent/node1")
	// Networks still coming or going from earlier tests would move the
	// counts: start from steady ones.
	steady(t, cm, `ovn_udn_networks{role="primary",topology="layer3"}`)
	steady(t, cm, `ovn_udn_network_ids_allocated`)
	before := map[string]map[string]float64{}
	for _, addr := range []string{cm, zone, agent} {
		m, err := scrape(addr)
		if err != nil {
			t.Fatal(err)
		}
		before[addr] = m
	}
	const ns = "metrics-a"
	network := ns + ".net"
	nsNetwork(t, ns, "Layer3", "10.150.0.0/16/24")
	t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	if err := demo.WaitPodsReady(ctx, dir, admin, []string{ns + "/a"}, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	type want struct {
		addr, series string
		check        func(before, now float64) bool
		says         string
	}
	more := func(b, n float64) bool { return n > b }
	plusOne := func(b, n float64) bool { return n == b+1 }
	is := func(v float64) func(_, n float64) bool { return func(_, n float64) bool { return n == v } }
	wants := []want{
		{cm, `ovn_udn_networks{role="primary",topology="layer3"}`, plusOne, "one more primary Layer3 network"},
		{cm, `ovn_udn_network_ids_allocated`, plusOne, "one more network ID"},
		{cm, `ovn_udn_node_subnets_allocated{network="` + network + `"}`, is(1), "a slice on the one node its pod runs on (slices only where used)"},
		{cm, `ovn_udn_node_subnets_capacity{network="` + network + `"}`, is(256), "256 /24 slices in a /16"},
		{cm, `ovn_udn_tunnel_keys_capacity`, func(_, n float64) bool { return n > 0 }, "a tunnel-key pool"},
		{zone, `ovn_udn_pods{network="` + network + `",zone="node1"}`, is(1), "the pod's port in node1's zone"},
		{zone, `ovn_udn_network_ready_seconds_count{zone="node1"}`, plusOne, "the network's first render timed"},
		{zone, `ovn_udn_pod_annotation_duration_seconds_count{zone="node1"}`, more, "the pod's annotation timed"},
		{zone, `ovn_udn_ovsdb_transactions_total{owner_kind="net",result="ok",zone="node1"}`, more, "the network's transactions counted"},
		{zone, `ovn_udn_ovsdb_connected{db="nb",zone="node1"}`, is(1), "connected to the Northbound"},
		{agent, `ovn_udn_pod_plumb_duration_seconds_count{node="node1"}`, more, "its plumbing timed"},
		{agent, `controller_runtime_reconcile_total{controller="node-pods",result="success"}`, more, "the agent's reconciles counted"},
	}
	check := func(wants []want) error {
		now := map[string]map[string]float64{}
		var bad []string
		for _, w := range wants {
			if now[w.addr] == nil {
				m, err := scrape(w.addr)
				if err != nil {
					return err
				}
				now[w.addr] = m
			}
			n, ok := now[w.addr][w.series]
			if !ok || !w.check(before[w.addr][w.series], n) {
				bad = append(bad, fmt.Sprintf("%s at %s: %v (before %v, present %v): want %s", w.series, w.addr, n, before[w.addr][w.series], ok, w.says))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s", strings.Join(bad, "\n"))
		}
		return nil
	}
	eventually(t, func() error {
		if err := check(wants); err != nil {
			return err
		}
		return plumbedIsReady(agent)
	})

	if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	gone := []want{
		{cm, `ovn_udn_networks{role="primary",topology="layer3"}`, func(b, n float64) bool { return n == b }, "the network gone"},
	}
	eventually(t, func() error {
		if err := check(gone); err != nil {
			return err
		}
		if err := plumbedIsReady(agent); err != nil {
			return err
		}
		m, err := scrape(zone)
		if err != nil {
			return err
		}
		if v, ok := m[`ovn_udn_pods{network="`+network+`",zone="node1"}`]; ok {
			return fmt.Errorf("node1's zone still counts %v pod ports of %s", v, network)
		}
		return nil
	})
}
