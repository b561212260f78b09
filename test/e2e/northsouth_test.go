package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/gatewayflows"
	"github.com/ovn-udn/ovn-udn/internal/rows/gateway"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// nsNetwork creates a namespace with a primary UDN.
func nsNetwork(t testing.TB, ns, topology, subnet string) {
	t.Helper()
	ctx := context.Background()
	spec := v1.UserDefinedNetworkSpec{Topology: v1.NetworkTopology(topology), Role: v1.Primary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(subnet)}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}},
		&v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}, Spec: spec},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// A pod created before its namespace's primary network would keep the
	// network from being created (the seed's rule).
	eventually(t, func() error {
		nad := &nadv1.NetworkAttachmentDefinition{}
		return admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net"}, nad)
	})
	if err := admin.Create(ctx, podOn(ns, "a", "node1", nil)); err != nil {
		t.Fatal(err)
	}
}

// nodePortService is a NodePort Service in front of deployment()'s pods.
func nodePortService(ns, name string, nodePort int32, local bool) *corev1.Service {
	s := echoService(ns, name)
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.Ports[0].NodePort = nodePort
	if local {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	return s
}

// inNetns runs argv in a network namespace and returns its trimmed output.
func inNetns(ctx context.Context, netns string, argv ...string) (string, error) {
	out, err := sandbox.Command(ctx, netns, argv).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// outside runs argv in the outside world.
func outside(argv ...string) (string, error) {
	return inNetns(context.Background(), sandbox.NewLayoutMust(dir).ExternalNetns(), argv...)
}

// probeOut probes the outside echo server from a pod; the answer is the
// client address the outside saw.
func probeOut(ctx context.Context, pod string, localPort int) (string, error) {
	netns, err := sandbox.PodNetns(ctx, dir, admin, pod)
	if err != nil {
		return "", err
	}
	return inNetns(ctx, netns, binary, "sandbox", "probe", "--local-port", strconv.Itoa(localPort),
		fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort))
}

// outsideProbe probes targets at once from the outside world (TCP: the
// first line; UDP: the answer to "hostname").
func outsideProbe(t *testing.T, targets []demo.ReachTarget) []demo.ReachAnswer {
	t.Helper()
	answers, err := demo.ProbeManyIn(context.Background(), binary, sandbox.NewLayoutMust(dir).ExternalNetns(), targets, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// heldConn is one TCP connection from a pod to the outside echo server,
// held open by `ovn-udn sandbox hold`.
type heldConn struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// hold opens a connection from a pod to the outside echo server and checks
// that the server saw the node's address.
func hold(t *testing.T, pod, nodeIP string) *heldConn {
	t.Helper()
	return holdIn(t, dir, admin, pod, nodeIP)
}

// holdIn is hold in the sandbox of state directory sandboxDir.
func holdIn(t *testing.T, sandboxDir string, c client.Client, pod string, nodeIPs ...string) *heldConn {
	t.Helper()
	h, got := tryHoldIn(t, sandboxDir, c, pod, nodeIPs...)
	if h == nil {
		t.Fatalf("held connection from %s: the outside saw %q, want one of %v", pod, got, nodeIPs)
	}
	return h
}

// tryHoldIn is holdIn that returns, instead of failing, no connection and
// what the outside saw when it did not see one of nodeIPs.
func tryHoldIn(t *testing.T, sandboxDir string, c client.Client, pod string, nodeIPs ...string) (*heldConn, string) {
	t.Helper()
	netns, err := sandbox.PodNetns(context.Background(), sandboxDir, c, pod)
	if err != nil {
		t.Fatal(err)
	}
	cmd := sandbox.Command(context.Background(), netns, []string{binary, "sandbox", "hold", "--timeout", "5s",
		fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)})
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &heldConn{cmd: cmd, in: in, lines: make(chan string)}
	go func() {
		defer close(h.lines)
		r := bufio.NewScanner(out)
		for r.Scan() {
			h.lines <- r.Text()
		}
	}()
	t.Cleanup(func() { _ = in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	got := h.next()
	for _, ip := range nodeIPs {
		if got == ip {
			return h, got
		}
	}
	// Gone at once, so that nothing of it (a late handshake answered with
	// a reset) reaches the routers while the next connection is counted.
	_ = in.Close()
	_ = cmd.Process.Kill()
	return nil, got
}

// next is the next line the connection printed ("" when it ended or
// printed nothing for 10 s).
func (h *heldConn) next() string {
	select {
	case l := <-h.lines:
		return l
	case <-time.After(10 * time.Second):
		return ""
	}
}

// still checks that the connection still carries a line both ways.
func (h *heldConn) still(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(h.in, line); err != nil {
		t.Fatalf("held connection: %v", err)
	}
	if got := h.next(); got != line {
		t.Fatalf("held connection: sent %q, got back %q (the connection did not survive)", line, got)
	}
}

// brExFlows returns a node's external bridge flows without statistics,
// sorted.
func brExFlows(t *testing.T, name string) []string {
	t.Helper()
	n := node(t, name)
	mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(n.OVSDB, "unix:")), "br-ex.mgmt")
	out, err := deps.OVNCommand("ovs-ofctl", "-O", "OpenFlow15", "dump-flows", "--no-stats", mgmt).Output()
	if err != nil {
		t.Fatalf("dump-flows br-ex on %s: %v", name, err)
	}
	var flows []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "actions=") {
			flows = append(flows, strings.TrimSpace(l))
		}
	}
	sort.Strings(flows)
	return flows
}

