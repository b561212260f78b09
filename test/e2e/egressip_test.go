package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestEgressIP: the pods an EgressIP selects leave the cluster from its
// egress IP, held by another node than theirs — on the default network, a
// Layer3 and a Layer2 primary network — as the outside server sees them; a
// pod on an egress node of an EgressIP with two IPs spreads its new
// connections over both; once the EgressIPs are deleted, the pods leave
// from their node's address again.
func TestEgressIP(t *testing.T) {
	ctx := context.Background()
	setEgressAssignable(t, "node2", true)
	t.Cleanup(func() { setEgressAssignable(t, "node2", false) })
	// eip-lone's one pod runs on node1: node2 renders its network only
	// because it holds its egress IP (internal/activity).
	loneTenant(t, "eip-lone", "node1")
	cases := []struct {
		namespace, pod, eip string
		node                int // the pod's
	}{
		{"plain", "plain/a", "192.168.100.150", 1},
		{"l3-blue", "l3-blue/a", "192.168.100.151", 1},
		{"l2-blue", "l2-blue/a", "192.168.100.152", 1},
		{"eip-lone", "eip-lone/a", "192.168.100.155", 1},
	}
	created := time.Now()
	for _, c := range cases {
		e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + c.namespace},
			Spec: v1.EgressIPSpec{EgressIPs: []string{c.eip},
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: c.namespace}}}}
		if err := admin.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = admin.Delete(ctx, e) })
	}
	for _, c := range cases {
		eventually(t, func() error {
			e := &v1.EgressIP{}
			if err := admin.Get(ctx, client.ObjectKey{Name: "e2e-" + c.namespace}, e); err != nil {
				return err
			}
			if len(e.Status.Items) != 1 || e.Status.Items[0].Node != "node2" {
				return fmt.Errorf("EgressIP e2e-%s: status %+v, want %s on node2", c.namespace, e.Status.Items, c.eip)
			}
			return nil
		})
		eventually(t, func() error {
			h, got := tryHoldIn(t, dir, admin, c.pod, c.eip)
			if h == nil {
				return fmt.Errorf("%s: the outside saw %q, want the egress IP %s", c.pod, got, c.eip)
			}
			// The connection carries a line both ways (not t.Fatal here:
			// eventually retries).
			if _, err := fmt.Fprintln(h.in, "through the egress node"); err != nil {
				return err
			}
			if got := h.next(); got != "through the egress node" {
				return fmt.Errorf("%s: the held connection echoed %q", c.pod, got)
			}
			return nil
		})
		// The three objects were created together: each later case's
		// figure includes the earlier ones' checks.
		t.Logf("%s: first connection from %s %s after the EgressIPs were created", c.pod, c.eip, time.Since(created).Round(time.Millisecond))
	}
	// Only the holder answers ARP for an egress IP, though node1 and node3
	// are on the same subnet: the outside, its entry flushed, learns
	// node2's MAC when it answers the next connection.
	ext := sandbox.NewLayoutMust(dir).ExternalNetns()
	if out, err := exec.Command("ip", "-n", ext, "neigh", "flush", "to", cases[0].eip).CombinedOutput(); err != nil {
		t.Fatalf("ip neigh flush: %v: %s", err, out)
	}
	eventually(t, func() error {
		if h, got := tryHoldIn(t, dir, admin, cases[0].pod, cases[0].eip); h == nil {
			return fmt.Errorf("%s: the outside saw %q, want %s", cases[0].pod, got, cases[0].eip)
		}
		return nil
	})
	if mac := neighbour(t, ext, cases[0].eip); mac != sandbox.GatewayMAC(2) {
		t.Errorf("the outside resolved %s to %q, want node2's %s", cases[0].eip, mac, sandbox.GatewayMAC(2))
	}
	// explain names the reroute on the lone tenant's path to the outside.
	got := explainOut(t, "--from", "eip-lone/a", "--to", fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort))
	if want := "EgressIP e2e-eip-lone's reroute to its egress nodes"; !strings.Contains(got, want) {
		t.Errorf("explain eip-lone/a to the outside does not say %q:\n%s", want, got)
	}
	// East-west is untouched: the selected pods on node1 still reach pods
	// on the egress node itself (their traffic must not take the egress
	// path there, nor loop through its gateway router).
	serve(t, "plain/b", "l3-blue/c") // once Ready (their addresses known)
	b := &corev1.Pod{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "plain", Name: "b"}, b); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(demo.ProbePort)
	for _, x := range []struct{ from, to, addr string }{
		{"plain/a", "plain/b", net.JoinHostPort(b.Status.PodIP, port)},
		{"l3-blue/a", "l3-blue/c", net.JoinHostPort(primaryIP(t, admin, "l3-blue/c", "l3-blue/tenant"), port)},
	} {
		h := holdEcho(t, dir, admin, "east-west to the egress node", x.from, x.addr)
		if _, stall, err := h.stop(); err != nil {
			t.Errorf("%s to %s on the egress node: %v (longest wait %s)", x.from, x.to, err, stall)
		}
	}
	// Two egress IPs, one on node2 and one on node3, for a Layer2 tenant
	// whose pod runs on node2, an egress node itself (seed 000's story):
	// its new connections leave from both.
	setEgressAssignable(t, "node3", true)
	t.Cleanup(func() { setEgressAssignable(t, "node3", false) })
	two := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "e2e-two"},
		Spec: v1.EgressIPSpec{EgressIPs: []string{"192.168.100.153", "192.168.100.154"},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "l2-red"}}}}
	if err := admin.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, two) })
	eventually(t, func() error {
		seen := map[string]int{}
		for range 16 {
			h, got := tryHoldIn(t, dir, admin, "l2-red/b", "192.168.100.153", "192.168.100.154")
			if h == nil {
				return fmt.Errorf("l2-red/b: the outside saw %q, want one of its egress IPs", got)
			}
			seen[got]++
			_ = h.in.Close()
			_ = h.cmd.Process.Kill()
		}
		if len(seen) != 2 {
			return fmt.Errorf("l2-red/b's 16 connections left from %v, want both egress IPs", seen)
		}
		t.Logf("l2-red/b (on egress node2): 16 connections left from %v", seen)
		return nil
	})
	for _, c := range cases {
		if err := admin.Delete(ctx, &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + c.namespace}}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		nodeIP := strings.Split(sandbox.NodeIP(c.node), "/")[0]
		eventually(t, func() error {
			if h, got := tryHoldIn(t, dir, admin, c.pod, nodeIP); h == nil {
				return fmt.Errorf("%s after the EgressIP's deletion: the outside saw %q, want its node's %s", c.pod, got, nodeIP)
			}
			return nil
		})
	}
}

