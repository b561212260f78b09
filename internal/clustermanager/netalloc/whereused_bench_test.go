package netalloc_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// BenchmarkSlicesWhereUsed measures cluster-manager (all of it, on a real
// API server) giving nodes their slices of N primary Layer3 networks over
// M nodes, each network with a pod on K consecutive nodes, both ways in
// the same run: only where used (the default), then on every node
// (--render-everywhere). It reports how long a started cluster-manager
// takes to settle every node's annotation, the subnets annotation's size,
// and (where used) how long a network's first pod on another node takes
// to bring its slice there.
//
//	OVN_UDN_BENCH_SIZE=4000x500 go test -run XXX -bench BenchmarkSlicesWhereUsed -benchtime 1x -timeout 60m ./internal/clustermanager/netalloc/
//	(default 200x50; OVN_UDN_BENCH_ACTIVE=K, default 3)
func BenchmarkSlicesWhereUsed(b *testing.B) {
	networks, nodes, active := 200, 50, 3
	if s := os.Getenv("OVN_UDN_BENCH_SIZE"); s != "" {
		if _, err := fmt.Sscanf(s, "%dx%d", &networks, &nodes); err != nil {
			b.Fatalf("OVN_UDN_BENCH_SIZE=%q: want NxM", s)
		}
	}
	if s := os.Getenv("OVN_UDN_BENCH_ACTIVE"); s != "" {
		active, _ = strconv.Atoi(s)
	}
	ctx := context.Background()
	c := cmtest.Admin(b, env)
	cfg := config.Default()
	cfg.MaxNetworksPerNamespace = 0
	cfg.ClusterSubnets = []netconf.Subnet{{CIDR: mustPrefix("10.128.0.0/9"), HostPrefix: 24}} // room for the nodes
	// Setup, not measured: nodes, one namespace per network with its NAD
	// (hand-made: cluster-manager gives it an ID) and pods on K nodes.
	nodeNames := make([]string, nodes)
	for i := range nodeNames {
		nodeNames[i] = fmt.Sprintf("bench-wu-%d", i)
		if err := c.Create(ctx, nodeObj(nodeNames[i])); err != nil {
			b.Fatal(err)
		}
	}
	prefix := cmtest.UniqueName("wu")
	nsNames := make([]string, networks)
	want := map[string][]string{} // node -> networks it uses
	b.Cleanup(func() {
		for _, ns := range nsNames {
			_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		for _, n := range nodeNames {
			_ = c.Delete(ctx, nodeObj(n))
		}
	})
	setup := time.Now()
	for i := range networks {
		nsNames[i] = fmt.Sprintf("%s-%d", prefix, i)
		for k := range active {
			node := nodeNames[(i+k)%nodes]
			want[node] = append(want[node], nsNames[i]+".net")
		}
	}
	// Eight writers: the API server, not the client, is the bottleneck.
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			var err error
			for i := w; i < networks && err == nil; i += 8 {
				err = createTenant(ctx, c, nsNames[i], i, active, nodeNames)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("setup: %d namespaces, NADs and %d pods, %d nodes in %s", networks, networks*active, nodes, time.Since(setup).Round(time.Millisecond))
	all := make([]string, 0, networks)
	for _, ns := range nsNames {
		all = append(all, ns+".net")
	}
	sort.Strings(all)

	// settle starts a cluster-manager and waits until every node holds
	// exactly the networks held says (and the default network's slice).
	settle := func(opts clustermanager.Options, held func(node string) []string) (time.Duration, int, func()) {
		b.Helper()
		start := time.Now()
		stop := cmtest.StartWith(b, env, opts)
		size := 0
		err := proc.WaitFor(30*time.Minute, 250*time.Millisecond, func() (bool, error) {
			var list corev1.NodeList
			if err := c.List(ctx, &list); err != nil {
				return false, err
			}
			size = 0
			for _, n := range list.Items {
				if !strings.HasPrefix(n.Name, "bench-wu-") {
					continue
				}
				ann := n.Annotations[nodeinfo.NodeSubnetsAnnotation]
				s, err := nodeinfo.ParseSubnets(ann)
				if err != nil || len(s[nodeinfo.DefaultNetwork]) == 0 {
					return false, fmt.Errorf("node %s: %v", n.Name, err)
				}
				delete(s, nodeinfo.DefaultNetwork)
				got := s.Networks()
				if w := held(n.Name); !slices.Equal(got, w) {
					return false, fmt.Errorf("node %s holds %d networks' slices, want %d", n.Name, len(got), len(w))
				}
				size += len(ann)
			}
			return true, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), size, stop
	}
	for _, ws := range want {
		sort.Strings(ws)
	}
	settleStart := time.Now()
	took, size, stop := settle(clustermanager.Options{Cluster: cfg, InactiveGracePeriod: time.Minute}, func(n string) []string { return want[n] })
	b.Logf("where used: settled in %s; subnets annotations %d bytes in all, %d per node", took.Round(time.Millisecond), size, size/nodes)
	b.ReportMetric(took.Seconds(), "whereused-settle-s")
	b.ReportMetric(float64(size/nodes), "whereused-bytes/node")

	// A network's first pod on a node that does not use it: its slice
	// comes with it (20 samples), once the node controller's queue is
	// empty (the start's passes over every node are done).
	if err := proc.WaitFor(10*time.Minute, 100*time.Millisecond, func() (bool, error) {
		depth, err := queueDepth("node-allocation")
		return err == nil && depth == 0, err
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("node queue empty %s after the start", time.Since(settleStart).Round(time.Millisecond))
	var lat, created []time.Duration // created: the API server's answer alone, the floor
	for i := range 20 {
		ns := nsNames[i%networks]
		node := nodeNames[(i%networks+active)%nodes]
		if slices.Contains(want[node], ns+".net") {
			continue
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		t0 := time.Now()
		if err := c.Create(ctx, p); err != nil {
			b.Fatal(err)
		}
		created = append(created, time.Since(t0))
		if err := proc.WaitFor(time.Minute, 5*time.Millisecond, func() (bool, error) {
			n := &corev1.Node{}
			if err := c.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
				return false, err
			}
			s, err := nodeinfo.ParseSubnets(n.Annotations[nodeinfo.NodeSubnetsAnnotation])
			return err == nil && len(s[ns+".net"]) > 0, err
		}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(lat)
	slices.Sort(created)
	if len(lat) > 0 {
		b.Logf("first pod on a node -> its slice: p50 %s, max %s (%d samples); the pod's creation alone: p50 %s", lat[len(lat)/2].Round(time.Millisecond),
			lat[len(lat)-1].Round(time.Millisecond), len(lat), created[len(created)/2].Round(time.Millisecond))
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "firstpod-slice-p50-ms")
	}
	stop()

	took, size, stop = settle(clustermanager.Options{Cluster: cfg, RenderEverywhere: true}, func(string) []string { return all })
	b.Logf("everywhere: settled in %s; subnets annotations %d bytes in all, %d per node", took.Round(time.Millisecond), size, size/nodes)
	b.ReportMetric(took.Seconds(), "everywhere-settle-s")
	b.ReportMetric(float64(size/nodes), "everywhere-bytes/node")
	stop()
}

// createTenant creates network i's namespace, its hand-made primary Layer3
// NAD and a pod on each of the active nodes from node i on.
func createTenant(ctx context.Context, c client.Client, ns string, i, active int, nodes []string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}); err != nil {
		return err
	}
	conf := fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"%s.net","topology":"layer3","role":"primary","subnets":"10.0.0.0/8/24","netAttachDefName":"%s/net"}`, ns, ns)
	if err := c.Create(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf}}); err != nil {
		return err
	}
	for k := range active {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", k)},
			Spec: corev1.PodSpec{NodeName: nodes[(i+k)%len(nodes)], Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if err := c.Create(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// queueDepth reads a controller's workqueue depth from controller-runtime's
// metrics registry (the managers run in this process).
func queueDepth(name string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	for _, f := range families {
		if f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && l.GetValue() == name {
					return m.GetGauge().GetValue(), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no workqueue_depth for %s", name)
}
