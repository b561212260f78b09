// Package e2e drives a real sandbox — kube-apiserver, per-node OVN zones,
// OVS and ovn-controller in network namespaces, and the ovn-udn binary's
// components — with examples/ applied, and checks what users see: packets
// between pods. One 3-node sandbox serves the package; tests run in order and
// each leaves it as the next expects.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/manifest"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// e2eGracePeriod is the sandbox's zone controllers' grace period before a
// network leaves a node that no longer uses it.
const e2eGracePeriod = 2 * time.Second

var (
	binary string // the ovn-udn binary under test
	dir    string // the sandbox's state directory
	admin  client.Client
)

func TestMain(m *testing.M) {
	for _, check := range []func() error{deps.CheckKube, deps.CheckControlPlane, deps.CheckOVN} {
		if err := check(); err != nil {
			if os.Getenv(deps.SkipEnv) == "1" {
				fmt.Fprintf(os.Stderr, "skipping: %v (%s=1)\n", err, deps.SkipEnv)
				os.Exit(0)
			}
			fmt.Fprintf(os.Stderr, "real components missing: %v (or set %s=1)\n", err, deps.SkipEnv)
			os.Exit(1)
		}
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "ovn-udn-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// OVN_UDN_E2E_KEEP=1 leaves the sandbox and its logs for a post-mortem.
	keep := os.Getenv("OVN_UDN_E2E_KEEP") == "1"
	if !keep {
		defer os.RemoveAll(tmp)
	}
	binary, dir = filepath.Join(tmp, "ovn-udn"), filepath.Join(tmp, "sandbox")
	build := exec.Command("go", "build", "-o", binary, "./cmd/ovn-udn")
	build.Dir = kubetest.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ovn-udn: %v\n%s", err, out)
		return 1
	}
	var log bytes.Buffer
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "OVN_UDN_E2E_KEEP=1: the sandbox in %s keeps running\n", dir)
			return
		}
		if err := sandbox.Down(dir, &log); err != nil {
			fmt.Fprintf(os.Stderr, "sandbox down: %v\n", err)
		}
	}()
	// A short grace period: render (which has none) and the cluster agree
	// a few seconds after a node's last pod of a network is gone.
	opts := sandbox.Options{Dir: dir, Nodes: 3, Binary: binary, Attached: !keep, InactiveGracePeriod: e2eGracePeriod}
	if err := sandbox.Up(opts, &log); err != nil {
		fmt.Fprintf(os.Stderr, "%s%v\n", log.String(), err)
		return 1
	}
	if err := sandbox.Apply(context.Background(), dir, &log, filepath.Join(kubetest.RepoRoot(), "examples")); err != nil {
		fmt.Fprintf(os.Stderr, "applying examples: %v\n", err)
		return 1
	}
	if admin, err = sandbox.Client(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "sandbox status (OVN_UDN_E2E_KEEP=1 keeps it for a post-mortem):\n")
		_ = sandbox.Status(dir, os.Stderr)
		if st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir)); err == nil {
			for _, p := range st.Processes {
				if p.Restarts > 0 || !p.Running {
					fmt.Fprintf(os.Stderr, "--- %s (%d restarts) %s:\n%s\n", p.Name, p.Restarts, p.Log, proc.Tail(p.Log, 20))
				}
			}
		}
		fmt.Fprintf(os.Stderr, "--- supervisor:\n%s\n", proc.Tail(sandbox.NewLayoutMust(dir).SupervisorLog(), 30))
	}
	return code
}

// examplePods lists the pods of examples/.
func examplePods(t *testing.T) []string {
	t.Helper()
	docs, err := manifest.Read(filepath.Join(kubetest.RepoRoot(), "examples"))
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, d := range docs {
		if d.Object.GetKind() == "Pod" {
			pods = append(pods, d.Object.GetNamespace()+"/"+d.Object.GetName())
		}
	}
	return pods
}

