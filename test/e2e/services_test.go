package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/epslicemirror"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/podnet"
	"github.com/ovn-udn/ovn-udn/internal/sandbox"
)

// echoService is a ClusterIP Service in front of deployment()'s pods.
func echoService(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
}

// get fetches url from inside a pod (a short timeout: a blocked service
// address answers nothing).
func get(ctx context.Context, pod, url string) (string, error) {
	var out, errOut bytes.Buffer
	code, err := sandbox.Exec(ctx, dir, pod, []string{binary, "agnhost", "get", "--timeout=2s", url}, nil, &out, &errOut)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", fmt.Errorf("exit %d: %s", code, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// primaryIPs returns the pods' addresses on their namespace's primary
// network (the default network's for default-network namespaces).
func primaryIPs(t *testing.T, pods []corev1.Pod) []string {
	t.Helper()
	var out []string
	for _, p := range pods {
		nets, err := podnet.Parse(p.Annotations)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range nets {
			if a.Role != podnet.RolePrimary {
				continue
			}
			for _, c := range a.IPs {
				ip, _, _ := net.ParseCIDR(c)
				if ip.To4() != nil {
					out = append(out, ip.String())
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// mirrored returns the ready addresses of a service's mirrored slices.
func mirrored(ctx context.Context, ns, name string) ([]string, error) {
	var list discoveryv1.EndpointSliceList
	if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{epslicemirror.LabelServiceName: name}); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range list.Items {
		if s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				out = append(out, e.Addresses...)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// lbBackends returns, per zone, the backends of a service's IPv4 VIP in the
// zone's Northbound.
func lbBackends(t *testing.T, svc *corev1.Service) (map[string]string, error) {
	t.Helper()
	out := map[string]string{}
	vip := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	for _, node := range []string{"node1", "node2", "node3"} {
		got, err := nbctl(node, "--bare", "--columns=vips", "find", "Load_Balancer", "external_ids:k8s.ovn.org/service="+svc.Namespace+"/"+svc.Name)
		if err != nil {
			return nil, err
		}
		out[node] = ""
		// vips prints as 10.96.x.y:80=a:8080,b:8080 (bare, quotes or not).
		for _, kv := range strings.Fields(strings.ReplaceAll(got, `"`, "")) {
			if b, ok := strings.CutPrefix(kv, vip+"="); ok {
				out[node] = b
			}
		}
	}
	return out, nil
}

// nbctl runs ovn-nbctl on a node's zone Northbound.
func nbctl(node string, args ...string) (string, error) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return "", err
	}
	for _, n := range st.Nodes {
		if n.Name == node {
			out, err := deps.OVNCommand("ovn-nbctl", append([]string{"--db=" + n.NB}, args...)...).CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("ovn-nbctl %v on %s: %v: %s", args, node, err, out)
			}
			return strings.TrimSpace(string(out)), nil
		}
	}
	return "", fmt.Errorf("no node %s", node)
}

// traceFromDefault traces a new TCP connection from a pod's default-network
// port to ip:port in its zone's Southbound.
func traceFromDefault(t *testing.T, pod, ip string, port int) ovntrace.Verdict {
	t.Helper()
	ns, name, _ := strings.Cut(pod, "/")
	p := &corev1.Pod{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	nets, err := podnet.Parse(p.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	def := nets[podnet.DefaultKey]
	addrs, err := def.Prefixes()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("pod %s default attachment %+v: %v", pod, def, err)
	}
	gw, _ := allocator.NthAddress(addrs[0].Masked(), 1)
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		t.Fatal(err)
	}
	sb := ""
	for _, n := range st.Nodes {
		if n.Name == p.Spec.NodeName {
			sb = n.SB
		}
	}
	v, err := ovntrace.Run(ovntrace.Options{SB: sb, CT: "new", Command: func(args ...string) *exec.Cmd { return deps.OVNCommand("ovn-trace", args...) }},
		p.Spec.NodeName, ovntrace.Packet{InPort: podnet.PortName(podnet.DefaultKey, ns, name), EthSrc: def.MAC, EthDst: allocator.MAC(gw).String(),
			IPSrc: addrs[0].Addr().String(), IPDst: ip, Proto: "tcp", SrcPort: 40000, DstPort: port}.Expr())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// traceProbe traces a TCP SYN from the pod's node's management port (where
// kubelet probes come from) to the pod's default-network address.
func traceProbe(t *testing.T, pod string, port int) ovntrace.Verdict {
	t.Helper()
	ns, name, _ := strings.Cut(pod, "/")
	p := &corev1.Pod{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	nets, err := podnet.Parse(p.Annotations)
	if err != nil {
		t.Fatal(err)
	}
	def := nets[podnet.DefaultKey]
	addrs, err := def.Prefixes()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("pod %s default attachment %+v: %v", pod, def, err)
	}
	mgmtPort := "k8s-" + p.Spec.NodeName
	out, err := nbctl(p.Spec.NodeName, "--bare", "--columns=addresses", "find", "Logical_Switch_Port", "name="+mgmtPort)
	f := strings.Fields(out)
	if err != nil || len(f) < 2 {
		t.Fatalf("management port %s addresses %q: %v", mgmtPort, out, err)
	}
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		t.Fatal(err)
	}
	sb := ""
	for _, n := range st.Nodes {
		if n.Name == p.Spec.NodeName {
			sb = n.SB
		}
	}
	// Both conntrack passes (the port's ingress and the pod's egress) see a
	// new connection.
	v, err := ovntrace.Run(ovntrace.Options{SB: sb, CT: "new", Extra: []string{"--ct=new"}, Command: func(args ...string) *exec.Cmd { return deps.OVNCommand("ovn-trace", args...) }},
		p.Spec.NodeName, ovntrace.Packet{InPort: mgmtPort, EthSrc: f[0], EthDst: def.MAC, IPSrc: f[1], IPDst: addrs[0].Addr().String(),
			Proto: "tcp", SrcPort: 40000, DstPort: port}.Expr())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestServicesPerNetwork: ClusterIP services (reached from one of their own
// pods, so hairpin too) in two Layer3 tenants with
// identical subnets, a Layer2 tenant and the default network each answer
// their own network's pods with their own backends (several of them), and
// no other network's; cluster DNS answers pods with a primary UDN through
// their default-network interface; mirrored EndpointSlices and load
// balancers follow scaling; a deleted Service leaves no slice and no row.
func TestServicesPerNetwork(t *testing.T) {
	ctx := context.Background()
	// svc-red: a second Layer3 tenant with shop's subnet (examples/).
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "svc-red", Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "svc-red", Name: "tenant"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.132.0.0/16/24"}}}
	for _, o := range []client.Object{ns, udn} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, ns) })
	cmtest.WaitNetworkCreated(t, admin, udn)
	// shop's and web's echo come with the examples; the others are made here.
	tenants := []struct {
		ns, app string
		create  bool
	}{{"shop", "echo", false}, {"svc-red", "svc", true}, {"l2-blue", "svc", true}, {"web", "echo", false}}
	for _, tn := range tenants {
		if !tn.create {
			continue
		}
		if err := admin.Create(ctx, deployment(tn.ns, tn.app, 3)); err != nil {
			t.Fatal(err)
		}
		if err := admin.Create(ctx, echoService(tn.ns, tn.app)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, tn := range tenants {
			if tn.create {
				_ = admin.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: tn.app}})
				_ = admin.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: tn.app}})
			}
		}
	})
	type target struct {
		ns, name string
		ip       string
		client   string          // one of its pods: reaching itself is hairpin
		backends map[string]bool // pod names
	}
	var targets []target
	for _, tn := range tenants {
		pods := readyPods(t, tn.ns, tn.app, 3)
		if tn.ns != "web" {
			want := primaryIPs(t, pods)
			eventually(t, func() error {
				got, err := mirrored(ctx, tn.ns, tn.app)
				if err != nil {
					return err
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("%s/%s mirrored slices hold %v, want the pods' primary addresses %v", tn.ns, tn.app, got, want)
				}
				return nil
			})
		}
		svc := &corev1.Service{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: tn.ns, Name: tn.app}, svc); err != nil {
			t.Fatal(err)
		}
		tg := target{ns: tn.ns, name: tn.app, ip: svc.Spec.ClusterIP, client: tn.ns + "/" + pods[0].Name, backends: map[string]bool{}}
		for _, p := range pods {
			tg.backends[p.Name] = true
		}
		targets = append(targets, tg)
	}
	for _, from := range targets {
		pod := from.client
		for _, to := range targets {
			url := "http://" + to.ip + "/hostname"
			if from.ns != to.ns {
				if body, err := get(ctx, pod, url); err == nil {
					t.Errorf("%s reached %s/%s at %s (answer %q); it is another network's service", pod, to.ns, to.name, to.ip, body)
				}
				continue
			}
			// Its own service: every answer is one of its backends, and
			// requests spread over more than one.
			seen := map[string]bool{}
			eventually(t, func() error {
				for i := 0; i < 12; i++ {
					body, err := get(ctx, pod, url)
					if err != nil {
						return fmt.Errorf("%s to its service %s: %v", pod, to.ip, err)
					}
					if !to.backends[body] {
						return fmt.Errorf("%s to its service %s answered %q, not one of its backends %v", pod, to.ip, body, to.backends)
					}
					seen[body] = true
				}
				if len(seen) < 2 {
					return fmt.Errorf("%s to its service %s: all answers from %v", pod, to.ip, seen)
				}
				return nil
			})
		}
	}

	// Cluster DNS from pods with a primary UDN (kube-dns is an
	// infrastructure service, reached through the default network).
	kapi := &corev1.Service{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, kapi); err != nil {
		t.Fatal(err)
	}
	for _, pod := range []string{"l3-blue/a", "l2-blue/a"} {
		var out, errOut bytes.Buffer
		code, err := sandbox.Exec(ctx, dir, pod, []string{"getent", "hosts", "kubernetes.default.svc.cluster.local"}, nil, &out, &errOut)
		if err != nil || code != 0 || !strings.HasPrefix(out.String(), kapi.Spec.ClusterIP+" ") {
			t.Errorf("DNS from %s: %q (exit %d, %v, %s), want %s", pod, out.String(), code, err, errOut.String(), kapi.Spec.ClusterIP)
		}
	}

	// The API server (its endpoint is outside the sandbox's pod networks) is
	// an infrastructure service too: a pod with a primary UDN's packet to it
	// passes the default network's isolation and leaves toward the endpoint;
	// to another default-network service it is dropped.
	if v := traceFromDefault(t, "l3-blue/a", kapi.Spec.ClusterIP, 443); v.Dropped() {
		t.Errorf("API server from l3-blue/a's default interface is dropped:\n%s", v.Trace)
	}
	if v := traceFromDefault(t, "l3-blue/a", targets[3].ip, 80); !v.Dropped() {
		t.Errorf("web/echo from l3-blue/a's default interface is delivered to %v, want dropped", v.Delivered())
	}

	// Kubelet probes come from the node's management port over the default
	// network: the isolation lets them reach a pod with a primary UDN.
	if v := traceProbe(t, "l3-blue/a", 8080); v.Dropped() {
		t.Errorf("a probe from the management port to l3-blue/a's default interface is dropped:\n%s", v.Trace)
	}

	// Scaling: mirrored slices and every zone's load balancer follow.
	red := &corev1.Service{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "svc-red", Name: "svc"}, red); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "svc-red", Name: "svc"}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To(int32(1))
	if err := admin.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		got, err := mirrored(ctx, "svc-red", "svc")
		if err != nil || len(got) != 1 {
			return fmt.Errorf("mirrored slices after scaling to 1: %v %v", got, err)
		}
		lbs, err := lbBackends(t, red)
		if err != nil {
			return err
		}
		for node, b := range lbs {
			if b != got[0]+":8080" {
				return fmt.Errorf("zone %s load balancer backends %q, want %s:8080", node, b, got[0])
			}
		}
		return nil
	})

	// Deleting the Service leaves no mirrored slice and no load balancer.
	if err := admin.Delete(ctx, red); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if got, err := mirrored(ctx, "svc-red", "svc"); err != nil || len(got) != 0 {
			return fmt.Errorf("mirrored slices after deleting the service: %v %v", got, err)
		}
		for _, node := range []string{"node1", "node2", "node3"} {
			got, err := nbctl(node, "--bare", "--columns=name", "find", "Load_Balancer", "external_ids:k8s.ovn.org/service=svc-red/svc")
			if err != nil || got != "" {
				return fmt.Errorf("zone %s still has load balancers %q (%v)", node, got, err)
			}
		}
		return nil
	})
}
