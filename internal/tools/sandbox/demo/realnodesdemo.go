package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// RealNodeNamespaces are the namespaces, one per kind of network, where
// the real-nodes section of the demo runs a Deployment made Ready by the
// kubelet's probes: the examples' default-network app, Layer3 and Layer2
// tenants.
var RealNodeNamespaces = []struct{ Namespace, Network string }{
	{"web", "default network"}, {"l3-blue", "Layer3 primary UDN"}, {"l2-blue", "Layer2 primary UDN"},
}

// ProbedDeployment is an ordinary Deployment of agnhost's netexec (HTTP on
// 8080) with the three kinds of kubelet probe: startup by exec, readiness
// over HTTP, liveness over TCP; its replicas on distinct nodes.
func ProbedDeployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
				Containers: []corev1.Container{{Name: "web", Image: sandbox.AgnhostImage, Args: []string{"netexec", "--http-port=8080", "--udp-port=0"},
					StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
						Command: []string{"/agnhost", "connect", "--timeout=1s", "127.0.0.1:8080"}}}, PeriodSeconds: 1, FailureThreshold: 30},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
					LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 2},
				}}}}}}
}

// RealNodesDemo prints the real nodes' kubelet and runtime, and, per kind
// of network, a Deployment with probes made Ready by its kubelet (then
// deleted); for a primary user-defined network, also that no other
// process of the node reaches the pod's default interface (ping), and
// that a host-network pod of its namespace reaches only its network's
// ClusterIP (hostNetworkConfined).
func RealNodesDemo(ctx context.Context, dir string, c client.Client, out io.Writer) error {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return err
	}
	var checks []AppCheck
	for _, n := range nodes.Items {
		ni := n.Status.NodeInfo
		runtime, _, _ := strings.Cut(ni.ContainerRuntimeVersion, "://")
		checks = append(checks, AppCheck{Name: "the node's kubelet and runtime", From: "API", Target: n.Name,
			Want: "v1.34.10 containerd", Got: ni.KubeletVersion + " " + runtime})
	}
	const name = "probed"
	for _, x := range RealNodeNamespaces {
		if err := c.Create(ctx, ProbedDeployment(x.Namespace, name, 1)); err != nil {
			return fmt.Errorf("probed Deployment in %s: %w", x.Namespace, err)
		}
	}
	for _, x := range RealNodeNamespaces {
		a := AppCheck{Name: "Ready by its probes, " + x.Network, From: "kubelet", Target: x.Namespace + "/" + name,
			Want: "Ready, no restart"}
		a.Err = proc.WaitFor(2*time.Minute, 200*time.Millisecond, func() (bool, error) {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(x.Namespace), client.MatchingLabels{"app": name}); err != nil {
				return false, err
			}
			for _, p := range pods.Items {
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Ready && cs.Started != nil && *cs.Started {
						a.Got, a.Node = fmt.Sprintf("Ready, %s", restarts(cs.RestartCount)), p.Spec.NodeName
						return true, nil
					}
				}
			}
			return false, fmt.Errorf("no pod of %s/%s Ready yet", x.Namespace, name)
		})
		checks = append(checks, a)
		if a.Err == nil && x.Namespace != "web" {
			checks = append(checks, hostBlocked(ctx, dir, c, x.Namespace, name, x.Network))
		}
	}
	checks = append(checks, hostNetworkConfined(ctx, dir, c, name)...)
	for _, x := range RealNodeNamespaces {
		_ = c.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: x.Namespace, Name: name}})
	}
	fmt.Fprintf(out, "\nReal nodes (each node's kubelet and containerd; pods plumbed through ovn-udn's CNI plugin, probed by the kubelet through the node's management port):\n\n")
	return PrintAppChecks(out, checks)
}

// hostBlocked checks that a ping from the node of app's pod, by a
// process other than the kubelet, does not reach the pod's default
// interface (internal/node/hostisolation), while its probes pass. Deployed
// from the image, the node agent has no kubelet cgroup and isolation is
// off (docs/install.md): the ping then reaches the pod, and the row says so.
func hostBlocked(ctx context.Context, dir string, c client.Client, namespace, app, network string) AppCheck {
	a := AppCheck{Name: "another process of its node reaches its default interface, " + network, From: "node (ping)",
		Target: namespace + "/" + app, Want: "blocked"}
	want := "blocked"
	if st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir)); err == nil && st.Deployed {
		want, a.Want = "reached", "reached (deployed: host isolation off, docs/install.md)"
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"app": app}); err != nil || len(pods.Items) == 0 {
		a.Err = fmt.Errorf("no pod of %s/%s: %v", namespace, app, err)
		return a
	}
	p := pods.Items[0]
	a.Node = p.Spec.NodeName
	// The agent's table takes the pod's address within a reconcile.
	_ = proc.WaitFor(30*time.Second, 500*time.Millisecond, func() (bool, error) {
		code, err := sandbox.ExecNetns(ctx, dir, p.Spec.NodeName, []string{"ping", "-c", "1", "-W", "1", p.Status.PodIP}, nil, io.Discard, io.Discard)
		switch {
		case err != nil:
			a.Got = err.Error()
		case code == 0:
			a.Got = "reached"
		default:
			a.Got = "blocked"
		}
		return a.Got == want, nil
	})
	if a.Got == want {
		a.Got = a.Want
	}
	return a
}

func restarts(n int32) string {
	if n == 0 {
		return "no restart"
	}
	return fmt.Sprintf("%d restarts", n)
}