// serve waits for pods to be ready and runs the probe server in each until
// the test ends.
func serve(t *testing.T, pods ...string) {
	t.Helper()
	ctx := context.Background()
	if err := demo.WaitPodsReady(ctx, dir, admin, pods, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	stop, err := demo.Servers(ctx, dir, binary, admin, pods)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

// expect measures checks and fails the test for each one not as expected.
func expect(t *testing.T, checks ...demo.Check) []demo.Result {
	t.Helper()
	results, err := demo.Matrix(context.Background(), dir, binary, admin, checks)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := demo.PrintMatrix(&out, results); err != nil {
		t.Errorf("%v\n%s", err, out.String())
	}
	return results
}

// TestDemoMatrix is `make demo`'s matrix: same network on one node and
// across nodes reach each other; tenants with the same subnet, a CUDN and a
// tenant, UDN and default-network pods do not; then its connected networks.
func TestDemoMatrix(t *testing.T) {
	serve(t, examplePods(t)...)
	expect(t, demo.DemoChecks...)
	// The demo's connected networks: l3-blue and l2-blue reach each other
	// while the connect lives, and not once it is deleted.
	var out bytes.Buffer
	if err := demo.ConnectDemo(context.Background(), dir, binary, admin, &out); err != nil {
		t.Errorf("%v\n%s", err, out.String())
	}
}

// TestPodRecreatedOnAnotherNode: a pod deleted and created again on another
// node is reachable again, on Layer2 and on Layer3, and its old namespace is
// gone.
func TestPodRecreatedOnAnotherNode(t *testing.T) {
	ctx := context.Background()
	for _, ref := range []string{"l2-blue/c", "l3-blue/c"} {
		ns, name, _ := strings.Cut(ref, "/")
		old := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, old); err != nil {
			t.Fatal(err)
		}
		oldNetns, err := sandbox.PodNetns(ctx, dir, admin, ref)
		if err != nil {
			t.Fatal(err)
		}
		// A normal (graceful) delete: the node agent unplumbs the pod and
		// finishes the deletion, as a kubelet would.
		if err := admin.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(old), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s still exists (%v)", ref, err)
			}
			if _, err := os.Stat(filepath.Join("/run/netns", oldNetns)); err == nil {
				return fmt.Errorf("%s's old network namespace %s still exists", ref, oldNetns)
			}
			return nil
		})
		moved := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{NodeName: "node3", Containers: old.Spec.Containers}}
		if err := admin.Create(ctx, moved); err != nil {
			t.Fatal(err)
		}
	}
	serve(t, "l2-blue/c", "l3-blue/c")
	results := expect(t,
		demo.Check{Name: "Layer2 UDN, to the moved pod", From: "l2-blue/a", To: []string{"l2-blue/c"}, On: demo.OnPrimary, Family: 4, Reachable: true},
		demo.Check{Name: "Layer3 UDN, to the moved pod", From: "l3-blue/a", To: []string{"l3-blue/c"}, On: demo.OnPrimary, Family: 4, Reachable: true},
	)
	for _, r := range results {
		if r.TargetNode != "node3" {
			t.Errorf("%s: target on %s, want node3", r.Name, r.TargetNode)
		}
	}
}

