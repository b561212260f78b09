package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// benchBytes is what one egress transfer sends.
const benchBytes = 128 << 20

// BenchmarkEgressThroughput sends benchBytes over one TCP connection to the
// outside world's sink, from node1 itself (the floor: br-ex and the kernel,
// no OVN), from a default-network pod, and from pods of a Layer3 and a
// Layer2 UDN (their gateway router, then br-ex's SNAT to the node address
// by the network's mark). MB/s is the client's own measurement, from
// connect to the sink's count of every byte.
//
//	go test ./test/e2e -run '^$' -bench EgressThroughput -benchtime 3x
func BenchmarkEgressThroughput(b *testing.B) {
	ensureNetwork(b, "bench-l3", "Layer3", "10.160.0.0/16/24")
	ensureNetwork(b, "bench-l2", "Layer2", "10.161.0.0/16")
	if err := demo.WaitPodsReady(context.Background(), dir, admin, []string{"plain/a", "bench-l3/a", "bench-l2/a"}, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	sink := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalSinkPort)
	for _, c := range []struct{ name, pod string }{
		{"node", ""}, {"default", "plain/a"}, {"layer3", "bench-l3/a"}, {"layer2", "bench-l2/a"},
	} {
		b.Run(c.name, func(b *testing.B) {
			netns := node(b, "node1").Netns
			if c.pod != "" {
				var err error
				if netns, err = sandbox.PodNetns(context.Background(), dir, admin, c.pod); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(benchBytes)
			var seconds float64
			for i := 0; i < b.N; i++ {
				out, err := inNetns(context.Background(), netns, binary, "sandbox", "bulk", "--bytes", strconv.Itoa(benchBytes), sink)
				if err != nil {
					b.Fatalf("bulk from %s: %v: %s", c.name, err, out)
				}
				var r demo.BulkResult
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					b.Fatalf("bulk from %s printed %q", c.name, out)
				}
				seconds += r.Seconds
			}
			b.ReportMetric(float64(b.N)*benchBytes/1e6/seconds, "MB/s")
		})
	}
}

// BenchmarkNodePortReachable measures the time from creating a NodePort
// service of a Layer3 UDN (its two pods already Ready) to the outside world
// getting an answer on node2's address: the zone controller's load
// balancers and node2's br-ex flows together. Each round deletes the
// service and waits until the port is closed again.
//
//	go test ./test/e2e -run '^$' -bench NodePortReachable -benchtime 5x
func BenchmarkNodePortReachable(b *testing.B) {
	ctx := context.Background()
	ensureNetwork(b, "bench-l3", "Layer3", "10.160.0.0/16/24")
	if err := admin.Create(ctx, deployment("bench-l3", "echo", 2)); err != nil && !strings.Contains(err.Error(), "already exists") {
		b.Fatal(err)
	}
	readyPods(b, "bench-l3", "echo", 2)
	url := fmt.Sprintf("http://%s:30190/hostname", strings.Split(sandbox.NodeIP(2), "/")[0])
	answers := func() bool {
		got, err := outside("curl", "-s", "-m", "1", url)
		return err == nil && strings.HasPrefix(got, "echo-")
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		svc := nodePortService("bench-l3", "echo", 30190, false)
		start := time.Now()
		if err := admin.Create(ctx, svc); err != nil {
			b.Fatal(err)
		}
		for !answers() {
			if time.Since(start) > time.Minute {
				b.Fatalf("%s unreachable a minute after the service was created", url)
			}
		}
		total += time.Since(start)
		b.StopTimer()
		if err := admin.Delete(ctx, svc); err != nil {
			b.Fatal(err)
		}
		eventually(b, func() error {
			if answers() {
				return fmt.Errorf("%s still answers after the service was deleted", url)
			}
			return nil
		})
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-reachable")
}

// ensureNetwork is nsNetwork unless the namespace exists (a benchmark runs
// its body several times).
func ensureNetwork(b *testing.B, ns, topology, subnet string) {
	b.Helper()
	err := admin.Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{})
	if err == nil {
		return
	}
	nsNetwork(b, ns, topology, subnet)
}
