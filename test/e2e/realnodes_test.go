package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// realSandbox is the suite's sandbox when its nodes are real (the
// default), seen by the tests that drive kubelets.
type realSandbox struct {
	t   *testing.T
	dir string
	c   client.Client
}

// startRealSandbox returns the suite's sandbox, shared (each sandbox runs
// a containerd and a kubelet per node: one more costs a minute).
func startRealSandbox(t *testing.T) *realSandbox {
	t.Helper()
	return &realSandbox{t: t, dir: dir, c: admin}
}

// kubectl runs the real kubectl against the sandbox.
func (s *realSandbox) kubectl(args ...string) (string, error) {
	cmd := exec.Command(deps.KubeBinary("kubectl"), append([]string{"--kubeconfig", filepath.Join(s.dir, "kubeconfig")}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// namespaces creates each namespace of nets, labelled for a primary
// network with its UserDefinedNetwork "net" where the spec is not nil, and
// objs(namespace) in it.
func (s *realSandbox) namespaces(t *testing.T, nets map[string]*v1.UserDefinedNetworkSpec, objs func(namespace string) []client.Object) {
	t.Helper()
	ctx := context.Background()
	for ns, spec := range nets {
		labels := map[string]string{}
		if spec != nil {
			labels[v1.PrimaryNetworkLabel] = ""
		}
		all := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}}
		if spec != nil {
			all = append(all, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}, Spec: *spec})
		}
		for _, o := range append(all, objs(ns)...) {
			if err := s.c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRealNodes: on nodes run by real kubelets and containerd, through
// ovn-udn's CNI plugin, an ordinary Deployment with HTTP, TCP and exec
// probes becomes Available on the default network, a Layer3 and a Layer2
// primary network; the kubelet reports the pods' default-network addresses;
// pods of one network reach each other across nodes and not another
// tenant's; kubectl logs and exec work through the kubelets; a missing
// image fails as ErrImagePull; a forbidden network shows ovn-udn's reason in
// the kubelet's Event.
func TestRealNodes(t *testing.T) {
	s := startRealSandbox(t)
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := s.c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if ni := n.Status.NodeInfo; !strings.HasPrefix(ni.ContainerRuntimeVersion, "containerd://") || ni.KubeletVersion != "v1.34.10" {
			t.Errorf("node %s runs %q with kubelet %q, want containerd and v1.34.10", n.Name, ni.ContainerRuntimeVersion, ni.KubeletVersion)
		}
	}

	nets := map[string]*v1.UserDefinedNetworkSpec{
		"rn-plain": nil,
		"rn-blue":  {Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.160.0.0/16/24"}},
		// Another subnet: an answer from it could only come across tenants.
		"rn-green": {Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.161.0.0/16"}},
	}
	s.namespaces(t, nets, func(ns string) []client.Object { return []client.Object{demo.ProbedDeployment(ns, "web", 2)} })
	// addr is where a pod serves its network: its primary network's address.
	type pod = struct{ ns, name, node, addr string }
	pods := map[string][]pod{}
	for ns, spec := range nets {
		if out, err := s.kubectl("-n", ns, "wait", "--for=condition=Available", "deploy/web", "--timeout=120s"); err != nil {
			t.Fatalf("deployment %s/web: %v: %s", ns, err, out)
		}
		var list corev1.PodList
		if err := s.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			an, err := podnet.ParsePod(&p)
			if err != nil {
				t.Fatal(err)
			}
			def := an[podnet.DefaultKey].IPs
			var got []string
			for _, ip := range p.Status.PodIPs {
				got = append(got, ip.IP)
			}
			if len(def) == 0 || len(got) == 0 || !strings.HasPrefix(def[0], got[0]+"/") {
				t.Errorf("pod %s/%s: the kubelet reports %v, its default-network attachment is %v", ns, p.Name, got, def)
			}
			addr := p.Status.PodIP
			if spec != nil {
				a := an[podnet.Key(ns, "net")]
				if len(a.IPs) == 0 {
					t.Fatalf("pod %s/%s has no address on its primary network: %v", ns, p.Name, an)
				}
				addr = strings.Split(a.IPs[0], "/")[0]
			}
			pods[ns] = append(pods[ns], pod{ns, p.Name, p.Spec.NodeName, addr})
		}
		if len(pods[ns]) != 2 || pods[ns][0].node == pods[ns][1].node {
			t.Fatalf("%s: pods %v, want one on each node", ns, pods[ns])
		}
	}

	connect := func(from pod, to string) error {
		out, err := s.kubectl("-n", from.ns, "exec", from.name, "--", "/agnhost", "connect", "--timeout=2s", to+":8080")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	for ns, ps := range pods {
		if err := connect(ps[0], ps[1].addr); err != nil {
			t.Errorf("%s: %s on %s does not reach %s on %s: %v", ns, ps[0].name, ps[0].node, ps[1].addr, ps[1].node, err)
		}
	}
	if connect(pods["rn-blue"][0], pods["rn-green"][1].addr) == nil {
		t.Errorf("a blue pod reaches a green pod's address %s (another tenant)", pods["rn-green"][1].addr)
	}
	if out, err := s.kubectl("-n", "rn-blue", "logs", pods["rn-blue"][0].name); err != nil || !strings.Contains(out, "GET /healthz") {
		t.Errorf("kubectl logs: %v: the kubelet's probes are not in the log: %.300s", err, out)
	}
	// kubectl port-forward, through the kubelet into the pod's namespace.
	pf := exec.Command(deps.KubeBinary("kubectl"), "--kubeconfig", filepath.Join(s.dir, "kubeconfig"), "-n", "rn-blue",
		"port-forward", "pod/"+pods["rn-blue"][0].name, "18080:8080")
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pf.Process.Kill(); _ = pf.Wait() })
	eventually(t, func() error {
		resp, err := http.Get("http://127.0.0.1:18080/hostname")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != pods["rn-blue"][0].name {
			return fmt.Errorf("port-forward answered %q, want %s", b, pods["rn-blue"][0].name)
		}
		return nil
	})

	// A missing image: the runtime's ordinary ErrImagePull, not a hang.
	missing := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rn-plain", Name: "missing"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/nothing:1", ImagePullPolicy: corev1.PullIfNotPresent}}}}
	// A network the pod may not use: ovn-udn's reason in the kubelet's Event.
	forbidden := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rn-plain", Name: "forbidden",
		Annotations: map[string]string{netconf.NetworksAnnotation: "rn-blue/net"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: sandbox.PauseImage}}}}
	for _, p := range []*corev1.Pod{missing, forbidden} {
		if err := s.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, func() error {
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(missing), missing); err != nil {
			return err
		}
		for _, cs := range missing.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				return nil
			}
		}
		return fmt.Errorf("pod with a missing image: %+v", missing.Status.ContainerStatuses)
	})
	eventually(t, func() error {
		var events corev1.EventList
		if err := s.c.List(ctx, &events, client.InNamespace("rn-plain")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == "forbidden" && e.Reason == "FailedCreatePodSandBox" &&
				strings.Contains(e.Message, "InvalidNetworkSelection") && strings.Contains(e.Message, "rn-blue/net") {
				return nil
			}
		}
		return fmt.Errorf("no FailedCreatePodSandBox Event with ovn-udn's reason on rn-plain/forbidden")
	})

	s.faults(t, pods["rn-blue"])
}

