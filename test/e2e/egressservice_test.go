package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressservice"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestEgressService: a LoadBalancer Service of a Layer3 tenant (its
// load-balancer IP written into its status, as an announcer would) with an
// EgressService: cluster-manager elects the node running its endpoint and
// labels it; the endpoint's connections to the outside leave from the
// load-balancer IP, and the outside reaches the Service at that IP through
// the host; when the endpoint moves to another node, so does the host and
// the source; once the EgressService is deleted, the pod leaves from its
// node's address again.
func TestEgressService(t *testing.T) {
	ctx := context.Background()
	const ns, lbIP = "l3-blue", "192.168.100.170"
	endpoint := func(name, node string) string {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "esvc"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if err := admin.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		ref := ns + "/" + name
		serve(t, ref)
		return ref
	}
	first := endpoint("esvc-a", "node2")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "esvc"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Selector: map[string]string{"app": "esvc"},
		Ports:    []corev1.ServicePort{{Name: "probe", Protocol: corev1.ProtocolTCP, Port: demo.ProbePort, TargetPort: intstr.FromInt(demo.ProbePort)}}}}
	if err := admin.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), svc) })
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: lbIP}}
	if err := admin.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	es := &v1.EgressService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "esvc"}, Spec: v1.EgressServiceSpec{SourceIPBy: v1.SourceIPLoadBalancer}}
	if err := admin.Create(ctx, es); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), es) })
	hosted := func(node string) {
		t.Helper()
		eventually(t, func() error {
			var cur v1.EgressService
			if err := admin.Get(ctx, client.ObjectKeyFromObject(es), &cur); err != nil {
				return err
			}
			if cur.Status.Host != node {
				return fmt.Errorf("host %q, want %s", cur.Status.Host, node)
			}
			var n corev1.Node
			if err := admin.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				return err
			}
			if _, ok := n.Labels[egressservice.Label(ns, "esvc")]; !ok {
				return fmt.Errorf("%s lacks the label %s", node, egressservice.Label(ns, "esvc"))
			}
			return nil
		})
	}
	// seen waits for the outside to see the pod's connections from want,
	// and to reach the Service at the load-balancer IP.
	seen := func(pod, want string, ingress bool) {
		t.Helper()
		start := time.Now()
		eventually(t, func() error {
			got, err := probeOut(ctx, pod, 0)
			if err != nil || strings.TrimSpace(got) != want {
				return fmt.Errorf("%s to the outside: seen from %q (%v), want %s", pod, strings.TrimSpace(got), err, want)
			}
			if !ingress {
				return nil
			}
			answer, err := outside(binary, "sandbox", "probe", "--timeout", "1s", fmt.Sprintf("%s:%d", lbIP, demo.ProbePort))
			if err != nil {
				return fmt.Errorf("the outside to %s:%d: %v", lbIP, demo.ProbePort, err)
			}
			t.Logf("the outside reached the Service at %s:%d: %s", lbIP, demo.ProbePort, strings.TrimSpace(answer))
			return nil
		})
		t.Logf("%s: seen from %s %s after the change", pod, want, time.Since(start).Round(10*time.Millisecond))
	}
	hosted("node2")
	seen(first, lbIP, true)

	// The endpoint moves to node3: so does the host.
	second := endpoint("esvc-b", "node3")
	if err := admin.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "esvc-a"}}, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	hosted("node3")
	seen(second, lbIP, true)

	if err := admin.Delete(ctx, es); err != nil {
		t.Fatal(err)
	}
	seen(second, strings.Split(sandbox.NodeIP(3), "/")[0], false)
}
