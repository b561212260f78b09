package agent_test

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/agent"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

// agentHarness runs a node agent against a real OVS (userspace datapath) in
// a network namespace, under the node role's RBAC.
type agentHarness struct {
	t     *testing.T
	admin client.Client
	node  string
	// socket and confDir are where the agent serves the CNI plugin and
	// installs its configuration.
	socket, confDir string
	ovs             *ovnrun.Node
	host            cni.Host
	mu              sync.Mutex
	stop            func()
}

func newHarness(t *testing.T) *agentHarness {
	deps.Require(t, deps.CheckOVN)
	h := &agentHarness{t: t, admin: cmtest.Admin(t, env), node: cmtest.UniqueName("agent")}
	h.socket, h.confDir = filepath.Join(t.TempDir(), "cni.sock"), t.TempDir()
	netns := "natest-node-" + h.node[len(h.node)-4:]
	if out, err := deps.OVNCommand("ip", "netns", "add", netns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = deps.OVNCommand("ip", "netns", "del", netns).Run() })
	ovs, err := ovnrun.StartNode(ovnrun.NodeOptions{Name: h.node, Dir: t.TempDir(), Netns: netns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ovs.Stop)
	if _, err := ovs.VSCtl("set", "Open_vSwitch", ".", "external_ids:system-id=chassis-"+h.node); err != nil {
		t.Fatal(err)
	}
	h.ovs = ovs
	h.host = cni.Host{Netns: netns, OVSDB: ovs.DB, Bridge: "br-int", Command: deps.OVNCommand, Path: deps.OVNProgram}
	if err := h.admin.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.node}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.admin.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.node}})
	})
	return h
}

// start runs the agent (again) until the test ends or stopAgent is called.
func (h *agentHarness) start() {
	h.t.Helper()
	h.stopAgent()
	cfg := cmtest.RoleIdentity(h.t, env, "node.yaml", "ovn-udn-node")
	gw, err := node.GatewayFlags{IP: "192.168.101.11/24", NextHops: []string{"192.168.101.1"}, MAC: "02:00:00:00:01:0b"}.Parse()
	if err != nil {
		h.t.Fatal(err)
	}
	mgr, err := agent.Build(cfg, node.Options{Node: h.node, Host: h.host, Cluster: config.Default(),
		Info: nodeinfo.Info{PrimaryIPs: []netip.Prefix{netip.MustParsePrefix("192.168.100.11/24")}, Gateway: gw},
		CNI:  node.CNIOptions{Socket: h.socket, ConfDir: h.confDir}})
	if err != nil {
		h.t.Fatal(err)
	}
	h.run(mgr.Start)
}

// run runs an agent's manager until the test ends or stopAgent is called.
func (h *agentHarness) run(start func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("node agent: %v", err)
			}
		})
	}
	h.t.Cleanup(stop)
	h.mu.Lock()
	h.stop = stop
	h.mu.Unlock()
}

func (h *agentHarness) stopAgent() {
	h.mu.Lock()
	stop := h.stop
	h.stop = nil
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// addresses returns the addresses on an interface of a namespace ("" when
// the interface or namespace does not exist).
func addresses(netns, dev string) string {
	out, err := deps.OVNCommand("ip", "-n", netns, "-br", "addr", "show", dev).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// annotate gives the pod an address on the default network, as
// cluster-manager and the zone would.
func annotate(t *testing.T, c client.Client, pod *corev1.Pod, ip string) {
	t.Helper()
	annotateMAC(t, c, pod, ip, "0a:58:0a:f4:01:05")
}

func annotateMAC(t *testing.T, c client.Client, pod *corev1.Pod, ip, mac string) {
	t.Helper()
	nets := podnet.Networks{podnet.DefaultKey: {IPs: []string{ip + "/24"}, MAC: mac, Role: podnet.RolePrimary,
		Gateways: []string{"10.244.1.1"}}}
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		_, err := podnet.Patch(context.Background(), c, pod, nets)
		return err
	})
}

func TestExtraUplinkFlags(t *testing.T) {
	u, err := node.ParseUplinkFlag("bridge=br-ex2,interface=eth2,physical-network=physnet2,ip=192.168.102.11/24,mac=02:00:00:00:02:0b,next-hop=192.168.102.1,next-hop=192.168.102.2")
	if err != nil {
		t.Fatal(err)
	}
	want := node.UplinkFlags{Bridge: "br-ex2", Interface: "eth2", PhysicalNetwork: "physnet2", IP: "192.168.102.11/24",
		MAC: "02:00:00:00:02:0b", NextHops: []string{"192.168.102.1", "192.168.102.2"}}
	if diff := cmp.Diff(want, u); diff != "" {
		t.Errorf("ParseUplinkFlag (-want +got):\n%s", diff)
	}
	for _, bad := range []struct{ in, err string }{
		{"bridge=br-ex2", "interface is required"},
		{"bridge=br-ex2,colour=red", `unknown key "colour"`},
		{"bridge", "is not key=value"},
	} {
		if _, err := node.ParseUplinkFlag(bad.in); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("ParseUplinkFlag(%q) = %v, want an error containing %q", bad.in, err, bad.err)
		}
	}
	gw := node.GatewayFlags{IP: "192.168.100.11/24", MAC: "02:00:00:00:01:0b", NextHops: []string{"192.168.100.1"}, Extra: []node.UplinkFlags{u}}
	g, err := gw.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Uplinks()) != 2 || g.Extra[0].PhysicalNetwork != "physnet2" || len(g.Extra[0].NextHops) != 2 {
		t.Errorf("uplinks %+v", g.Uplinks())
	}
	// An uplink overlapping the first is refused before anything starts.
	u.IP, u.NextHops = "192.168.100.200/24", nil
	gw.Extra = []node.UplinkFlags{u}
	if _, err := gw.Parse(); err == nil || !strings.Contains(err.Error(), "overlapping subnets") {
		t.Errorf("overlapping uplinks: %v", err)
	}
}

// TestNodeAnnotationsKept: the agent's own Node annotations are put back
// when someone deletes or edits them, and written onto a Node registered
// anew after it was deleted (a node leaving the cluster and joining again),
// all without restarting the agent.
func TestNodeAnnotationsKept(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.start()
	published := func() error {
		n := &corev1.Node{}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: h.node}, n); err != nil {
			return err
		}
		info, err := nodeinfo.Parse(h.node, n.Annotations)
		if info.ChassisID != "chassis-"+h.node || info.Zone != h.node || info.Gateway == nil || info.EncapIP.String() != "192.168.100.11" {
			return fmt.Errorf("node annotations not published: %+v (%v)", info, err)
		}
		return nil
	}
	cmtest.Eventually(t, 0, published)

	// Someone deletes one and edits another.
	n := &corev1.Node{}
	if err := h.admin.Get(ctx, client.ObjectKey{Name: h.node}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	delete(n.Annotations, nodeinfo.ChassisIDAnnotation)
	n.Annotations[nodeinfo.ZoneAnnotation] = "elsewhere"
	if err := h.admin.Patch(ctx, n, patch); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, published)

	// The Node is deleted, then registered again without annotations.
	if err := h.admin.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.node}}); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, func() error {
		err := h.admin.Get(ctx, client.ObjectKey{Name: h.node}, &corev1.Node{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node still there (%v)", err)
	})
	if err := h.admin.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.node}}); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, published)
}