// restart kills a process of the sandbox and waits until the supervisor
// has started it again.
func (s *realSandbox) restart(t *testing.T, name string) {
	t.Helper()
	find := func() (sandbox.Process, error) {
		st, err := sandbox.ReadState(sandbox.NewLayoutMust(s.dir))
		if err != nil {
			return sandbox.Process{}, err
		}
		for _, p := range st.Processes {
			if p.Name == name {
				return p, nil
			}
		}
		return sandbox.Process{}, fmt.Errorf("no process %s", name)
	}
	before, err := find()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		p, err := find()
		if err != nil || p.PID == before.PID || !p.Running {
			return fmt.Errorf("%s not restarted yet (%+v, %v)", name, p, err)
		}
		return nil
	})
}

// plumbing returns each pod interface on a node's Open vSwitch with what
// identifies its plumbing: the OVS row and the sandbox it was made for.
func (s *realSandbox) plumbing(t *testing.T, node string) map[string]string {
	t.Helper()
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(s.dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Name == node {
			out, err := deps.OVNCommand("ovs-vsctl", "--db="+n.OVSDB, "--format=csv", "--no-headings", "--data=bare",
				"--columns=_uuid,name,external_ids", "find", "Interface", "external_ids:"+cni.PodKey+"!=\"\"").Output()
			if err != nil {
				t.Fatal(err)
			}
			rows := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if f := strings.SplitN(line, ",", 3); len(f) == 3 {
					rows[f[1]] = f[0] + " " + f[2]
				}
			}
			return rows
		}
	}
	t.Fatalf("no node %s", node)
	return nil
}