// TestNetworkDeletion: a UDN in use is kept (and keeps working) until its
// pods are gone, then leaves nothing in any zone; a network whose NAD an
// administrator deletes under running pods stops carrying their packets, and
// leaves nothing either.
func TestNetworkDeletion(t *testing.T) {
	ctx := context.Background()
	t.Run("UDN in use", func(t *testing.T) {
		serve(t, "l3-red/a", "l3-red/b")
		udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "l3-red", Name: "tenant"}}
		if err := admin.Delete(ctx, udn); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(udn), udn); err != nil {
				return err
			}
			c := meta.FindStatusCondition(udn.Status.Conditions, v1.ConditionNetworkCreated)
			if c == nil || c.Reason != v1.ReasonNetworkInUse {
				return fmt.Errorf("condition %+v, want reason %s", c, v1.ReasonNetworkInUse)
			}
			return nil
		})
		expect(t, demo.Check{Name: "Layer3 UDN in use, same node", From: "l3-red/a", To: []string{"l3-red/b"}, On: demo.OnPrimary, Family: 4, Reachable: true})
		var netns []string
		for _, ref := range []string{"l3-red/a", "l3-red/b", "l3-red/c"} {
			n, err := sandbox.PodNetns(ctx, dir, admin, ref)
			if err != nil {
				t.Fatal(err)
			}
			netns = append(netns, n)
		}
		if err := admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("l3-red")); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(udn), udn); !apierrors.IsNotFound(err) {
				return fmt.Errorf("UDN still exists (%v)", err)
			}
			for _, n := range netns {
				if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
					return fmt.Errorf("pod network namespace %s still exists", n)
				}
			}
			return nbClean("l3-red.tenant")
		})
	})
	t.Run("NAD deleted under running pods", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "handmade"}}
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "wire"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion": "1.0.0", "name": "wire-net", "type": "ovn-k8s-cni-overlay",
				"topology": "layer2", "role": "secondary", "subnets": "192.168.77.0/24", "netAttachDefName": "handmade/wire"}`}}
		objs := []client.Object{ns, nad}
		for i, node := range []string{"node1", "node2"} {
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: fmt.Sprintf("p%d", i), Annotations: map[string]string{"k8s.v1.cni.cncf.io/networks": "wire"}},
				Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}})
		}
		for _, o := range objs {
			if err := admin.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		serve(t, "handmade/p0", "handmade/p1")
		wire := demo.Check{Name: "hand-made secondary Layer2, across nodes", From: "handmade/p0", To: []string{"handmade/p1"}, On: "handmade/wire", Family: 4, Reachable: true}
		expect(t, wire)
		if err := admin.Delete(ctx, nad); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error { return nbClean("wire-net") })
		syncDataplane(t)
		wire.Name, wire.Reachable = "hand-made secondary Layer2 after its NAD was deleted", false
		expect(t, wire)
	})
}

// TestFaults: a zone controller and a zone's NB server killed mid-run are
// restarted (status says so), and the zone converges: a pod created after
// each fault is reachable.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	for i, victim := range []string{"zone-controller/node2", "ovn-nb/node2", "ovn-controller/node2", "ovn-northd/node2"} {
		before := process(t, victim)
		if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			p := process(t, victim)
			if p.PID == before.PID || !p.Running || p.Restarts != before.Restarts+1 {
				return fmt.Errorf("%s not restarted yet: %+v", victim, p)
			}
			return nil
		})
		var status bytes.Buffer
		if err := sandbox.Status(dir, &status); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(status.String(), victim) {
			t.Fatalf("status does not list %s:\n%s", victim, status.String())
		}
		if strings.HasPrefix(victim, "ovn-northd/") && !strings.Contains(status.String(), "WARNING: "+victim+" restarted") {
			t.Fatalf("status does not warn that %s restarted:\n%s", victim, status.String())
		}
		name := fmt.Sprintf("after-fault-%d", i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "l2-blue", Name: name},
			Spec: corev1.PodSpec{NodeName: "node2", Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
		if err := admin.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		serve(t, "l2-blue/"+name)
		expect(t, demo.Check{Name: "Layer2 UDN after killing " + victim, From: "l2-blue/a", To: []string{"l2-blue/" + name},
			On: demo.OnPrimary, Family: 4, Reachable: true})
	}
}

// TestUpTwice: a second up on a running sandbox is refused with a clear
// message and leaves the running one alone.
func TestUpTwice(t *testing.T) {
	err := sandbox.Up(sandbox.Options{Dir: dir, Nodes: 3, Binary: binary}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second up: %v, want an already-running error", err)
	}
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil || st.Phase != sandbox.PhaseReady || !sandbox.Alive(st.SupervisorPID) {
		t.Fatalf("running sandbox disturbed: %+v (%v)", st, err)
	}
}

// TestDownAfterCrash: a sandbox whose supervisor was killed is reported
// crashed, and down removes everything it left: processes, namespaces, state.
func TestDownAfterCrash(t *testing.T) {
	crashDir := filepath.Join(t.TempDir(), "crash")
	if err := sandbox.Up(sandbox.Options{Dir: crashDir, Nodes: 1, Binary: binary, Attached: true}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.Down(crashDir, &bytes.Buffer{}) })
	l := sandbox.NewLayoutMust(crashDir)
	st, err := sandbox.ReadState(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(st.SupervisorPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		var out bytes.Buffer
		if err := sandbox.Status(crashDir, &out); err != nil {
			return err
		}
		if !strings.Contains(out.String(), "crashed") {
			return fmt.Errorf("status does not say crashed:\n%s", out.String())
		}
		return nil
	})
	var out bytes.Buffer
	if err := sandbox.Down(crashDir, &out); err != nil {
		t.Fatal(err)
	}
	if left := sandbox.Leftovers(l); len(left) > 0 {
		t.Fatalf("left after down: %v", left)
	}
	if _, err := os.Stat(crashDir); err == nil {
		t.Fatalf("%s still exists", crashDir)
	}
}

// process returns a sandbox process's entry in the state file.
func process(t *testing.T, name string) sandbox.Process {
	t.Helper()
	p, err := tryProcess(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryProcess is process that returns its error (for polls).
func tryProcess(name string) (sandbox.Process, error) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return sandbox.Process{}, err
	}
	for _, p := range st.Processes {
		if p.Name == name {
			return p, nil
		}
	}
	return sandbox.Process{}, fmt.Errorf("no process %s in the sandbox state", name)
}

// nbClean checks that no zone's Northbound mentions a network.
func nbClean(network string) error {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		out, err := deps.OVNCommand("ovsdb-client", "dump", n.NB, "OVN_Northbound").Output()
		if err != nil {
			return fmt.Errorf("dumping %s's NB: %w", n.Name, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, network) {
				return fmt.Errorf("zone %s still has rows of %s: %s", n.Name, network, strings.TrimSpace(line))
			}
		}
	}
	return nil
}

// syncDataplane waits until every zone's chassis has applied everything
// written to the zone's Northbound so far (sandbox.SyncChassis).
func syncDataplane(t *testing.T) {
	t.Helper()
	if err := demo.SyncChassis(dir); err != nil {
		t.Fatal(err)
	}
}

// reachServers starts the reach servers in pods until the test ends, and
// waits until each answers at its own address on every probe: a blocked
// cell of a reach matrix proves something only if its target answers.
func reachServers(t *testing.T, pods []demo.ReachPod, probes []demo.ReachProbe, timeout, deadline time.Duration) {
	t.Helper()
	stop, err := demo.ReachServers(binary, pods)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	var missing []string
	if err := proc.WaitFor(deadline, 100*time.Millisecond, func() (bool, error) {
		missing, err = demo.ReachSelf(context.Background(), binary, pods, probes, timeout)
		return err == nil && len(missing) == 0, err
	}); err != nil {
		t.Fatalf("servers not answering from inside their own pods: %v\n%s", err, strings.Join(missing, "\n"))
	}
}

func eventually(t testing.TB, f func() error) {
	t.Helper()
	if err := proc.WaitFor(2*time.Minute, 100*time.Millisecond, func() (bool, error) {
		err := f()
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
}