// setEgressAssignable labels a node as one that may hold egress IPs, or
// removes the label.
func setEgressAssignable(t *testing.T, name string, on bool) {
	t.Helper()
	n := &corev1.Node{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if on {
		n.Labels[v1.EgressAssignableLabel] = ""
	} else {
		delete(n.Labels, v1.EgressAssignableLabel)
	}
	if err := admin.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}

// loneTenant creates a namespace with a Layer3 primary UDN of its own and
// one pod, a, on node, and waits for it to be Ready; it is deleted at the
// test's end.
func loneTenant(t *testing.T, namespace, node string) {
	t.Helper()
	tenantWithPod(t, namespace, node, "10.140.0.0/16/24")
}

// tenantWithPod is loneTenant with the network's subnet.
func tenantWithPod(t *testing.T, namespace, node string, subnet v1.NetworkSubnet) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "tenant"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{subnet}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "a"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	for _, o := range []client.Object{ns, udn} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), ns) })
	// A primary network comes before any pod of its namespace (a pod
	// first makes the UDN refuse: PodsAlreadyExist).
	cmtest.WaitNetworkCreated(t, admin, udn)
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := demo.WaitPodsReady(ctx, dir, admin, []string{namespace + "/a"}, 3*time.Minute); err != nil {
		// What the pod and its namespace's events say, for the post-mortem.
		p := &corev1.Pod{}
		_ = admin.Get(ctx, client.ObjectKeyFromObject(pod), p)
		var events corev1.EventList
		_ = admin.List(ctx, &events, client.InNamespace(namespace))
		var said []string
		for _, e := range events.Items {
			said = append(said, fmt.Sprintf("%s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message))
		}
		t.Fatalf("%v\npod status: %+v\nannotations: %v\nevents:\n%s", err, p.Status, p.Annotations, strings.Join(said, "\n"))
	}
}

// TestEgressIPFailover: an egress node taken off the network (its link
// pulled) loses its egress IP to the other egress node, and a pod's new
// connections leave from the egress IP again within a second, with no
// help from the Ready condition (40 s). Each round pulls the current
// holder's link and puts it back once the IP has moved;
// OVN_UDN_EIP_FAILOVERS rounds (2 by default; docs/performance.md's
// figures are 10).
func TestEgressIPFailover(t *testing.T) {
	ctx := context.Background()
	const eip = "192.168.100.156"
	for _, n := range []string{"node2", "node3"} {
		setEgressAssignable(t, n, true)
		t.Cleanup(func() { setEgressAssignable(t, n, false) })
	}
	loneTenant(t, "eip-failover", "node1")
	e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "e2e-failover"},
		Spec: v1.EgressIPSpec{EgressIPs: []string{eip},
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "eip-failover"}}}}
	if err := admin.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(ctx, e) })
	holder := func() string {
		got := &v1.EgressIP{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(e), got); err != nil || len(got.Status.Items) != 1 {
			return ""
		}
		return got.Status.Items[0].Node
	}
	eventually(t, func() error {
		if h, got := tryHoldIn(t, dir, admin, "eip-failover/a", eip); h == nil {
			return fmt.Errorf("eip-failover/a: the outside saw %q, want %s", got, eip)
		}
		return nil
	})
	rounds := int(envInt("OVN_UDN_EIP_FAILOVERS", 2))
	nodeIndex := map[string]int{"node2": 2, "node3": 3}
	l := sandbox.NewLayoutMust(dir)
	var gaps []time.Duration
	for round := range rounds {
		from := holder()
		if from != "node2" && from != "node3" {
			t.Fatalf("round %d: %s held by %q, want node2 or node3", round, eip, from)
		}
		to := map[string]string{"node2": "node3", "node3": "node2"}[from]
		p := probeEvery(t, "eip-failover/a", 50*time.Millisecond)
		p.waitAnswers(t, eip, 5)
		link := sandbox.UnderlayLink(nodeIndex[from])
		setLink(t, l.UnderlayNetns(), link, "down")
		cut := time.Now()
		// The first attempt begun after the cut that got through, when its
		// answer arrived: an upper bound of the outage.
		back := p.waitAnswers(t, eip, 1)
		// The outside learns the move from the new holder's gratuitous
		// ARP: its neighbour entry names the new holder's MAC. Until then
		// the answers reach the new holder only because the sandbox's
		// bridge floods frames for the MAC of a port that went down (a
		// switch whose port to a hung node stays up would not): the
		// failover is over when both happened.
		var learnt time.Time
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if neighbour(t, l.ExternalNetns(), eip) == sandbox.GatewayMAC(nodeIndex[to]) {
				learnt = time.Now()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d, %s still down: the outside never learnt %s at %s's %s", round, from, eip, to, sandbox.GatewayMAC(nodeIndex[to]))
			}
		}
		gap := back.Sub(cut)
		if learnt.After(back) {
			gap = learnt.Sub(cut)
		}
		gaps = append(gaps, gap)
		setLink(t, l.UnderlayNetns(), link, "up")
		p.Stop()
		if got := holder(); got != to {
			t.Errorf("round %d: %s on %q after %s's link went down, want %s", round, eip, got, from, to)
		}

		t.Logf("round %d: %s's link down; new connections from %s again after %s, the outside's neighbour entry at %s after %s (now on %s)",
			round, from, eip, back.Sub(cut).Round(time.Millisecond), to, learnt.Sub(cut).Round(time.Millisecond), holder())
		t.Logf("round %d, from the cut, in the components' logs: %s", round, failoverSteps(l, cut, from, to))
		// The node that came back takes no part until it has caught up:
		// its bridge no longer answers for the egress IP.
		eventually(t, func() error {
			for _, f := range brExFlows(t, from) {
				if strings.Contains(f, "="+eip) {
					return fmt.Errorf("%s still answers ARP for %s: %s", from, eip, f)
				}
			}
			return nil
		})
		// ... nor did it take the address back meanwhile.
		if mac := neighbour(t, l.ExternalNetns(), eip); mac != sandbox.GatewayMAC(nodeIndex[to]) {
			t.Errorf("round %d, %s back: the outside has %s at %q, want %s's %s", round, from, eip, mac, to, sandbox.GatewayMAC(nodeIndex[to]))
		}
	}
	slices.Sort(gaps)
	t.Logf("failover over %d rounds: p50 %s, max %s", rounds, gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
	// The goal, under a second, is measured by the documented command
	// (docs/egressip.md "Failover") on a quiet machine; this bound says
	// only that the probes moved the address, which the Ready condition
	// alone would have done after 40 s.
	if worst := gaps[len(gaps)-1]; worst > failoverBound {
		t.Errorf("the slowest failover took %s: more than %s, so not by cluster-manager's probes (goal: under a second)", worst, failoverBound)
	}
}