// own keeps the interface records of this test's pods (namespaces rn-*):
// pods of earlier tests sharing the node may still be going away while it
// restarts containerd and the kubelet.
func own(rows map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range rows {
		if strings.Contains(v, "k8s.ovn.org/pod=rn-") {
			out[k] = v
		}
	}
	return out
}

// faults, on real nodes: containerd, then the kubelet, restarted on a node
// re-plumb nothing and change no address; the node agent killed while
// pods start fails their ADDs, which the kubelet retries until the agent
// is back, and a TCP connection between two running pods carries data
// across the restart.
func (s *realSandbox) faults(t *testing.T, blue []struct{ ns, name, node, addr string }) {
	ctx := context.Background()
	node := blue[0].node
	before := s.plumbing(t, node)
	if len(own(before)) == 0 {
		t.Fatalf("none of this test's pods plumbed on %s", node)
	}
	addrs := func() map[string]string {
		var list corev1.PodList
		if err := s.c.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, p := range list.Items {
			out[p.Namespace+"/"+p.Name] = p.Annotations[podnet.Annotation] + " " + p.Status.PodIP
		}
		return out
	}
	addrsBefore := addrs()
	for _, c := range []string{"containerd/" + node, "kubelet/" + node} {
		s.restart(t, c)
		if out, err := s.kubectl("wait", "--for=condition=Ready", "node/"+node, "--timeout=60s"); err != nil {
			t.Fatalf("%s after %s restarted: %v: %s", node, c, err, out)
		}
		for _, ns := range []string{"rn-plain", "rn-blue", "rn-green"} {
			if out, err := s.kubectl("-n", ns, "wait", "--for=condition=Available", "deploy/web", "--timeout=60s"); err != nil {
				t.Fatalf("%s after %s restarted: %v: %s", ns, c, err, out)
			}
		}
		if after := s.plumbing(t, node); !maps.Equal(own(before), own(after)) {
			t.Errorf("%s restarted: the pods' interfaces changed:\nbefore %v\nafter  %v", c, before, after)
		}
		if after := addrs(); !maps.Equal(addrsBefore, after) {
			t.Errorf("%s restarted: pod addresses changed", c)
		}
	}

	// A TCP connection between the two blue pods, through hosts' nc in
	// their namespaces, open across the agent's restart.
	serverNS, err := sandbox.PodNetns(ctx, s.dir, s.c, "rn-blue/"+blue[1].name)
	if err != nil {
		t.Fatal(err)
	}
	clientNS, err := sandbox.PodNetns(ctx, s.dir, s.c, "rn-blue/"+blue[0].name)
	if err != nil {
		t.Fatal(err)
	}
	var received syncBuffer
	server := sandbox.Command(ctx, serverNS, []string{"nc", "-l", "9000"})
	server.Stdout = &received
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	// The server listens a moment after it starts (seconds on a loaded
	// machine). A client started before that is refused and exits, while
	// the line written to its standard input still goes into the pipe:
	// wait for the listening socket first.
	eventually(t, func() error {
		out, err := sandbox.Command(ctx, serverNS, []string{"ss", "-Hltn", "sport = :9000"}).Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			return fmt.Errorf("nc -l 9000 not listening yet (%v)", err)
		}
		return nil
	})
	client := sandbox.Command(ctx, clientNS, []string{"nc", blue[1].addr, "9000"})
	sent, err := client.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Process.Kill(); _ = client.Wait() })
	if _, err := io.WriteString(sent, "before\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if !strings.Contains(received.String(), "before") {
			return fmt.Errorf("the server has not received the first line")
		}
		return nil
	})

	// The agent killed while two new pods start on its node.
	s.restart(t, "node-agent/"+node)
	for _, name := range []string{"late-1", "late-2"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rn-blue", Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: sandbox.PauseImage}}}}
		if err := s.c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	s.restart(t, "node-agent/"+node)
	for _, name := range []string{"late-1", "late-2"} {
		if out, err := s.kubectl("-n", "rn-blue", "wait", "--for=condition=Ready", "pod/"+name, "--timeout=120s"); err != nil {
			t.Errorf("pod %s started across the agent's restarts: %v: %s", name, err, out)
		}
	}
	if _, err := io.WriteString(sent, "after\n"); err != nil {
		t.Fatalf("the connection broke across the agent's restart: %v", err)
	}
	eventually(t, func() error {
		if !strings.Contains(received.String(), "after") {
			return fmt.Errorf("the server received %q, not the line sent after the agent's restart", received.String())
		}
		return nil
	})
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
