package e2e

import (
	"context"
	"fmt"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestHostNetworkPodsConfined: a host-network pod of a namespace with a
// primary user-defined network (seed 002, "Services" and "Host Networked
// Pods") reaches its own network's ClusterIP and the cluster DNS, and not
// another tenant's ClusterIP, a default-network ClusterIP or a
// default-network pod, while a host-network pod of a default-network
// namespace on the same node reaches all of them (what blocks is the
// confinement, not the path). The node agent's nftables table does it
// (internal/node/hostisolation), by the pod's cgroup.
func TestHostNetworkPodsConfined(t *testing.T) {
	s := startRealSandbox(t)
	ctx := context.Background()
	const node = "node1"
	nets := map[string]*v1.UserDefinedNetworkSpec{
		"hn-plain": nil,
		"hn-blue":  {Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.162.0.0/16/24"}},
		"hn-green": {Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.163.0.0/16"}},
	}
	// One replica per node: every network is used on node1, so its
	// ClusterIP is routed there for the host (docs/gateway.md).
	s.namespaces(t, nets, func(ns string) []client.Object {
		return []client.Object{demo.ProbedDeployment(ns, "web", 3),
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
				Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "host"}, Spec: corev1.PodSpec{NodeName: node, HostNetwork: true,
				Containers: []corev1.Container{{Name: "c", Image: sandbox.AgnhostImage, Args: []string{"pause"}}}}},
		}
	})
	// Host-network pods stay out of other tests' counts of plumbed pods:
	// gone with the test.
	t.Cleanup(func() {
		for ns := range nets {
			_ = s.c.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "host"}})
		}
	})
	clusterIP := map[string]string{}
	for ns := range nets {
		if out, err := s.kubectl("-n", ns, "wait", "--for=condition=Available", "deploy/web", "--timeout=120s"); err != nil {
			t.Fatalf("deployment %s/web: %v: %s", ns, err, out)
		}
		if out, err := s.kubectl("-n", ns, "wait", "--for=condition=Ready", "pod/host", "--timeout=60s"); err != nil {
			t.Fatalf("pod %s/host: %v: %s", ns, err, out)
		}
		svc := &corev1.Service{}
		if err := s.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, svc); err != nil {
			t.Fatal(err)
		}
		clusterIP[ns] = svc.Spec.ClusterIP
	}
	var plain corev1.PodList
	if err := s.c.List(ctx, &plain, client.InNamespace("hn-plain"), client.MatchingLabels{"app": "web"}); err != nil || len(plain.Items) == 0 {
		t.Fatalf("hn-plain's web pods: %v", err)
	}
	connect := func(ns, to string) error {
		out, err := s.kubectl("-n", ns, "exec", "host", "--", "/agnhost", "connect", "--timeout=1s", to)
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	dns := net.JoinHostPort(sandbox.DNSServiceIP, "53")
	reached := []string{net.JoinHostPort(clusterIP["hn-blue"], "8080"), dns}
	// What the confined pod reaches, and so does the control.
	for _, to := range reached {
		for _, from := range []string{"hn-blue", "hn-plain"} {
			eventually(t, func() error {
				if err := connect(from, to); err != nil {
					return fmt.Errorf("%s/host on %s does not reach %s: %v", from, node, to, err)
				}
				return nil
			})
		}
	}
	for name, to := range map[string]string{
		"another tenant's ClusterIP":      net.JoinHostPort(clusterIP["hn-green"], "8080"),
		"a default-network ClusterIP":     net.JoinHostPort(clusterIP["hn-plain"], "8080"),
		"a default-network pod's address": net.JoinHostPort(plain.Items[0].Status.PodIP, "8080"),
	} {
		eventually(t, func() error {
			if err := connect("hn-plain", to); err != nil {
				return fmt.Errorf("the control, hn-plain/host on %s, does not reach %s (%s): %v", node, name, to, err)
			}
			return nil
		})
		// The table follows the pod within a reconcile: wait for it, then
		// it holds.
		eventually(t, func() error {
			if connect("hn-blue", to) == nil {
				return fmt.Errorf("hn-blue/host, a host-network pod with a primary network, reaches %s (%s)", name, to)
			}
			return nil
		})
		for range 2 {
			if connect("hn-blue", to) == nil {
				t.Errorf("hn-blue/host reached %s (%s) once blocked", name, to)
			}
		}
	}
	// Once the confinement holds, what it lets by still passes.
	for _, to := range reached {
		if err := connect("hn-blue", to); err != nil {
			t.Errorf("hn-blue/host, confined, no longer reaches %s: %v", to, err)
		}
	}
}
