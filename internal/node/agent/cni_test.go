package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/pods"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// pluginBinary builds ovn-udn once and installs it as the CNI plugin in a
// bin directory of its own, as the agent would on a node.
var pluginBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ovn-udn-cni-bin-")
	if err != nil {
		return "", err
	}
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, netconf.CNIType), "github.com/ovn-udn/ovn-udn/cmd/ovn-udn").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return dir, nil
})

// runtime plays a container runtime: it creates sandboxes' network
// namespaces under /run/netns and calls the CNI plugin through the CNI
// project's own library (libcni, which containerd uses), with the
// configuration list the agent installed.
type runtime struct {
	t   *testing.T
	cni *libcni.CNIConfig
	// list is the installed configuration list (1.0.0), v11 the same at
	// 1.1.0, which STATUS and GC need.
	list, v11 *libcni.NetworkConfigList
	netns     []string
}

func newRuntime(t *testing.T, confDir string) *runtime {
	t.Helper()
	bin, err := pluginBinary()
	if err != nil {
		t.Fatal(err)
	}
	var list *libcni.NetworkConfigList
	cmtest.Eventually(t, 0, func() error {
		var err error
		list, err = libcni.ConfListFromFile(filepath.Join(confDir, pods.ConfFile))
		return err
	})
	v11 := *list
	v11.CNIVersion = "1.1.0"
	rt := &runtime{t: t, cni: libcni.NewCNIConfigWithCacheDir([]string{bin}, t.TempDir(), nil), list: list, v11: &v11}
	t.Cleanup(func() {
		for _, n := range rt.netns {
			_ = deps.OVNCommand("ip", "netns", "del", n).Run()
		}
	})
	return rt
}

// sandbox creates a sandbox's namespace, named as containerd names them.
func (rt *runtime) sandbox(id string) *libcni.RuntimeConf {
	rt.t.Helper()
	name := "cni-natest-" + id
	if out, err := deps.OVNCommand("ip", "netns", "add", name).CombinedOutput(); err != nil {
		rt.t.Fatalf("ip netns add: %v: %s", err, out)
	}
	rt.netns = append(rt.netns, name)
	return &libcni.RuntimeConf{ContainerID: id, NetNS: "/var/run/netns/" + name, IfName: "eth0"}
}

func podArgs(rc *libcni.RuntimeConf, pod *corev1.Pod) *libcni.RuntimeConf {
	rc.Args = [][2]string{{"IgnoreUnknown", "1"}, {"K8S_POD_NAMESPACE", pod.Namespace}, {"K8S_POD_NAME", pod.Name},
		{"K8S_POD_INFRA_CONTAINER_ID", rc.ContainerID}, {"K8S_POD_UID", string(pod.UID)}}
	return rc
}