// failoverBound is the slowest failover TestEgressIPFailover accepts: far
// above a loaded machine's seconds, far below the 40 s of the Ready
// condition (kube-controller-manager's --node-monitor-grace-period).
const failoverBound = 10 * time.Second

// neighbour returns the MAC a network namespace's neighbour table has for
// addr ("" when none).
func neighbour(t *testing.T, netns, addr string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", netns, "neigh", "show", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ip neigh show %s: %v: %s", addr, err, out)
	}
	f := strings.Fields(string(out))
	for i := range f {
		if f[i] == "lladdr" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// setLink sets a link of a network namespace up or down.
func setLink(t *testing.T, netns, link, state string) {
	t.Helper()
	if out, err := exec.Command("ip", "-n", netns, "link", "set", link, state).CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s %s: %v: %s", link, state, err, out)
	}
}

// prober is demo.Prober failing the test where it returns an error.
type prober struct{ *demo.Prober }

// probeEvery probes the outside echo server from a pod every interval.
func probeEvery(t *testing.T, pod string, interval time.Duration) *prober {
	t.Helper()
	netns, err := sandbox.PodNetns(context.Background(), dir, admin, pod)
	if err != nil {
		t.Fatal(err)
	}
	return probeEveryFrom(t, netns, fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort), interval, 500*time.Millisecond)
}

