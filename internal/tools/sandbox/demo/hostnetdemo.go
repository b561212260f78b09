package demo

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// hostNetworkConfined runs a host-network pod in the Layer3 tenant's
// namespace on node1 and sends, from inside it (kubectl exec: the pod's
// cgroup), a UDP datagram to a Service of app (port 8080) in each of
// RealNodeNamespaces. The node's table (internal/node/hostisolation) lets
// the one to its own network's ClusterIP out and refuses the others: the
// send fails with EPERM. Whether an answer comes is not asked: the demo's
// sandbox has several uplinks, where the host reaches no ClusterIP (a
// known problem, docs/gateway.md). Deployed from the image, isolation is
// off (docs/install.md) and all three go out. The Services and the pod
// are deleted after.
func hostNetworkConfined(ctx context.Context, dir string, c client.Client, app string) []AppCheck {
	const from, node = "l3-blue", "node1"
	deployed := false
	if st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir)); err == nil && st.Deployed {
		deployed = true
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: from, Name: "hostnet"}, Spec: corev1.PodSpec{NodeName: node, HostNetwork: true,
		Containers: []corev1.Container{{Name: "c", Image: sandbox.AgnhostImage, Args: []string{"pause"}}}}}
	objs := []client.Object{pod}
	clusterIPs := map[string]string{}
	for _, x := range RealNodeNamespaces {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: x.Namespace, Name: app}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": app}, Ports: []corev1.ServicePort{{Port: 8080, TargetPort: intstr.FromInt32(8080)}}}}
		objs = append(objs, svc)
	}
	var checks []AppCheck
	fail := func(err error) []AppCheck {
		return append(checks, AppCheck{Name: "a host-network pod of a primary-UDN namespace", From: from + "/hostnet", Err: err})
	}
	defer func() { // also what a failed create left
		for _, o := range objs {
			_ = c.Delete(ctx, o)
		}
	}()
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fail(err)
		}
	}
	for _, x := range RealNodeNamespaces {
		svc := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: x.Namespace, Name: app}, svc); err != nil {
			return fail(err)
		}
		clusterIPs[x.Namespace] = svc.Spec.ClusterIP
	}
	kubectl := func(args ...string) error {
		out, err := exec.CommandContext(ctx, deps.KubeBinary("kubectl"), append([]string{"--kubeconfig", filepath.Join(dir, "kubeconfig")}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := kubectl("-n", from, "wait", "--for=condition=Ready", "pod/hostnet", "--timeout=60s"); err != nil {
		return fail(err)
	}
	for _, x := range RealNodeNamespaces {
		const out, refused = "let out", "refused by its node"
		want := refused
		if x.Namespace == from || deployed {
			want = out
		}
		a := AppCheck{Name: "a host-network pod of a primary-UDN namespace, UDP to a ClusterIP of the " + x.Network, From: from + "/hostnet",
			Target: x.Namespace + "/" + app, Node: node, Want: want}
		if deployed && x.Namespace != from {
			a.Want = out + " (deployed: host isolation off, docs/install.md)"
		}
		to := net.JoinHostPort(clusterIPs[x.Namespace], "8080")
		// The agent's table takes the pod and the Services within seconds:
		// wait for the expected outcome, then it is what holds.
		_ = proc.WaitFor(30*time.Second, 500*time.Millisecond, func() (bool, error) {
			// agnhost says how the datagram fared: sent and answered (no
			// error), sent without an answer (TIMEOUT, REFUSED), or not sent
			// (the node's EPERM). Anything else (kubectl, the exec) is no
			// answer to the question.
			err := kubectl("-n", from, "exec", "hostnet", "--", "/agnhost", "connect", "--protocol=udp", "--timeout=1s", to)
			switch {
			case err == nil, strings.Contains(err.Error(), "TIMEOUT:"), strings.Contains(err.Error(), "REFUSED:"):
				a.Got, a.Err = out, nil
			case strings.Contains(err.Error(), "operation not permitted"):
				a.Got, a.Err = refused, nil
			default:
				a.Got, a.Err = "", err
			}
			return a.Got == want, nil
		})
		if a.Got == want {
			a.Got = a.Want
		}
		checks = append(checks, a)
	}
	return checks
}
