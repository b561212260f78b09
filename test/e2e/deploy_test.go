package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// deployImageName is the image name the deploy test builds, as an operator
// would name their own build (IMAGE=... make image).
const deployImageName = "ghcr.io/ovn-udn/ovn-udn"

// TestDeploy installs ovn-udn the way docs/install.md tells an operator to:
// its image (make image) imported into every node's containerd, and
// config/deploy applied with kubectl apply -k through an overlay; the
// kubelets run every component. Every table of make demo then passes on
// that cluster. Its subtests upgrade it and uninstall it, in a second
// sandbox beside the package's.
func TestDeploy(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	img1 := buildImage(t, filepath.Join(tmp, "ovn-udn-1.tar"), deployImageName+":e2e-1", "e2e-1")
	ddir := filepath.Join(tmp, "sandbox")
	t.Cleanup(func() {
		if t.Failed() {
			_ = sandbox.Status(ddir, os.Stderr)
			fmt.Fprintf(os.Stderr, "--- supervisor:\n%s\n", proc.Tail(sandbox.NewLayoutMust(ddir).SupervisorLog(), 30))
		}
		_ = sandbox.Down(ddir, io.Discard)
	})
	var out bytes.Buffer
	opts := demo.DemoOptions{Options: sandbox.Options{Dir: ddir, Nodes: 3, Uplinks: 3, UplinkBridges: 1, Binary: binary,
		Attached: true, Deploy: true, Image: img1}, Manifests: []string{filepath.Join(kubetest.RepoRoot(), "examples")}, Keep: true}
	if err := demo.Demo(ctx, opts, &out); err != nil {
		t.Fatalf("make demo DEPLOY=1: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	t.Logf("demo on the deployed sandbox: %d tables' rows PASS; %s", strings.Count(out.String(), " PASS"), lines[len(lines)-1])
	c, err := sandbox.Client(ddir)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("Upgrade", func(t *testing.T) { testUpgrade(t, ddir, c, tmp) })
	t.Run("Uninstall", func(t *testing.T) { testUninstall(t, ddir, deployImageName+":e2e-2") })
}

// testUninstall follows docs/install.md's "Uninstall": the workloads and
// networks deleted, kubectl delete -k of the deploy, then config/uninstall
// applied until every node is clean, and deleted. Nothing of ovn-udn is
// left: no namespace or CRD in the API; on every node no integration
// bridge, no interface of ovn-udn's (pods' veths, the management port), no
// CNI configuration or plugin, no zone database or socket.
func testUninstall(t *testing.T, ddir, image string) {
	l := sandbox.NewLayoutMust(ddir)
	system := map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true, sandbox.DeployNamespace: true}
	var doomed []string
	for _, ns := range strings.Fields(kubectl(t, ddir, "get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}")) {
		if !system[ns] {
			doomed = append(doomed, "namespace/"+ns)
		}
	}
	start := time.Now()
	kubectl(t, ddir, append([]string{"delete", "--wait=true", "--timeout=3m"}, doomed...)...)
	kubectl(t, ddir, "delete", "--wait=true", "--timeout=2m", "clusteruserdefinednetworks,clusternetworkconnects,egressips", "--all")
	kubectl(t, ddir, "-n", "kube-system", "delete", "--wait=true", "--timeout=2m", "deployment/coredns")
	kubectl(t, ddir, "-n", "kube-system", "wait", "--for=delete", "pod", "-l", "k8s-app=kube-dns", "--timeout=2m")
	kubectl(t, ddir, "delete", "--wait=true", "--timeout=3m", "-k", l.DeployOverlay())
	dir, err := sandbox.WriteUninstallOverlay(l, image)
	if err != nil {
		t.Fatal(err)
	}
	kubectl(t, ddir, "apply", "-k", dir)
	kubectl(t, ddir, "-n", "ovn-udn-uninstall", "rollout", "status", "daemonset/ovn-udn-cleanup", "--timeout=3m")
	logs := kubectl(t, ddir, "-n", "ovn-udn-uninstall", "logs", "daemonset/ovn-udn-cleanup", "-c", "cleanup")
	kubectl(t, ddir, "delete", "--wait=true", "--timeout=2m", "-k", dir)
	t.Logf("uninstalled in %s; a node's cleanup said:\n%s", time.Since(start).Round(100*time.Millisecond), logs)

	if out := kubectl(t, ddir, "get", "namespaces", "-o", "name"); strings.Contains(out, "ovn-udn") {
		t.Errorf("namespaces left: %s", out)
	}
	if out := kubectl(t, ddir, "get", "crd", "-o", "name"); strings.Contains(out, "k8s.ovn.org") || strings.Contains(out, "k8s.cni.cncf.io") {
		t.Errorf("CRDs left: %s", out)
	}
	st, err := sandbox.ReadState(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if err := deps.OVNCommand("ovs-vsctl", "--db="+n.OVSDB, "br-exists", "br-int").Run(); err == nil {
			t.Errorf("%s: br-int is still there", n.Name)
		}
		links, err := deps.OVNCommand("ip", "-n", n.Netns, "-o", "link", "show").Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(links), "\n") {
			if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "ovn") {
				t.Errorf("%s: interface %s is still there", n.Name, strings.TrimSuffix(f[1], ":"))
			}
		}
		for _, f := range []string{
			filepath.Join(l.NodeDir(n.Name), "real", "cni", "net.d", "10-ovn-udn.conflist"),
			filepath.Join(l.NodeDir(n.Name), "real", "cni", "bin", "ovn-k8s-cni-overlay"),
			filepath.Join(l.ZoneDir(n.Name), "db", "ovnnb_db.db"),
			filepath.Join(l.ZoneDir(n.Name), "db", "ovnsb_db.db"),
			filepath.Join(l.ZoneDir(n.Name), "ovnnb_db.sock"),
			filepath.Join(l.ZoneDir(n.Name), "ovnsb_db.sock"),
		} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("%s: %s is still there", n.Name, f)
			}
		}
	}
}

