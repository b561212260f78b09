package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// AppCheck is one check of the demo's Kubernetes-apps section: a name the
// cluster DNS must resolve, or a Deployment pod's server that must answer
// with the pod's name, asked from inside a pod.
type AppCheck struct {
	Name, From, Target string
	// Node is where the target pod runs (servers only).
	Node      string
	Want, Got string
	Err       error
}

// Pass reports whether the answer was the expected one.
func (a AppCheck) Pass() bool { return a.Err == nil && a.Got == a.Want }

// WaitDeployments waits until every Deployment of the namespaces has all its
// replicas Ready.
func WaitDeployments(ctx context.Context, c client.Client, namespaces []string, timeout time.Duration) error {
	return proc.WaitFor(timeout, 200*time.Millisecond, func() (bool, error) {
		for _, ns := range namespaces {
			var deps appsv1.DeploymentList
			if err := c.List(ctx, &deps, client.InNamespace(ns)); err != nil {
				return false, err
			}
			for _, d := range deps.Items {
				want := int32(1)
				if d.Spec.Replicas != nil {
					want = *d.Spec.Replicas
				}
				if d.Status.ReadyReplicas != want {
					return false, fmt.Errorf("deployment %s/%s: %d of %d replicas ready", ns, d.Name, d.Status.ReadyReplicas, want)
				}
			}
		}
		return true, nil
	})
}

// AppChecks checks, from pod `from`, what users of the namespaces' apps
// expect: every Service's EndpointSlices list its Ready pods, its name resolves to its ClusterIP through the
// cluster DNS, and every Ready pod a Deployment made that serves HTTP on
// ProbePort (agnhost netexec) answers /hostname with its own name.
func AppChecks(ctx context.Context, dir string, c client.Client, from string, namespaces []string) ([]AppCheck, error) {
	var out []AppCheck
	for _, ns := range namespaces {
		var svcs corev1.ServiceList
		if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		sort.Slice(svcs.Items, func(i, j int) bool { return svcs.Items[i].Name < svcs.Items[j].Name })
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, s := range svcs.Items {
			e, err := endpointsCheck(ctx, c, &s, pods.Items)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			name := fmt.Sprintf("%s.%s.svc.%s", s.Name, ns, sandbox.DNSDomain)
			a := AppCheck{Name: "Service name, cluster DNS", From: from, Target: name, Want: s.Spec.ClusterIP}
			got, err := run(ctx, dir, from, "getent", "hosts", name)
			if f := strings.Fields(got); err == nil && len(f) > 0 {
				a.Got = f[0]
			}
			a.Err = err
			out = append(out, a)
		}
		sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Spec.NodeName < pods.Items[j].Spec.NodeName })
		for _, p := range pods.Items {
			if !madeByDeployment(&p) || !kubeobj.PodReady(&p) || !servesProbePort(&p) {
				continue
			}
			url := fmt.Sprintf("http://%s:%d/hostname", p.Status.PodIP, ProbePort)
			a := AppCheck{Name: "Deployment pod's server", From: from, Target: url, Node: p.Spec.NodeName, Want: p.Name}
			// A server just started may not listen yet: retried briefly.
			a.Err = proc.WaitFor(5*time.Second, 200*time.Millisecond, func() (bool, error) {
				got, err := Get(ctx, dir, from, url)
				a.Got = strings.TrimSpace(got)
				return err == nil, err
			})
			out = append(out, a)
		}
	}
	return out, nil
}

// endpointsCheck compares the ready addresses of a Service's EndpointSlices
// with its Ready pods' addresses.
func endpointsCheck(ctx context.Context, c client.Client, s *corev1.Service, pods []corev1.Pod) (AppCheck, error) {
	var want []string
	sel := labels.SelectorFromSet(s.Spec.Selector)
	families := map[bool]bool{} // is IPv4 -> served
	for _, f := range s.Spec.IPFamilies {
		families[f == corev1.IPv4Protocol] = true
	}
	for _, p := range pods {
		if len(s.Spec.Selector) > 0 && sel.Matches(labels.Set(p.Labels)) && kubeobj.PodReady(&p) && p.DeletionTimestamp == nil {
			for _, ip := range p.Status.PodIPs {
				if a, err := netip.ParseAddr(ip.IP); err == nil && families[a.Is4()] {
					want = append(want, ip.IP)
				}
			}
		}
	}
	sort.Strings(want)
	a := AppCheck{Name: "Service endpoints (EndpointSlices)", From: "API", Target: s.Namespace + "/" + s.Name, Want: strings.Join(want, ",")}
	// The EndpointSlice controller follows pods' readiness shortly after.
	// A mismatch after the deadline shows as a failed check.
	_ = proc.WaitFor(10*time.Second, 100*time.Millisecond, func() (bool, error) {
		got, err := sandbox.ReadyEndpoints(ctx, c, s.Namespace, s.Name)
		if err != nil {
			return false, err
		}
		a.Got = strings.Join(got, ",")
		return a.Got == a.Want, nil
	})
	return a, nil
}

// run runs a command in pod ref and returns its output.
func run(ctx context.Context, dir, ref string, argv ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	code, err := sandbox.Exec(ctx, dir, ref, argv, nil, &stdout, &stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("%s exited %d: %s", argv[0], code, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), err
}

func madeByDeployment(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "ReplicaSet"
}

func servesProbePort(p *corev1.Pod) bool {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.ContainerPort == ProbePort && (port.Protocol == "" || port.Protocol == corev1.ProtocolTCP) {
				return true
			}
		}
	}
	return false
}

// PrintAppChecks prints the checks as a table and returns an error naming
// those that failed.
func PrintAppChecks(out io.Writer, checks []AppCheck) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHECK\tFROM\tTARGET\tEXPECTED\tANSWER\tRESULT")
	var bad []string
	for _, a := range checks {
		target := a.Target
		if a.Node != "" {
			target += " @" + a.Node
		}
		res := "PASS"
		if !a.Pass() {
			res = "FAIL"
			if a.Err != nil {
				res = "FAIL: " + a.Err.Error()
			}
			bad = append(bad, a.Name+" "+a.Target)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.From, target, a.Want, a.Got, res)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d app checks failed: %s", len(bad), len(checks), strings.Join(bad, "; "))
	}
	return nil
}
