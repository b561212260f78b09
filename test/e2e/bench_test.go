package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// BenchmarkPodReady measures, in the sandbox, how long a pod of a Layer2
// primary UDN takes from Create to Ready — annotated by cluster-manager and
// the zone controller, plumbed by the node agent, its ports installed by
// ovn-controller — with OVN_UDN_BENCH_PODS pods (default 60) created at once
// over the three nodes. It reports the p50, p99 and max latency and the time
// until all were ready.
func BenchmarkPodReady(b *testing.B) {
	n := 60
	if v := os.Getenv("OVN_UDN_BENCH_PODS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	for iter := 0; iter < b.N; iter++ {
		addSum0, addCount0 := cniAdds(b)
		created := map[string]time.Time{}
		ready := map[string]time.Duration{}
		annotated := map[string]time.Duration{}
		start := time.Now()
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("bench-%d-%d-%d", time.Now().UnixNano()%100000, iter, i)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "l2-blue", Name: name},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("node%d", i%3+1), Containers: []corev1.Container{{Name: "app", Image: sandbox.PauseImage}}}}
			created[name] = time.Now()
			if err := admin.Create(ctx, pod); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(5 * time.Minute)
		for len(ready) < n {
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d pods ready after 5 minutes", len(ready), n)
			}
			var list corev1.PodList
			if err := admin.List(ctx, &list, client.InNamespace("l2-blue")); err != nil {
				b.Fatal(err)
			}
			for i := range list.Items {
				p := &list.Items[i]
				t0, ok := created[p.Name]
				if _, done := ready[p.Name]; ok && !done && kubeobj.PodReady(p) {
					ready[p.Name] = time.Since(t0)
				}
				if nets, _ := podnet.Parse(p.Annotations); ok && len(nets) == 2 && len(nets["l2-blue/tenant"].IPs) > 0 && len(nets["default"].IPs) > 0 {
					if _, done := annotated[p.Name]; !done {
						annotated[p.Name] = time.Since(t0)
					}
				}
			}
			time.Sleep(20 * time.Millisecond) // a poll interval: Ready times are read to ±20 ms
		}
		all := time.Since(start)
		var lat []time.Duration
		for _, d := range ready {
			lat = append(lat, d)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		var ann []time.Duration
		for _, d := range annotated {
			ann = append(ann, d)
		}
		sort.Slice(ann, func(i, j int) bool { return ann[i] < ann[j] })
		b.ReportMetric(float64(ann[len(ann)/2].Milliseconds()), "annotated-p50-ms")
		b.ReportMetric(float64(ann[len(ann)-1].Milliseconds()), "annotated-max-ms")
		b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Milliseconds()), "p99-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "max-ms")
		b.ReportMetric(all.Seconds(), "all-ready-s")
		if sum, count := cniAdds(b); count > addCount0 { // real nodes: the CNI ADDs inside
			b.ReportMetric((sum-addSum0)/(count-addCount0)*1000, "cni-add-mean-ms")
		}
		for name := range created {
			_ = admin.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "l2-blue", Name: name}})
		}
	}
}

// cniAdds sums the node agents' successful CNI ADDs (seconds and count)
// from their /metrics.
func cniAdds(b *testing.B) (sum, count float64) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range st.Processes {
		if !strings.HasPrefix(p.Name, "node-agent/") || p.Metrics == "" {
			continue
		}
		resp, err := http.Get("http://" + p.Metrics + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if !strings.Contains(line, `outcome="ok"`) {
				continue
			}
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			v, _ := strconv.ParseFloat(f[1], 64)
			switch {
			case strings.HasPrefix(line, "ovn_udn_cni_add_duration_seconds_sum"):
				sum += v
			case strings.HasPrefix(line, "ovn_udn_cni_add_duration_seconds_count"):
				count += v
			}
		}
	}
	return sum, count
}