// buildImage runs make image's builder: the archive at out, named ref,
// whose ovn-udn reports version.
func buildImage(t *testing.T, out, ref, version string) string {
	t.Helper()
	cmd := exec.Command("go", "run", "./hack/image", "-o", out, "-ref", ref, "-version", version)
	cmd.Dir = kubetest.RepoRoot()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("building the image: %v\n%s", err, b)
	}
	t.Logf("image: %s", strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "; "))
	return out
}

// testUpgrade rolls every component to a second image the way
// docs/install.md's "Upgrade" says (the overlay's image changed, kubectl
// apply -k, kubectl rollout status), while TCP connections are held between
// pods of primary networks, to a Service, and to the outside, and pods are
// created. It fails on any connection lost, any new pod not Ready, and any
// row a restarted zone controller wrote into its unchanged Northbound.
func testUpgrade(t *testing.T, ddir string, c client.Client, tmp string) {
	ctx := context.Background()
	img2 := buildImage(t, filepath.Join(tmp, "ovn-udn-2.tar"), deployImageName+":e2e-2", "e2e-2")
	if err := sandbox.ImportImage(ddir, img2); err != nil {
		t.Fatal(err)
	}
	stop, err := demo.Servers(ctx, ddir, binary, c, []string{"l3-blue/a", "l3-blue/b", "l3-blue/c", "l2-blue/c"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "l3-blue", Name: "probe"}, svc); err != nil {
		t.Fatal(err)
	}
	conns := []*echoConn{
		holdEcho(t, ddir, c, "primary Layer3, node1 to node2", "l3-blue/a", net.JoinHostPort(primaryIP(t, c, "l3-blue/c", "l3-blue/tenant"), strconv.Itoa(demo.ProbePort))),
		holdEcho(t, ddir, c, "primary Layer2, node1 to node2", "l2-blue/a", net.JoinHostPort(primaryIP(t, c, "l2-blue/c", "l2-blue/tenant"), strconv.Itoa(demo.ProbePort))),
		holdEcho(t, ddir, c, "pod to a Service's backend", "l3-blue/c", net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(demo.ProbePort))),
		holdEcho(t, ddir, c, "pod to the outside", "plain/a", net.JoinHostPort(sandbox.ExternalServerIP, strconv.Itoa(sandbox.ExternalPort))),
	}

	// The operator's upgrade: the overlay names the new image; apply it.
	overlay := filepath.Join(sandbox.NewLayoutMust(ddir).DeployOverlay(), "kustomization.yaml")
	k, err := os.ReadFile(overlay)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(k, []byte("newTag: e2e-1")) {
		t.Fatalf("the overlay names no e2e-1 image:\n%s", k)
	}
	if err := os.WriteFile(overlay, bytes.ReplaceAll(k, []byte("newTag: e2e-1"), []byte("newTag: e2e-2")), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	kubectl(t, ddir, "apply", "-k", filepath.Dir(overlay))
	// Pods created while the components roll: on node1 only, in no
	// Service, so that node2's and node3's zones have nothing to write.
	newPods := []string{"plain/upgrade-new", "l3-blue/upgrade-new"}
	for _, ref := range newPods {
		ns, name, _ := strings.Cut(ref, "/")
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"e2e": "upgrade"}},
			Spec: corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "app", Image: sandbox.PauseImage}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	took := map[string]time.Duration{}
	var mu sync.Mutex
	for _, w := range []string{"daemonset/ovn-udn-zone", "daemonset/ovn-udn-node", "deployment/ovn-udn-cluster-manager"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			code, err := sandbox.Kubectl(ddir, []string{"-n", sandbox.DeployNamespace, "rollout", "status", w, "--timeout=5m"}, nil, &out, &out)
			if err != nil || code != 0 {
				t.Errorf("rollout status %s: %v (exit %d): %s", w, err, code, out.String())
			}
			mu.Lock()
			took[w] = time.Since(start).Round(100 * time.Millisecond)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("rolled out, from kubectl apply: %v", took)
	if err := demo.WaitPodsReady(ctx, ddir, c, newPods, 2*time.Minute); err != nil {
		t.Errorf("pods created during the upgrade: %v", err)
	}
	// Every component runs the new build.
	for _, w := range []string{"daemonset/ovn-udn-zone", "daemonset/ovn-udn-node", "deployment/ovn-udn-cluster-manager"} {
		container := map[string]string{"daemonset/ovn-udn-zone": "zone-controller"}[w]
		args := []string{"-n", sandbox.DeployNamespace, "exec", w}
		if container != "" {
			args = append(args, "-c", container)
		}
		if v := kubectl(t, ddir, append(args, "--", "ovn-udn", "version")...); !strings.HasPrefix(v, "ovn-udn e2e-2 ") {
			t.Errorf("%s runs ovn-udn %q, want e2e-2", w, v)
		}
	}
	// The held connections carried lines all along, and still do.
	for _, h := range conns {
		h.mu.Lock()
		after := h.sent + 10
		h.mu.Unlock()
		if err := proc.WaitFor(time.Minute, 100*time.Millisecond, func() (bool, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.sent >= after || h.err != nil, nil
		}); err != nil {
			t.Errorf("%s: no echo after the upgrade: %v", h.name, err)
		}
	}
	for _, h := range conns {
		sent, stall, err := h.stop()
		if err != nil {
			t.Errorf("%s (%s): the connection was lost during the upgrade after %d lines: %v", h.name, h.from, sent, err)
			continue
		}
		t.Logf("%s: %d lines echoed during the upgrade, longest wait for an echo %s", h.name, sent, stall.Round(time.Millisecond))
	}
	// The zone controllers that restarted into their unchanged Northbound
	// (node2 and node3 got no new pod) wrote nothing.
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(sandbox.DeployNamespace), client.MatchingLabels{"app.kubernetes.io/component": "zone"}); err != nil {
		t.Fatal(err)
	}
	zonePod := map[string]string{}
	for _, p := range pods.Items {
		zonePod[p.Spec.NodeName] = p.Name
	}
	for _, node := range []string{"node2", "node3"} {
		if n := rowsWritten(t, ddir, zonePod[node]); n != 0 {
			t.Errorf("the zone controller of %s wrote %v rows after its restart into an unchanged Northbound", node, n)
		}
	}
	// The control: a pod on node2 now is written by its zone controller,
	// and counted.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: "after-upgrade"},
		Spec: corev1.PodSpec{NodeName: "node2", Containers: []corev1.Container{{Name: "app", Image: sandbox.PauseImage}}}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := demo.WaitPodsReady(ctx, ddir, c, []string{"plain/after-upgrade"}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := rowsWritten(t, ddir, zonePod["node2"]); n == 0 {
		t.Errorf("node2's zone controller counts no row written for a new pod: the check above proves nothing")
	}
}

