package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
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
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// echoService is a ClusterIP Service in front of deployment()'s pods.
func echoService(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
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
	if err := admin.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{mirror.LabelServiceName: name}); err != nil {
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
	for _, n := range []string{"node1", "node2", "node3"} {
		got, err := nbctl(t, n, "--bare", "--columns=vips", "find", "Load_Balancer", "external_ids:k8s.ovn.org/service="+svc.Namespace+"/"+svc.Name)
		if err != nil {
			return nil, err
		}
		out[n] = ""
		// vips prints as 10.96.x.y:80=a:8080,b:8080 (bare, quotes or not).
		for _, kv := range strings.Fields(strings.ReplaceAll(got, `"`, "")) {
			if b, ok := strings.CutPrefix(kv, vip+"="); ok {
				out[n] = b
			}
		}
	}
	return out, nil
}

// node returns a sandbox node's state (its zone's databases).
func node(t testing.TB, name string) sandbox.NodeState {
	t.Helper()
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return sandbox.NodeState{}
}

// nbctl runs ovn-nbctl on a node's zone Northbound.
func nbctl(t *testing.T, name string, args ...string) (string, error) {
	out, err := deps.OVNCommand("ovn-nbctl", append([]string{"--db=" + node(t, name).NB}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ovn-nbctl %v on %s: %v: %s", args, name, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// defaultAttachment returns a pod, its default-network attachment and its
// first address there (with the on-link prefix length).
func defaultAttachment(t *testing.T, ref string) (*corev1.Pod, podnet.Attachment, netip.Prefix) {
	t.Helper()
	ns, name, _ := strings.Cut(ref, "/")
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
		t.Fatalf("pod %s default attachment %+v: %v", ref, def, err)
	}
	return p, def, addrs[0]
}

// trace runs ovn-trace for a TCP SYN entering a node's switch (the node's
// default-network switch), every conntrack pass seeing a new connection.
func trace(t *testing.T, nodeName string, ctPasses int, pkt ovntrace.Packet) ovntrace.Verdict {
	t.Helper()
	var extra []string
	for i := 1; i < ctPasses; i++ {
		extra = append(extra, "--ct=new")
	}
	pkt.Proto, pkt.SrcPort = "tcp", 40000
	v, err := ovntrace.Run(ovntrace.Options{SB: node(t, nodeName).SB, CT: "new", Extra: extra,
		Command: func(args ...string) *exec.Cmd { return deps.OVNCommand("ovn-trace", args...) }}, nodeName, pkt.Expr())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// traceFromDefault traces a new TCP connection from a pod's default-network
// port to ip:port (through its gateway).
func traceFromDefault(t *testing.T, pod, ip string, port int) ovntrace.Verdict {
	t.Helper()
	p, def, addr := defaultAttachment(t, pod)
	gw, _ := allocator.NthAddress(addr.Masked(), 1)
	return trace(t, p.Spec.NodeName, 1, ovntrace.Packet{InPort: podnet.PortName(podnet.DefaultKey, p.Namespace, p.Name),
		EthSrc: def.MAC, EthDst: allocator.MAC(gw).String(), IPSrc: addr.Addr().String(), IPDst: ip, DstPort: port})
}

// traceProbe traces a TCP SYN from the pod's node's management port (where
// kubelet probes come from) to the pod's default-network address: both
// conntrack passes (the port's ingress and the pod's egress) see it new.
func traceProbe(t *testing.T, pod string, port int) ovntrace.Verdict {
	t.Helper()
	p, def, addr := defaultAttachment(t, pod)
	mgmtPort := "k8s-" + p.Spec.NodeName
	out, err := nbctl(t, p.Spec.NodeName, "--bare", "--columns=addresses", "find", "Logical_Switch_Port", "name="+mgmtPort)
	f := strings.Fields(out)
	if err != nil || len(f) < 2 {
		t.Fatalf("management port %s addresses %q: %v", mgmtPort, out, err)
	}
	return trace(t, p.Spec.NodeName, 2, ovntrace.Packet{InPort: mgmtPort, EthSrc: f[0], EthDst: def.MAC, IPSrc: f[1], IPDst: addr.Addr().String(), DstPort: port})
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
		ns, ip string
		client string // one of its pods: reaching itself is hairpin
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
		targets = append(targets, target{ns: tn.ns, ip: svc.Spec.ClusterIP, client: tn.ns + "/" + pods[0].Name})
	}
	// From one pod of each (reaching its own Service is hairpin): its own
	// network's Service answers, always from its pods and from more than
	// one; every other network's does not answer; cluster DNS answers the
	// UDN pods through their default-network interface. The demo's table,
	// with twice its requests.
	var namespaces, clients []string
	for _, tg := range targets {
		namespaces, clients = append(namespaces, tg.ns), append(clients, tg.client)
	}
	checks, err := demo.ServiceChecks(ctx, dir, admin, namespaces, clients, 2*demo.DemoServiceRequests)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := demo.PrintAppChecks(&table, checks); err != nil {
		t.Errorf("%v\n%s", err, table.String())
	}
	if want := len(targets)*len(clients) + 3; len(checks) != want { // + DNS from the three UDN clients
		t.Errorf("%d checks, want %d:\n%s", len(checks), want, table.String())
	}

	// The API server (its endpoint is outside the sandbox's pod networks) is
	// an infrastructure service too: a pod with a primary UDN's packet to it
	// passes the default network's isolation and leaves toward the endpoint;
	// to another default-network service it is dropped.
	kapi := &corev1.Service{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, kapi); err != nil {
		t.Fatal(err)
	}
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
		for n, b := range lbs {
			if b != got[0]+":8080" {
				return fmt.Errorf("zone %s load balancer backends %q, want %s:8080", n, b, got[0])
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
		for _, n := range []string{"node1", "node2", "node3"} {
			got, err := nbctl(t, n, "--bare", "--columns=name", "find", "Load_Balancer", "external_ids:k8s.ovn.org/service=svc-red/svc")
			if err != nil || got != "" {
				return fmt.Errorf("zone %s still has load balancers %q (%v)", n, got, err)
			}
		}
		return nil
	})
}
