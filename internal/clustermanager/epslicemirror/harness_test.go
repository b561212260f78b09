package epslicemirror_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/epslicemirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

// kube-controller-manager's EndpointSlice controller makes the default
// slices; cluster-manager (under its own RBAC role) everything else.
func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{ControllerManager: true}, &env) }

// udnNamespace creates a namespace whose primary network is the
// UserDefinedNetwork "net" with this topology and these subnets, and returns
// it with the network's name and attachment key. cluster-manager allocates
// the addresses of pods on a Layer2 network; on a Layer3 network (a zone's
// job, and no zone runs here) pods have none until a test annotates them.
func udnNamespace(t *testing.T, c client.Client, topology v1.NetworkTopology, subnets ...v1.NetworkSubnet) (ns, network, key string) {
	t.Helper()
	ns = cmtest.Namespace(t, c, "mirror", map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: topology, Role: v1.Primary, Subnets: subnets}}
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, u)
	cmtest.WaitNetworkCreated(t, c, u)
	return ns, netconf.UDNNetworkName(ns, "net"), podnet.Key(ns, "net")
}

// service creates a Service selecting app=web on port 80 to the named port
// "http". (The test API server's services are IPv4 only, headless ones with a
// selector too: dual-stack is TestDesired's.)
func service(t *testing.T, c client.Client, ns, name string, selector map[string]string, headless bool) *corev1.Service {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: selector,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}
	if headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	if err := c.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	return svc
}

// node creates a Node for the test's pods: cluster-manager allocates Layer2
// addresses of scheduled pods, and the EndpointSlice controller leaves out
// pods of nodes it does not know.
func node(t *testing.T, c client.Client) string {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: cmtest.UniqueName("node")}}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, n)
	return n.Name
}

// pod creates a pod labelled app=web serving the named port "http" on node.
func pod(t *testing.T, c client.Client, ns, node, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "web", Image: "agnhost",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	// Gone before the network's cleanup, which waits for its pods.
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Errorf("cleanup: deleting pod %s: %v", p.Name, err)
		}
	})
	return p
}

// setStatus records what a kubelet would: the pod running with these
// default-network addresses, ready or not.
func setStatus(t *testing.T, c client.Client, p *corev1.Pod, ready bool, ips ...string) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs = ips[0], nil
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		return c.Status().Update(context.Background(), p)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// primaryAddrs waits until cluster-manager has given p its primary-network
// addresses and returns them.
func primaryAddrs(t *testing.T, c client.Client, p *corev1.Pod, key string) []string {
	t.Helper()
	var out []string
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		out = nil
		for _, a := range mirror.PrimaryAddrs(p, key) {
			out = append(out, a.String())
		}
		if len(out) == 0 {
			return fmt.Errorf("pod %s has no address on its primary network yet", p.Name)
		}
		return nil
	})
	return out
}

// endpoints summarizes the endpoints of svc's slices on network (ForService):
// one sorted line "<addressType> <pod> <address> ready=<r> terminating=<t>"
// each, and the slices' ports.
func endpoints(c client.Reader, svc *corev1.Service, network string) (string, error) {
	slices, err := mirror.ForService(context.Background(), c, svc, network)
	if err != nil {
		return "", err
	}
	var lines []string
	for _, s := range slices {
		for _, p := range s.Ports {
			lines = append(lines, fmt.Sprintf("%s port %s %d", s.AddressType, deref(p.Name), deref(p.Port)))
		}
		for _, e := range s.Endpoints {
			target := "-"
			if e.TargetRef != nil {
				target = e.TargetRef.Name
			}
			lines = append(lines, fmt.Sprintf("%s %s %s ready=%v terminating=%v", s.AddressType, target,
				strings.Join(e.Addresses, ","), deref(e.Conditions.Ready), deref(e.Conditions.Terminating)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n"), nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// waitEndpoints waits until endpoints says want.
func waitEndpoints(t *testing.T, c client.Reader, svc *corev1.Service, network string, want ...string) {
	t.Helper()
	sort.Strings(want)
	cmtest.Eventually(t, 0, func() error {
		got, err := endpoints(c, svc, network)
		if err != nil {
			return err
		}
		if got != strings.Join(want, "\n") {
			return fmt.Errorf("service %s on network %s:\n%s\nwant:\n%s", svc.Name, network, got, strings.Join(want, "\n"))
		}
		return nil
	})
}

// writes runs a mirror reconcile of svc over c (direct reads) and returns
// how many writes it made.
func writes(t *testing.T, c client.WithWatch, svc *corev1.Service) int {
	t.Helper()
	var n atomic.Int64
	count := interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			n.Add(1)
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			n.Add(1)
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			n.Add(1)
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			n.Add(1)
			return c.Delete(ctx, o, opts...)
		},
	}
	r := &epslicemirror.Controller{Client: interceptor.NewClient(c, count)}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(svc)}); err != nil {
		t.Fatal(err)
	}
	return int(n.Load())
}

// mirrors lists the slices managed here for svc (whatever their network).
func mirrors(t *testing.T, c client.Reader, svc *corev1.Service) []discoveryv1.EndpointSlice {
	t.Helper()
	var list discoveryv1.EndpointSliceList
	if err := c.List(context.Background(), &list, client.InNamespace(svc.Namespace),
		client.MatchingLabels{mirror.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: mirror.ManagedBy}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}