// rowsWritten is the Northbound rows a zone pod's controller has written
// since it started (its metrics, through the API server's pod proxy).
func rowsWritten(t *testing.T, ddir, zonePod string) float64 {
	t.Helper()
	page := kubectl(t, ddir, "get", "--raw", fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:9412/proxy/metrics", sandbox.DeployNamespace, zonePod))
	if !strings.Contains(page, "ovn_udn_ovsdb_connected") {
		t.Fatalf("%s:9412/metrics is not a zone controller's:\n%s", zonePod, page)
	}
	return metricSum(page, "ovn_udn_ovsdb_rows_written_total")
}

// kubectl runs kubectl against the sandbox in ddir and returns its trimmed
// output, failing the test on an error.
func kubectl(t *testing.T, ddir string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	code, err := sandbox.Kubectl(ddir, args, nil, &out, &errOut)
	if err != nil || code != 0 {
		t.Fatalf("kubectl %s: %v (exit %d): %s%s", strings.Join(args, " "), err, code, out.String(), errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// metricSum adds up every series of a metric in a Prometheus text page.
func metricSum(page, name string) float64 {
	var sum float64
	for _, l := range strings.Split(page, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// primaryIP is a pod's address on a network (its first).
func primaryIP(t *testing.T, c client.Client, ref, network string) string {
	t.Helper()
	ns, name, _ := strings.Cut(ref, "/")
	p := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	nets, err := podnet.Parse(p.Annotations)
	if err != nil || len(nets[network].IPs) == 0 {
		t.Fatalf("%s has no address on %s (%v)", ref, network, err)
	}
	pfx, err := netip.ParsePrefix(nets[network].IPs[0])
	if err != nil {
		t.Fatal(err)
	}
	return pfx.Addr().String()
}

// echoConn is one TCP connection from a pod to an echo server (the probe
// servers, the outside's echo), held by `ovn-udn sandbox hold`, carrying a
// line every 100 ms until stopped.
type echoConn struct {
	name, from string
	cmd        *exec.Cmd
	done       chan struct{}
	mu         sync.Mutex
	sent       int
	stall      time.Duration
	err        error
}

// holdEcho opens the connection and starts its lines.
func holdEcho(t *testing.T, ddir string, c client.Client, name, from, addr string) *echoConn {
	t.Helper()
	netns, err := sandbox.PodNetns(context.Background(), ddir, c, from)
	if err != nil {
		t.Fatal(err)
	}
	// The server may not listen yet (demo.Servers starts it and returns):
	// connect until it answers.
	var h *echoConn
	if err := proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
		var err error
		h, err = tryHoldEcho(t, netns, name, from, addr)
		return h != nil, err
	}); err != nil {
		t.Fatal(err)
	}
	return h
}

// tryHoldEcho opens the connection and starts its lines, or returns nil
// and why it could not connect.
func tryHoldEcho(t *testing.T, netns, name, from, addr string) (*echoConn, error) {
	t.Helper()
	// A line may wait up to 30 s for its echo (TCP retransmits through a
	// short outage); only a connection that breaks counts as lost.
	cmd := sandbox.Command(context.Background(), netns, []string{binary, "sandbox", "hold", "--timeout", "30s", addr})
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &echoConn{name: name, from: from, cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := bufio.NewScanner(out)
	first := make(chan bool, 1)
	go func() { first <- r.Scan() }()
	select {
	case ok := <-first:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("%s: %s could not connect to %s: %s", name, from, addr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s: %s got no answer from %s", name, from, addr)
	}
	go func() {
		defer in.Close()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-h.done:
				return
			case <-tick.C:
			}
			line := fmt.Sprintf("line %d", i)
			sentAt := time.Now()
			_, err := fmt.Fprintln(in, line)
			if err == nil && !r.Scan() {
				// (hold's stderr is read once it has exited: not here)
				err = fmt.Errorf("the connection ended: %v", r.Err())
			}
			if err == nil && r.Text() != line {
				err = fmt.Errorf("sent %q, got back %q", line, r.Text())
			}
			h.mu.Lock()
			if err != nil {
				h.err = err
				h.mu.Unlock()
				return
			}
			h.sent++
			h.stall = max(h.stall, time.Since(sentAt))
			h.mu.Unlock()
		}
	}()
	return h, nil
}

// stop ends the lines and returns how many were echoed, the longest wait
// for one, and why the connection ended early if it did.
func (h *echoConn) stop() (int, time.Duration, error) {
	close(h.done)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent, h.stall, h.err
}