// probeEveryFrom probes target from a network namespace every interval.
func probeEveryFrom(t *testing.T, netns, target string, interval, timeout time.Duration) *prober {
	t.Helper()
	p, err := demo.StartProber(netns, binary, target, interval, timeout, 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return &prober{p}
}

// waitAnswers waits for n attempts begun from now on to be answered from
// want, and returns when the last answer arrived.
func (p *prober) waitAnswers(t *testing.T, want string, n int) time.Time {
	t.Helper()
	at, err := p.WaitAnswers(want, n, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// failoverSteps says when, after cut, each component's log shows its part
// of a failover from one node to another: cluster-manager's verdict and
// its move of the address, the zones' EgressIP rows (the pod's node1 and
// the new holder), the new holder's announcement. The logs' timestamps
// have milliseconds; a step not found shows as "-".
func failoverSteps(l sandbox.Layout, cut time.Time, from, to string) string {
	steps := []struct {
		name, log string
		has       []string
	}{
		{"verdict", "cluster-manager", []string{"egress node reachability changed", `"node":"` + from + `"`, `"reachable":false`}},
		{"moved", "cluster-manager", []string{"egress IP moved", `"to":"` + to + `"`}},
		{"node1 rows", "zone-controller-node1", []string{"synced egressips"}},
		{to + " rows", "zone-controller-" + to, []string{"synced egressips"}},
		{"announced", "node-agent-" + to, []string{"egress IP announced"}},
	}
	var out []string
	for _, s := range steps {
		at := "-"
		if ts, _, ok := firstLogAfter(filepath.Join(l.LogDir(), s.log+".log"), cut, s.has...); ok {
			at = ts.Sub(cut).Round(time.Millisecond).String()
		}
		out = append(out, s.name+" "+at)
	}
	// The agent's own part: from its reconcile's start to the announcement.
	if _, line, ok := firstLogAfter(filepath.Join(l.LogDir(), "node-agent-"+to+".log"), cut, "egress IP announced"); ok {
		if _, ms, ok := strings.Cut(line, `"reconcileMillis":`); ok {
			ms, _, _ = strings.Cut(ms, "}")
			out = append(out, "(the announcing reconcile "+strings.TrimSpace(ms)+" ms)")
		}
	}
	return strings.Join(out, ", ")
}

// firstLogAfter returns the time and text of the first line of a JSON log
// at or after t (to the millisecond) that has every one of has.
func firstLogAfter(path string, t time.Time, has ...string) (time.Time, string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !containsAll(line, has) {
			continue
		}
		var l struct{ TS string }
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, l.TS)
		if err == nil && !ts.Before(t.Truncate(time.Millisecond)) {
			return ts, line, true
		}
	}
	return time.Time{}, "", false
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