// installWhenPlugged plays ovn-controller: it marks each interface the
// agent plugs installed, until the test ends.
func (h *agentHarness) installWhenPlugged(ctx context.Context) {
	go func() {
		for ctx.Err() == nil {
			out, err := h.ovs.VSCtl("--bare", "--columns=name", "find", "Interface", "external_ids:"+cni.SandboxKey+"!=\"\"")
			if err == nil {
				for _, name := range strings.Fields(out) {
					_, _ = h.ovs.VSCtl("set", "Interface", name, "external_ids:ovn-installed=true")
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
}

// TestCNIPlugin drives ovn-udn's CNI plugin as a container runtime does
// (libcni, the installed configuration list, the real plugin binary)
// against the agent: ADD waits for the pod's annotation and for
// ovn-controller, then returns a result the runtime takes the pod's address
// from; CHECK holds; DEL removes it all, and again, and for an unknown
// sandbox; GC removes what the runtime no longer lists; a pod asking for a
// network it may not use is refused with the reason; a pod deleted while
// its ADD waits leaves nothing, and so does one whose plumbing fails; with
// the agent down, STATUS says the plugin is not available, ADD fails at
// once, and DEL still succeeds; and a pod deleted while the agent was down
// loses its interfaces when the agent is back.
func TestCNIPlugin(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.start()
	h.installWhenPlugged(ctx)
	rt := newRuntime(t, h.confDir)
	if err := rt.cni.GetStatusNetworkList(ctx, rt.v11); err != nil {
		t.Fatalf("STATUS with the agent up: %v", err)
	}
	ns := cmtest.Namespace(t, h.admin, "cni", nil)
	newPod := func(name string, ann map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
			Spec: corev1.PodSpec{NodeName: h.node, Containers: []corev1.Container{{Name: "c", Image: "agnhost"}}}}
		if err := h.admin.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	type added struct {
		res types.Result
		err error
	}
	addAsync := func(rc *libcni.RuntimeConf) chan added {
		ch := make(chan added, 1)
		go func() {
			actx, acancel := context.WithTimeout(ctx, 2*time.Minute)
			defer acancel()
			res, err := rt.cni.AddNetworkList(actx, rt.list, rc)
			ch <- added{res, err}
		}()
		return ch
	}
	plugged := func(key string) []cni.Plugged {
		ps, err := h.host.Ports()
		if err != nil {
			t.Fatal(err)
		}
		return ps[key]
	}

	// ADD waits for the annotation, then returns the pod's interface.
	pod := newPod("p", nil)
	rc := podArgs(rt.sandbox("sb1"), pod)
	pending := addAsync(rc)
	select {
	case a := <-pending:
		t.Fatalf("ADD returned before the pod had an address: %v %v", a.res, a.err)
	case <-time.After(300 * time.Millisecond): // it is waiting: the annotation below wakes it
	}
	annotate(t, h.admin, pod, "10.244.1.5")
	a := <-pending
	if a.err != nil {
		t.Fatalf("ADD: %v", a.err)
	}
	res, err := types100.NewResultFromResult(a.res)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Interfaces) != 1 || res.Interfaces[0].Name != "eth0" || res.Interfaces[0].Sandbox != rc.NetNS ||
		len(res.IPs) != 1 || res.IPs[0].Address.String() != "10.244.1.5/24" || res.IPs[0].Gateway.String() != "10.244.1.1" {
		t.Errorf("ADD result %s: want eth0 in %s with 10.244.1.5/24 via 10.244.1.1", res, rc.NetNS)
	}
	if got := addresses("cni-natest-sb1", "eth0"); !strings.Contains(got, "10.244.1.5/24") {
		t.Errorf("eth0 in the sandbox: %q", got)
	}
	if err := rt.cni.CheckNetworkList(ctx, rt.list, rc); err != nil {
		t.Errorf("CHECK after ADD: %v", err)
	}

	// GC with the sandbox still listed keeps it; DEL removes it, and
	// succeeds again, and for a sandbox nobody knows.
	if err := rt.cni.GCNetworkList(ctx, rt.v11, &libcni.GCArgs{ValidAttachments: []types.GCAttachment{{ContainerID: "sb1", IfName: "eth0"}}}); err != nil {
		t.Errorf("GC: %v", err)
	}
	if len(plugged(ns+"/p")) != 1 {
		t.Errorf("GC removed a sandbox the runtime lists")
	}
	for i := 0; i < 2; i++ {
		if err := rt.cni.DelNetworkList(ctx, rt.list, rc); err != nil {
			t.Errorf("DEL %d: %v", i+1, err)
		}
		if p := plugged(ns + "/p"); len(p) != 0 {
			t.Errorf("after DEL %d: still plugged %v", i+1, p)
		}
	}
	if err := rt.cni.DelNetworkList(ctx, rt.list, podArgs(&libcni.RuntimeConf{ContainerID: "nobody", NetNS: "/var/run/netns/none", IfName: "eth0"}, pod)); err != nil {
		t.Errorf("DEL of an unknown sandbox: %v", err)
	}

	// GC removes a sandbox the runtime no longer lists.
	rc2 := podArgs(rt.sandbox("sb2"), pod)
	if a := <-addAsync(rc2); a.err != nil {
		t.Fatalf("ADD of a second sandbox: %v", a.err)
	}
	if err := rt.cni.GCNetworkList(ctx, rt.v11, &libcni.GCArgs{}); err != nil {
		t.Errorf("GC: %v", err)
	}
	if p := plugged(ns + "/p"); len(p) != 0 {
		t.Errorf("after GC of every sandbox: still plugged %v", p)
	}

	// A network the pod may not use: refused at once, with the reason.
	bad := newPod("bad", map[string]string{netconf.NetworksAnnotation: "elsewhere/secret"})
	start := time.Now()
	a = <-addAsync(podArgs(rt.sandbox("sb3"), bad))
	if a.err == nil || !strings.Contains(a.err.Error(), ns+"/bad") || !strings.Contains(a.err.Error(), "elsewhere/secret") || !strings.Contains(a.err.Error(), "InvalidNetworkSelection") {
		t.Errorf("ADD of a pod asking for another namespace's network: %v; want a refusal naming the pod, the network and the reason", a.err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the refusal took %s", took)
	}

	// A pod deleted while its ADD waits: the ADD fails, nothing is left.
	gone := newPod("gone", nil)
	pending = addAsync(podArgs(rt.sandbox("sb4"), gone))
	if err := h.admin.Delete(ctx, gone, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if a := <-pending; a.err == nil {
		t.Errorf("ADD of a pod deleted meanwhile succeeded")
	}
	if p := plugged(ns + "/gone"); len(p) != 0 {
		t.Errorf("a pod deleted during its ADD left %v", p)
	}

	// Plumbing that fails (a multicast MAC: the kernel refuses it) fails
	// the ADD, naming the pod, and leaves nothing: no port, no veth at
	// either end.
	badMAC := newPod("badmac", nil)
	annotateMAC(t, h.admin, badMAC, "10.244.1.9", "01:00:5e:00:00:01")
	if a := <-addAsync(podArgs(rt.sandbox("sb6"), badMAC)); a.err == nil || !strings.Contains(a.err.Error(), ns+"/badmac") {
		t.Errorf("ADD with a MAC the kernel refuses: %v, want an error naming the pod", a.err)
	}
	if p := plugged(ns + "/badmac"); len(p) != 0 {
		t.Errorf("failed plumbing left %v", p)
	}
	if h.host.LinkExists(cni.HostVeth(ns + "_badmac")) {
		t.Errorf("failed plumbing left the host's veth")
	}
	if got := addresses("cni-natest-sb6", "eth0"); got != "" {
		t.Errorf("failed plumbing left eth0 in the sandbox: %q", got)
	}

	// A pod plumbed before the agent goes down, deleted while it is down
	// (its DEL never comes).
	left := newPod("left", nil)
	annotate(t, h.admin, left, "10.244.1.7")
	if a := <-addAsync(podArgs(rt.sandbox("sb7"), left)); a.err != nil {
		t.Fatalf("ADD: %v", a.err)
	}

	// The agent down: STATUS is "not available", ADD fails at once, DEL
	// succeeds (a pod's deletion is never blocked).
	h.stopAgent()
	if err := h.admin.Delete(ctx, left, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	err = rt.cni.GetStatusNetworkList(ctx, rt.v11)
	var te *types.Error
	if !errors.As(err, &te) || te.Code != 50 {
		t.Errorf("STATUS with the agent down: %v, want code 50", err)
	}
	start = time.Now()
	if a := <-addAsync(podArgs(rt.sandbox("sb5"), pod)); a.err == nil || !strings.Contains(a.err.Error(), "not reachable") {
		t.Errorf("ADD with the agent down: %v, want 'not reachable'", a.err)
	}
	if err := rt.cni.DelNetworkList(ctx, rt.list, rc); err != nil {
		t.Errorf("DEL with the agent down: %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("ADD and DEL with the agent down took %s", took)
	}

	// The agent back: the pod deleted meanwhile loses its interfaces.
	h.start()
	cmtest.Eventually(t, 0, func() error {
		if p := plugged(ns + "/left"); len(p) != 0 || h.host.LinkExists(cni.HostVeth(ns+"_left")) {
			return fmt.Errorf("a pod deleted while the agent was down is still plugged: %v", p)
		}
		return nil
	})
}
