package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// EgressServiceIP is the demo's load-balancer IP, on the nodes' subnet (as
// an announcer such as MetalLB would give it), which it writes into the
// Service's status itself.
const EgressServiceIP = "192.168.100.170"

// EgressServiceChecks runs an EgressService on a Layer3 tenant (l3-blue):
// an endpoint pod on node2, a LoadBalancer Service "esvc" with
// EgressServiceIP, and its EgressService. It checks the host
// cluster-manager elects (the endpoint's node, labelled); that the
// endpoint's connections reach the outside from the load-balancer IP; that
// the outside reaches the Service at that IP; that when the endpoint moves
// to node3 the host and the source follow; and that once the EgressService
// is deleted the pod leaves from its node's address. It deletes what it
// made.
func EgressServiceChecks(ctx context.Context, dir, binary string, c client.Client) ([]AppCheck, error) {
	const ns = "l3-blue"
	var made []client.Object
	defer func() {
		for _, o := range made {
			_ = c.Delete(context.Background(), o, client.GracePeriodSeconds(0))
		}
	}()
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	endpoint := func(name, node string) (string, error) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "esvc"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if err := c.Create(ctx, p); err != nil {
			return "", err
		}
		made = append(made, p)
		ref := ns + "/" + name
		if err := WaitPodsReady(ctx, dir, c, []string{ref}, 2*time.Minute); err != nil {
			return "", err
		}
		stop, err := Servers(ctx, dir, binary, c, []string{ref})
		if err != nil {
			return "", err
		}
		stops = append(stops, stop)
		return ref, nil
	}
	first, err := endpoint("esvc-a", sandbox.NodeName(2))
	if err != nil {
		return nil, err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "esvc"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
		Selector: map[string]string{"app": "esvc"},
		Ports:    []corev1.ServicePort{{Name: "probe", Protocol: corev1.ProtocolTCP, Port: ProbePort, TargetPort: intstr.FromInt(ProbePort)}}}}
	if err := c.Create(ctx, svc); err != nil {
		return nil, err
	}
	made = append(made, svc)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: EgressServiceIP}}
	if err := c.Status().Update(ctx, svc); err != nil {
		return nil, err
	}
	es := &v1.EgressService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "esvc"}, Spec: v1.EgressServiceSpec{SourceIPBy: v1.SourceIPLoadBalancer}}
	if err := c.Create(ctx, es); err != nil {
		return nil, err
	}
	made = append(made, es)
	label := v1.EgressServiceLabelPrefix + ns + "-esvc"
	hosted := func(node string) AppCheck {
		check := AppCheck{Name: "host elected, labelled " + label, From: "cluster-manager", Target: "EgressService " + ns + "/esvc", Want: node}
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			var cur v1.EgressService
			if err := c.Get(ctx, client.ObjectKeyFromObject(es), &cur); err != nil {
				return false, err
			}
			var n corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				return false, err
			}
			_, labelled := n.Labels[label]
			check.Got = cur.Status.Host
			return check.Got == node && labelled, nil
		})
		return check
	}
	server := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)
	source := func(name, pod, want string) AppCheck {
		check := AppCheck{Name: name, From: pod, Target: server, Want: want}
		start := time.Now()
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			got, err := run(ctx, dir, pod, binary, "sandbox", "probe", "--timeout", "1s", server)
			check.Got = strings.TrimSpace(got)
			if err != nil {
				check.Got = err.Error()
			}
			return check.Got == want, nil
		})
		check.Name += fmt.Sprintf(" (%s)", time.Since(start).Round(10*time.Millisecond))
		return check
	}
	ingress := func(pod string) AppCheck {
		check := AppCheck{Name: "the outside reaches the Service at its load-balancer IP", From: "outside",
			Target: fmt.Sprintf("%s:%d", EgressServiceIP, ProbePort), Want: pod}
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			out, err := sandbox.Command(ctx, sandbox.NewLayoutMust(dir).ExternalNetns(),
				[]string{binary, "sandbox", "probe", "--timeout", "1s", check.Target}).Output()
			check.Got = strings.TrimSpace(string(out))
			if err != nil {
				check.Got = err.Error()
			}
			return check.Got == pod, nil
		})
		return check
	}
	checks := []AppCheck{hosted(sandbox.NodeName(2)), source("the endpoint's connections", first, EgressServiceIP), ingress(first)}
	second, err := endpoint("esvc-b", sandbox.NodeName(3))
	if err != nil {
		return nil, err
	}
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "esvc-a"}}, client.GracePeriodSeconds(0)); err != nil {
		return nil, err
	}
	checks = append(checks, hosted(sandbox.NodeName(3)), source("the endpoint moved to node3", second, EgressServiceIP), ingress(second))
	if err := c.Delete(ctx, es); err != nil {
		return nil, err
	}
	checks = append(checks, source("the EgressService deleted", second, sandbox.NodeAddr(sandbox.NodeName(3))))
	return checks, nil
}

// EgressServiceDemo prints EgressServiceChecks, in a sandbox of three
// nodes or more with the examples' l3-blue.
func EgressServiceDemo(ctx context.Context, dir, binary string, c client.Client, nodes int, out io.Writer) error {
	var ns corev1.Namespace
	if nodes < 3 || c.Get(ctx, client.ObjectKey{Name: "l3-blue"}, &ns) != nil {
		return nil
	}
	checks, err := EgressServiceChecks(ctx, dir, binary, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nEgressService (ovn-kubernetes' shape: a LoadBalancer Service's endpoints leave from its load-balancer IP %s through one host cluster-manager elects among the nodes running an endpoint, which answers for that IP; docs/egressservice.md):\n\n", EgressServiceIP)
	return PrintAppChecks(out, checks)
}