// networkID reads a namespace's primary network ID from its NAD.
func networkID(t *testing.T, ns string) int {
	t.Helper()
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "net"}, nad); err != nil {
		t.Fatal(err)
	}
	id, _, ok, err := netconf.ParseAllocation(nad.Annotations)
	if err != nil || !ok {
		t.Fatalf("NAD %s/net has no network ID (%v)", ns, err)
	}
	return id
}

// The sandbox's load balancer addresses (TEST-NET-3), routed by the outside
// world to node1.
const (
	externalIP = "203.0.113.10"
	ingressIP  = "203.0.113.20"
)

// TestNorthSouth: pods of the default network, a Layer3 and a Layer2 UDN
// reach the outside world as their node's address; two tenants with the same
// subnet do at once from the same address and port; the outside reaches
// NodePort services of UDNs on every node (externalTrafficPolicy Local keeps
// its address), LoadBalancer ingress and external IPs over TCP and UDP, and
// the node reaches a UDN's ClusterIP; a pod meets only its own network's
// node ports at its node's address; the node agent restarted rewrites
// nothing, and a flow deleted by hand comes back, while a connection stays
// up; a deleted network leaves no flow.
func TestNorthSouth(t *testing.T) {
	ctx := context.Background()
	nsNetwork(t, "ns-l3a", "Layer3", "10.150.0.0/16/24")
	nsNetwork(t, "ns-l3b", "Layer3", "10.150.0.0/16/24")
	nsNetwork(t, "ns-l2", "Layer2", "10.151.0.0/16")
	nsNetwork(t, "ns-l2b", "Layer2", "10.151.0.0/16")
	node1IP := strings.Split(sandbox.NodeIP(1), "/")[0]
	pods := []string{"plain/a", "ns-l3a/a", "ns-l3b/a", "ns-l2/a", "ns-l2b/a"}
	if err := demo.WaitPodsReady(ctx, dir, admin, pods, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	t.Run("egress as the node's address", func(t *testing.T) {
		for _, p := range pods {
			eventually(t, func() error {
				got, err := probeOut(ctx, p, 0)
				if err != nil || got != node1IP {
					return fmt.Errorf("%s → %s:%d: outside saw %q (%v), want %s", p, sandbox.ExternalServerIP, sandbox.ExternalPort, got, err, node1IP)
				}
				return nil
			})
		}
	})

	t.Run("same address, same port, two tenants at once", func(t *testing.T) {
		// Two Layer2 tenants with the same subnet give their first pods the
		// same address: the seed's worst case.
		a, b := primaryIPs(t, readyPodsNamed(t, "ns-l2", "a")), primaryIPs(t, readyPodsNamed(t, "ns-l2b", "a"))
		if len(a) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("the two tenants' pods have different addresses (%v, %v): the case is not exercised", a, b)
		}
		for round := 0; round < 3; round++ {
			port := 41000 + round
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, p := range []string{"ns-l2/a", "ns-l2b/a"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := probeOut(ctx, p, port)
					if err != nil || got != node1IP {
						errs[i] = fmt.Errorf("%s from port %d: outside saw %q (%v)", p, port, got, err)
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		}
	})

	// Services reached from outside.
	if err := admin.Create(ctx, deployment("ns-l3a", "echo", 2)); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, deployment("ns-l2", "echo", 2)); err != nil {
		t.Fatal(err)
	}
	l3svc, l2svc := nodePortService("ns-l3a", "echo", 30180, false), nodePortService("ns-l2", "echo", 30181, true)
	for _, s := range []*corev1.Service{l3svc, l2svc} {
		if err := admin.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	l3pods, l2pods := readyPods(t, "ns-l3a", "echo", 2), readyPods(t, "ns-l2", "echo", 2)

	t.Run("NodePort of a Layer3 UDN on every node", func(t *testing.T) {
		names := map[string]bool{}
		for _, p := range l3pods {
			names[p.Name] = true
		}
		for i := 1; i <= 3; i++ {
			ip := strings.Split(sandbox.NodeIP(i), "/")[0]
			eventually(t, func() error {
				got, err := outside("curl", "-s", "-m", "2", fmt.Sprintf("http://%s:30180/hostname", ip))
				if err != nil || !names[got] {
					return fmt.Errorf("outside → %s:30180 answered %q (%v), want one of %v", ip, got, err, names)
				}
				return nil
			})
		}
	})

	t.Run("NodePort with externalTrafficPolicy Local keeps the client address", func(t *testing.T) {
		for _, p := range l2pods {
			ip := strings.Split(sandbox.NodeIP(nodeIndex(t, p.Spec.NodeName)), "/")[0]
			eventually(t, func() error {
				got, err := outside("curl", "-s", "-m", "2", fmt.Sprintf("http://%s:30181/clientip", ip))
				if err != nil || !strings.HasPrefix(got, sandbox.ExternalRouterIP+":") {
					return fmt.Errorf("outside → %s:30181 (local endpoint %s) saw the client as %q (%v), want %s", ip, p.Name, got, err, sandbox.ExternalRouterIP)
				}
				return nil
			})
		}
	})

	t.Run("the node reaches a UDN ClusterIP", func(t *testing.T) {
		svc := &corev1.Service{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(l3svc), svc); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			got, err := inNetns(ctx, node(t, "node1").Netns, "curl", "-s", "-m", "2", "http://"+svc.Spec.ClusterIP+"/hostname")
			if err != nil || !strings.HasPrefix(got, "echo-") {
				return fmt.Errorf("node1 → %s:80 answered %q (%v)", svc.Spec.ClusterIP, got, err)
			}
			return nil
		})
	})

	t.Run("a datagram too large for the network: fragmentation needed from the gateway router", func(t *testing.T) {
		// Seed 000: gateway_mtu on the gateway router's port towards the
		// network. The outside (MTU 1500) sends a 1500-byte datagram with DF
		// to a UDP node port; the network's MTU is 1400, so the gateway
		// router answers "fragmentation needed, MTU 1400" and the sender's
		// kernel lowers its path MTU to the node to 1400.
		for i, c := range []struct {
			ns       string
			nodePort int32
		}{{"ns-l3a", 30190}, {"ns-l2", 30191}} {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "mtu"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "echo"},
					Ports: []corev1.ServicePort{{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 81, TargetPort: intstr.FromInt32(8081), NodePort: c.nodePort}}}}
			if err := admin.Create(ctx, svc); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = admin.Delete(context.Background(), svc) })
			// A node of its own per case: the path MTU is cached per destination.
			nodeIP := strings.Split(sandbox.NodeIP(i+2), "/")[0]
			if mtu, err := demo.PathMTU(ctx, dir, fmt.Sprintf("%s:%d", nodeIP, c.nodePort), 30*time.Second); err != nil || mtu != 1400 {
				t.Errorf("%s: path MTU from outside to node port %s:%d is %d (%v), want 1400 (the network's, from the gateway router's ICMP)", c.ns, nodeIP, c.nodePort, mtu, err)
			}
		}
	})

	t.Run("LoadBalancer ingress and external IPs, TCP and UDP", func(t *testing.T) {
		names := map[string]bool{}
		for _, p := range l3pods {
			names[p.Name] = true
		}
		edge := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-l3a", Name: "edge"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "echo"},
				ExternalIPs: []string{externalIP},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
					{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 81, TargetPort: intstr.FromInt32(8081)}}}}
		if err := admin.Create(ctx, edge); err != nil {
			t.Fatal(err)
		}
		// The sandbox plays the load balancer implementation: it sets the
		// ingress address, and the outside routes both to node1.
		edge.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ingressIP}}
		if err := admin.Status().Update(ctx, edge); err != nil {
			t.Fatal(err)
		}
		for _, ip := range []string{externalIP, ingressIP} {
			if out, err := outside("ip", "route", "replace", ip+"/32", "via", node1IP); err != nil {
				t.Fatalf("route %s: %v: %s", ip, err, out)
			}
		}
		udpNodePort := int(edge.Spec.Ports[1].NodePort)
		node2IP := strings.Split(sandbox.NodeIP(2), "/")[0]
		targets := []demo.ReachTarget{
			{Address: externalIP, Protocol: "udp", Port: 81},
			{Address: ingressIP, Protocol: "udp", Port: 81},
			{Address: node2IP, Protocol: "udp", Port: udpNodePort},
		}
		eventually(t, func() error {
			for _, ip := range []string{externalIP, ingressIP} {
				got, err := outside("curl", "-s", "-m", "2", "http://"+ip+"/hostname")
				if err != nil || !names[got] {
					return fmt.Errorf("outside → %s:80 answered %q (%v), want one of %v", ip, got, err, names)
				}
			}
			for _, a := range outsideProbe(t, targets) {
				if !names[a.Answer] {
					return fmt.Errorf("outside → udp %s:%d answered %q (%s), want one of %v", a.Address, a.Port, a.Answer, a.Error, names)
				}
			}
			return nil
		})
		// A later service of another network claiming the same external IP
		// and port is told so, and the first keeps it.
		rival := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-l2", Name: "rival"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"}, ExternalIPs: []string{externalIP},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
		if err := admin.Create(ctx, rival); err != nil {
			t.Fatal(err)
		}
		msg := cmtest.WaitEvent(t, admin, rival, "Service", gatewayflows.ReasonExternalAddressConflict)
		if !strings.Contains(msg, externalIP+" TCP/80") || !strings.Contains(msg, "ns-l3a/edge") {
			t.Errorf("conflict Event %q does not name the address and its holder", msg)
		}
		for i := 0; i < 3; i++ {
			if got, err := outside("curl", "-s", "-m", "2", "http://"+externalIP+"/hostname"); err != nil || !names[got] {
				t.Fatalf("with a rival service, %s:80 answered %q (%v), want ns-l3a's echo", externalIP, got, err)
			}
		}
		if err := admin.Delete(ctx, rival); err != nil {
			t.Fatal(err)
		}

		// Gone with the service: its flows and its router's VIPs.
		if err := admin.Delete(ctx, edge); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if f := brExFlows(t, "node1"); containsFlow(f, "nw_dst="+externalIP) || containsFlow(f, "nw_dst="+ingressIP) {
				return fmt.Errorf("node1's br-ex still steers %s or %s", externalIP, ingressIP)
			}
			return nil
		})
	})

	t.Run("a pod meets only its own network's node ports on its node", func(t *testing.T) {
		node2IP := strings.Split(sandbox.NodeIP(2), "/")[0]
		curlFrom := func(pod, url string) (string, error) {
			netns, err := sandbox.PodNetns(ctx, dir, admin, pod)
			if err != nil {
				return "", err
			}
			return inNetns(ctx, netns, "curl", "-s", "-m", "2", url)
		}
		// ns-l3a's own pod reaches its service on its own node's address
		// (its router holds that address and the service's node ports),
		// and any pod reaches it on another node's address, from outside.
		for _, c := range []struct{ pod, ip string }{{"ns-l3a/a", node1IP}, {"ns-l2b/a", node2IP}, {"plain/a", node2IP}} {
			eventually(t, func() error {
				got, err := curlFrom(c.pod, fmt.Sprintf("http://%s:30180/hostname", c.ip))
				if err != nil || !strings.HasPrefix(got, "echo-") {
					return fmt.Errorf("%s → %s:30180 answered %q (%v), want an echo pod of ns-l3a", c.pod, c.ip, got, err)
				}
				return nil
			})
		}
		// Another network's pod on node1 meets its own router at node1's
		// address: ns-l3a's node port is not there.
		if got, err := curlFrom("ns-l2b/a", fmt.Sprintf("http://%s:30180/hostname", node1IP)); err == nil || strings.HasPrefix(got, "echo-") {
			t.Fatalf("ns-l2b/a → node1's address:30180 reached ns-l3a's service (%q, %v)", got, err)
		}
	})

	t.Run("a default-network pod reaches its own node: the host over TCP, the network's node ports", func(t *testing.T) {
		// The gateway router holds the node's address too, and answers
		// only pings there: the cluster router sends what a pod sends to
		// its own node's address into the management port, and the node's
		// switch serves the network's node ports.
		const ns = "ns-def"
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
		for _, o := range []client.Object{deployment(ns, "echo", 1), nodePortService(ns, "echo", 30182, false)} {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		readyPods(t, ns, "echo", 1)
		netns, err := sandbox.PodNetns(ctx, dir, admin, "plain/a")
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if out, err := inNetns(ctx, netns, "nc", "-z", "-w", "3", node1IP, strconv.Itoa(egressip.DefaultHealthPort)); err != nil {
				return fmt.Errorf("plain/a → its node %s:%d over TCP: %v: %s", node1IP, egressip.DefaultHealthPort, err, out)
			}
			return nil
		})
		eventually(t, func() error {
			got, err := inNetns(ctx, netns, "curl", "-s", "-m", "2", fmt.Sprintf("http://%s:30182/hostname", node1IP))
			if err != nil || !strings.HasPrefix(got, "echo-") {
				return fmt.Errorf("plain/a → its node %s:30182 answered %q (%v), want the default network's echo pod", node1IP, got, err)
			}
			return nil
		})
	})

	t.Run("node agent restarted rewrites nothing", func(t *testing.T) {
		conn := hold(t, "ns-l3a/a", node1IP)
		before := brExFlows(t, "node1")
		victim := process(t, "node-agent/node1")
		if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if p := process(t, "node-agent/node1"); p.PID == victim.PID || !p.Running {
				return fmt.Errorf("node agent not restarted yet")
			}
			return nil
		})
		// Flows carry no statistics here; a rewrite would also show as
		// lost packet counts, but equality of the table is the contract.
		eventually(t, func() error {
			got, err := outside("curl", "-s", "-m", "2", fmt.Sprintf("http://%s:30180/hostname", node1IP))
			if err != nil || !strings.HasPrefix(got, "echo-") {
				return fmt.Errorf("NodePort after the restart answered %q (%v)", got, err)
			}
			return nil
		})
		after := brExFlows(t, "node1")
		if strings.Join(before, "\n") != strings.Join(after, "\n") {
			t.Fatalf("br-ex flows changed across a node agent restart: %d before, %d after", len(before), len(after))
		}
		seen := map[string]bool{}
		for _, f := range after {
			if seen[f] {
				t.Fatalf("duplicate flow %s", f)
			}
			seen[f] = true
		}
		conn.still(t, "after the node agent's restart")
	})

	t.Run("a flow removed behind the agent's back comes back", func(t *testing.T) {
		conn := hold(t, "ns-l3a/a", node1IP)
		before := brExFlows(t, "node1")
		n := node(t, "node1")
		mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(n.OVSDB, "unix:")), "br-ex.mgmt")
		if out, err := deps.OVNCommand("ovs-ofctl", "-O", "OpenFlow15", "del-flows", "--strict", mgmt, "table=4,priority=0").CombinedOutput(); err != nil {
			t.Fatalf("del-flows: %v: %s", err, out)
		}
		if got := brExFlows(t, "node1"); len(got) != len(before)-1 {
			t.Fatalf("deleting one flow left %d of %d", len(got), len(before))
		}
		eventually(t, func() error {
			if got := brExFlows(t, "node1"); strings.Join(got, "\n") != strings.Join(before, "\n") {
				return fmt.Errorf("br-ex holds %d flows, want the %d it had", len(got), len(before))
			}
			return nil
		})
		if got, err := probeOut(ctx, "ns-l3a/a", 0); err != nil || got != node1IP {
			t.Fatalf("egress after the repair: outside saw %q (%v)", got, err)
		}
		conn.still(t, "after the repair")
	})

	t.Run("a deleted network leaves no flow", func(t *testing.T) {
		mark := fmt.Sprintf("set_field:%#x->ct_mark", gateway.Mark(networkID(t, "ns-l3b")))
		if !containsFlow(brExFlows(t, "node1"), mark) {
			t.Fatalf("no flow marks ns-l3b's egress (%s)", mark)
		}
		if err := admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("ns-l3b")); err != nil {
			t.Fatal(err)
		}
		udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-l3b", Name: "net"}}
		if err := admin.Delete(ctx, udn); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			for i := 1; i <= 3; i++ {
				if containsFlow(brExFlows(t, sandbox.NodeName(i)), mark) {
					return fmt.Errorf("%s's br-ex still marks ns-l3b's egress", sandbox.NodeName(i))
				}
			}
			return nbClean("ns-l3b.net")
		})
		// The other tenant with the same subnet still egresses.
		got, err := probeOut(ctx, "ns-l3a/a", 0)
		if err != nil || got != node1IP {
			t.Fatalf("ns-l3a/a after ns-l3b's network went: outside saw %q (%v)", got, err)
		}
	})
}

func containsFlow(flows []string, s string) bool {
	for _, f := range flows {
		if strings.Contains(f, s) {
			return true
		}
	}
	return false
}

// readyPodsNamed returns one named pod (for its annotations).
func readyPodsNamed(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	p := corev1.Pod{}
	if err := admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return []corev1.Pod{p}
}

// nodeIndex is a sandbox node's number (node2 → 2).
func nodeIndex(t *testing.T, name string) int {
	t.Helper()
	i, err := strconv.Atoi(strings.TrimPrefix(name, "node"))
	if err != nil {
		t.Fatalf("node %q", name)
	}
	return i
}
