package demo

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	libovsdb "github.com/ovn-org/libovsdb/client"
	libovsdbdb "github.com/ovn-org/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/zone/l2version"
)

// The rolling upgrade of the Layer2 topology (seed 000, "Rolling upgrade
// and traffic disruption"), played on the sandbox's three nodes: every zone
// controller restarts as a release before the transit router
// (--layer2-topology-version=1.0), a Layer2 primary network gets a server
// pod and a NodePort Service on each node, and then each node in turn is
// drained and its zone controller restarted at 2.0, while the two other
// nodes' pods are probed every UpgradeProbeInterval: pod to pod both ways,
// each pod to the outside, and from outside through each one's node port
// to the other's pod.
const (
	UpgradeNamespace = "l2-upgrade"
	upgradeSubnet    = "10.161.0.0/24"
	// upgradeNodePortBase + i is node i's pod's node port.
	upgradeNodePortBase = 30220
	// UpgradeProbeInterval is how often each path is probed.
	UpgradeProbeInterval = 100 * time.Millisecond
	// UpgradeEgressIP is the namespace's EgressIP, held by the last node
	// to move: the outside sees the pods' traffic from it.
	UpgradeEgressIP = "192.168.100.230"
)

// UpgradeStep is one node's move to the transit-router topology.
type UpgradeStep struct {
	Node string
	// Kept: restarted at 2.0 with its pod still running, the node stayed
	// at 1.0 (measured on the first step only).
	Kept bool
	// Moved: after the drain and the restart the node says 2.0.
	Moved bool
	// Drain is the drain (cordon, delete the node's Layer2 pods, until its
	// zone has none); Restart the zone controller's stop and start again
	// (the sandbox supervisor's restart delay, 1–2 s, is most of it); Took
	// from the new zone controller running to the node's new pod answering
	// (the decision, the whole replans, the pod's start).
	Drain, Restart, Took time.Duration
	// Probes is how many attempts the other nodes' paths made during the
	// step, and Lost which of them failed, by path. The pods' egress goes
	// through the egress IP's node: while that node moves, what its
	// egress lost is EgressLost, not Lost.
	Probes     int
	Lost       map[string]int
	EgressLost int
	// FloorProbes and FloorLost are the same paths' attempts and failures
	// over FloorWindow right after the step, nothing moving: what a loaded
	// machine loses anyway (timeouts), the floor Lost is compared with.
	FloorProbes, FloorLost int
	// Gaps are the longest times each of the other nodes' paths went
	// without an answer during the step, its ends included (LongestSilence;
	// not the egress paths while the egress IP's node moves).
	Gaps map[string]time.Duration
	// UpgradePorts: after the move, the node's zone has the upgrade ports
	// (it should while another node is at 1.0, and not after).
	UpgradePorts bool
	// Mixed are the paths between the node's new pod and the others just
	// after the move, "" each when answered, else what failed.
	Mixed map[string]string
}

// FloorWindow is how long the probes go on after a step, nothing moving,
// to measure the floor of what they lose.
const FloorWindow = 5 * time.Second

// LossWithinFloor reports whether the step lost no probe, or lost them at
// no more than twice the rate the same paths lost with nothing moving
// (a loaded machine's timeouts, not the move).
func (s UpgradeStep) LossWithinFloor() bool {
	lost := s.LostTotal()
	if lost == 0 {
		return true
	}
	if s.Probes == 0 || s.FloorProbes == 0 || s.FloorLost == 0 {
		return false
	}
	return float64(lost)/float64(s.Probes) <= 2*float64(s.FloorLost)/float64(s.FloorProbes)
}

// UpgradeGapBound is the longest a path of the nodes not moving may go
// unanswered during a step: far above a loaded machine's scattered
// timeouts (probes every 100 ms, each given 500 ms), far below what a
// path the intermediate topology failed to carry would show (the whole
// step, tens of seconds).
const UpgradeGapBound = 3 * time.Second

// Unbroken reports whether the step lost nothing beyond the floor, or,
// on a machine loaded enough to lose probes anyway, no path of the other
// nodes went unanswered for longer than UpgradeGapBound: the probes lost
// are then scattered timeouts, not a path the move broke.
func (s UpgradeStep) Unbroken() bool {
	if s.LossWithinFloor() {
		return true
	}
	if len(s.Gaps) == 0 {
		return false
	}
	for _, g := range s.Gaps {
		if g > UpgradeGapBound {
			return false
		}
	}
	return true
}

// LongestGap is the longest of Gaps, and its path.
func (s UpgradeStep) LongestGap() (string, time.Duration) {
	var path string
	var gap time.Duration
	for p, g := range s.Gaps {
		if g > gap || g == gap && p < path {
			path, gap = p, g
		}
	}
	return path, gap
}

// LostTotal is how many probes the step lost on every path.
func (s UpgradeStep) LostTotal() int {
	n := 0
	for _, l := range s.Lost {
		n += l
	}
	return n
}

// upgradeRun is the upgrade's setup.
type upgradeRun struct {
	ctx         context.Context
	dir, binary string
	c           client.Client
	state       *sandbox.State
	key         string
	stops       []func()
	gen         map[string]int // pods made per node
	egressNode  string         // the node holding UpgradeEgressIP
}

// egressIP labels node egress-assignable and gives the namespace an
// EgressIP, waiting until node holds it.
func (r *upgradeRun) egressIP(node string) error {
	n := &corev1.Node{}
	if err := r.c.Get(r.ctx, client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[v1.EgressAssignableLabel] = ""
	if err := r.c.Patch(r.ctx, n, patch); err != nil {
		return err
	}
	e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: UpgradeNamespace}, Spec: v1.EgressIPSpec{EgressIPs: []string{UpgradeEgressIP},
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": UpgradeNamespace}}}}
	if err := r.c.Create(r.ctx, e); err != nil {
		return err
	}
	r.stops = append(r.stops, func() { _ = r.c.Delete(context.Background(), e) })
	return proc.WaitFor(time.Minute, 100*time.Millisecond, func() (bool, error) {
		cur := &v1.EgressIP{}
		if err := r.c.Get(r.ctx, client.ObjectKeyFromObject(e), cur); err != nil {
			return false, nil
		}
		return len(cur.Status.Items) == 1 && cur.Status.Items[0].Node == node, nil
	})
}

// Layer2Upgrade plays the rolling upgrade and measures each step; at the
// end every node is at 2.0 again (also when it fails, as far as it can),
// and its namespace is gone. It needs three nodes. afterStep, if not nil,
// runs after each step, with the nodes moved so far (a mixed cluster until
// the last), and its error ends the upgrade.
func Layer2Upgrade(ctx context.Context, dir, binary string, c client.Client, afterStep func(moved []string) error) (steps []UpgradeStep, err error) {
	l, err := sandbox.NewLayout(dir)
	if err != nil {
		return nil, err
	}
	st, err := sandbox.ReadState(l)
	if err != nil {
		return nil, err
	}
	if len(st.Nodes) < 3 {
		return nil, fmt.Errorf("the upgrade needs three nodes, the sandbox has %d", len(st.Nodes))
	}
	r := &upgradeRun{ctx: ctx, dir: dir, binary: binary, c: c, state: st, key: podnet.Key(UpgradeNamespace, "tenant")}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: UpgradeNamespace, Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
	defer func() {
		for _, s := range r.stops {
			s()
		}
		err = errors.Join(err, r.restore(ns))
	}()
	// Every zone at 1.0 first, then the network and its pods: a cluster
	// running the old release.
	for _, n := range st.Nodes {
		if err := r.restartZone(n.Name, "--layer2-topology-version="+nodeinfo.Layer2TopologyV1); err != nil {
			return nil, err
		}
	}
	for _, n := range st.Nodes {
		if err := r.waitVersion(n.Name, nodeinfo.Layer2TopologyV1); err != nil {
			return nil, err
		}
	}
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: UpgradeNamespace, Name: "tenant"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{upgradeSubnet}}}
	for _, o := range []client.Object{ns, udn} {
		if err := c.Create(ctx, o); err != nil {
			return nil, err
		}
	}
	// A primary network comes before any pod of its namespace.
	if err := WaitNetworkCreated(ctx, c, udn); err != nil {
		return nil, fmt.Errorf("the upgrade's network: %w", err)
	}
	pods := map[string]*corev1.Pod{}
	for i := range 3 {
		node := st.Nodes[i].Name
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: UpgradeNamespace, Name: node},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"node": node},
				Ports: []corev1.ServicePort{{Port: ProbePort, TargetPort: intstr.FromInt32(ProbePort), NodePort: int32(upgradeNodePortBase + i + 1)}}}}
		if err := c.Create(ctx, svc); err != nil {
			return nil, err
		}
		if pods[node], err = r.serverPod(node); err != nil {
			return nil, err
		}
	}
	egressNode := st.Nodes[2].Name
	if err := r.egressIP(egressNode); err != nil {
		return nil, err
	}
	r.egressNode = egressNode
	for i := range 3 {
		node := st.Nodes[i].Name
		a, b := st.Nodes[(i+1)%3].Name, st.Nodes[(i+2)%3].Name
		step, err := r.step(node, pods, a, b, i == 0)
		steps = append(steps, step)
		if err != nil {
			return steps, fmt.Errorf("upgrading %s: %w", node, err)
		}
		if afterStep != nil {
			var moved []string
			for _, n := range st.Nodes[:i+1] {
				moved = append(moved, n.Name)
			}
			if err := afterStep(moved); err != nil {
				return steps, fmt.Errorf("after %s moved: %w", node, err)
			}
		}
	}
	return steps, nil
}

// step drains node, restarts its zone at 2.0 and brings its pod back,
// probing the paths of the other two nodes' pods meanwhile. keptFirst
// first restarts the zone with the pod still running (it must stay at
// 1.0).
func (r *upgradeRun) step(node string, pods map[string]*corev1.Pod, a, b string, keptFirst bool) (UpgradeStep, error) {
	s := UpgradeStep{Node: node, Lost: map[string]int{}, Mixed: map[string]string{}, Gaps: map[string]time.Duration{}}
	probers, err := r.probe(pods, a, b)
	defer func() {
		for _, p := range probers {
			p.Stop()
		}
	}()
	if err != nil {
		return s, err
	}
	start := time.Now()
	if keptFirst {
		if err := r.restartZone(node); err != nil {
			return s, err
		}
		if err := r.waitLog(node, "layer2 topology kept"); err != nil {
			return s, err
		}
		s.Kept = r.version(node) == nodeinfo.Layer2TopologyV1
	}
	t0 := time.Now()
	if err := r.drain(node, pods[node]); err != nil {
		return s, err
	}
	s.Drain = time.Since(t0)
	t1 := time.Now()
	if err := r.restartZone(node); err != nil {
		return s, err
	}
	s.Restart = time.Since(t1)
	t2 := time.Now()
	if err := r.waitVersion(node, nodeinfo.Layer2TopologyV2); err != nil {
		return s, err
	}
	s.Moved = true
	if err := r.cordon(node, false); err != nil {
		return s, err
	}
	if pods[node], err = r.serverPod(node); err != nil {
		return s, err
	}
	s.Took = time.Since(t2)
	end := time.Now()
	time.Sleep(FloorWindow) // a measurement window (the floor), not a wait for an event
	floorEnd := time.Now()
	for path, p := range probers {
		answered := func(answer string) bool {
			return !strings.HasPrefix(answer, "error") && (!strings.HasSuffix(path, "→ outside") || answer == UpgradeEgressIP)
		}
		if !strings.HasSuffix(path, "→ outside") || node != r.egressNode {
			s.Gaps[path] = p.LongestSilence(start, end, answered)
		}
		for _, l := range p.Since(start) {
			ok := answered(l.Answer)
			switch {
			case l.Began.After(floorEnd):
			case l.Began.After(end):
				s.FloorProbes++
				if !ok {
					s.FloorLost++
				}
			case ok:
				s.Probes++
			case strings.HasSuffix(path, "→ outside") && node == r.egressNode:
				s.Probes++
				s.EgressLost++
			default:
				s.Probes++
				s.Lost[path]++
			}
		}
	}
	rows, err := UpgradeRows(r.ctx, r.dir, node)
	if err != nil {
		return s, err
	}
	s.UpgradePorts = slices.Contains(rows, "stotr-"+netconf.UDNNetworkName(UpgradeNamespace, "tenant")+"_ovn_layer2_switch-upgrade")
	s.Mixed = r.mixed(pods, node, a)
	return s, nil
}

// serverPod creates node's server pod (a drained node's comes back as a
// new one: <node>-<n>), waits for it, and starts its server.
func (r *upgradeRun) serverPod(node string) (*corev1.Pod, error) {
	if r.gen == nil {
		r.gen = map[string]int{}
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: UpgradeNamespace, Name: fmt.Sprintf("%s-%d", node, r.gen[node]),
		Labels: map[string]string{"node": node}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	r.gen[node]++
	if err := r.c.Create(r.ctx, p); err != nil {
		return nil, err
	}
	if err := WaitPodsReady(r.ctx, r.dir, r.c, []string{ref(p)}, 2*time.Minute); err != nil {
		return nil, err
	}
	stop, err := Servers(r.ctx, r.dir, r.binary, r.c, []string{ref(p)})
	if err != nil {
		return nil, err
	}
	r.stops = append(r.stops, stop)
	return p, nil
}

// address is a pod's address on the upgrade's network.
func (r *upgradeRun) address(p *corev1.Pod) (netip.Addr, error) {
	var addr netip.Addr
	err := proc.WaitFor(time.Minute, 50*time.Millisecond, func() (bool, error) {
		cur := &corev1.Pod{}
		if err := r.c.Get(r.ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return false, nil
		}
		nets, err := podnet.ParsePod(cur)
		if err != nil || len(nets[r.key].IPs) == 0 {
			return false, nil
		}
		pfx, err := netip.ParsePrefix(nets[r.key].IPs[0])
		addr = pfx.Addr()
		return err == nil, err
	})
	return addr, err
}

// probe starts a prober per path between the pods of nodes a and b, each
// answered three times before it returns.
func (r *upgradeRun) probe(pods map[string]*corev1.Pod, a, b string) (map[string]*Prober, error) {
	out := map[string]*Prober{}
	l := sandbox.NewLayoutMust(r.dir)
	start := func(name, netns, target, want string) error {
		p, err := StartProber(netns, r.binary, target, UpgradeProbeInterval, 500*time.Millisecond, 5*time.Minute)
		if err != nil {
			return err
		}
		out[name] = p
		if _, err = p.WaitAnswers(want, 3, time.Minute); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		from, to := pods[pair[0]], pods[pair[1]]
		netns, err := sandbox.PodNetns(r.ctx, r.dir, r.c, ref(from))
		if err != nil {
			return out, err
		}
		addr, err := r.address(to)
		if err != nil {
			return out, err
		}
		if err := start(fmt.Sprintf("pod %s → pod %s", pair[0], pair[1]), netns, fmt.Sprintf("%s:%d", addr, ProbePort), ref(to)); err != nil {
			return out, err
		}
		if err := start(fmt.Sprintf("pod %s → outside", pair[0]), netns, fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort),
			UpgradeEgressIP); err != nil {
			return out, err
		}
		np := upgradeNodePort(r.state, pair[1])
		if err := start(fmt.Sprintf("outside → %s's node port → pod %s", pair[0], pair[1]), l.ExternalNetns(),
			fmt.Sprintf("%s:%d", sandbox.NodeAddr(pair[0]), np), ref(to)); err != nil {
			return out, err
		}
	}
	return out, nil
}

// upgradeNodePort is node's pod's node port.
func upgradeNodePort(st *sandbox.State, node string) int {
	for i, n := range st.Nodes {
		if n.Name == node {
			return upgradeNodePortBase + i + 1
		}
	}
	return 0
}

// mixed probes, once each with retries for a few seconds, the paths
// between node's new pod and node a's: "" for each answered.
func (r *upgradeRun) mixed(pods map[string]*corev1.Pod, node, a string) map[string]string {
	out := map[string]string{}
	l := sandbox.NewLayoutMust(r.dir)
	once := func(name, netns, target, want string) {
		var got string
		err := proc.WaitFor(10*time.Second, 200*time.Millisecond, func() (bool, error) {
			b, err := sandbox.Command(r.ctx, netns, []string{r.binary, "sandbox", "probe", "--timeout", "1s", target}).Output()
			got = strings.TrimSpace(string(b))
			return err == nil && got == want, nil
		})
		if err != nil {
			out[name] = fmt.Sprintf("got %q, want %q", got, want)
			return
		}
		out[name] = ""
	}
	for _, pair := range [][2]string{{node, a}, {a, node}} {
		from, to := pods[pair[0]], pods[pair[1]]
		netns, err := sandbox.PodNetns(r.ctx, r.dir, r.c, ref(from))
		if err != nil {
			out["pod "+pair[0]] = err.Error()
			continue
		}
		addr, err := r.address(to)
		if err != nil {
			out["pod "+pair[1]] = err.Error()
			continue
		}
		once(fmt.Sprintf("pod %s → pod %s", pair[0], pair[1]), netns, fmt.Sprintf("%s:%d", addr, ProbePort), ref(to))
		once(fmt.Sprintf("outside → %s's node port → pod %s", pair[0], pair[1]), l.ExternalNetns(),
			fmt.Sprintf("%s:%d", sandbox.NodeAddr(pair[0]), upgradeNodePort(r.state, pair[1])), ref(to))
	}
	if netns, err := sandbox.PodNetns(r.ctx, r.dir, r.c, ref(pods[node])); err == nil {
		once(fmt.Sprintf("pod %s → outside, from the egress IP", node), netns, fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort), UpgradeEgressIP)
	}
	return out
}

// drain cordons node and deletes every pod with a port on a Layer2
// primary network there (the upgrade's, and any other the zone lists),
// waiting until the zone has none.
func (r *upgradeRun) drain(node string, pod *corev1.Pod) error {
	if err := r.cordon(node, true); err != nil {
		return err
	}
	if pod != nil {
		if err := r.c.Delete(r.ctx, pod); err != nil {
			return err
		}
	}
	nb, err := r.nb(node)
	if err != nil {
		return err
	}
	defer nb.Close()
	var left []string
	err = proc.WaitFor(2*time.Minute, 200*time.Millisecond, func() (bool, error) {
		if left, err = l2version.Workloads(r.ctx, nb, node); err != nil {
			return false, err
		}
		for _, w := range left {
			if ns, name, ok := strings.Cut(w, "/"); ok && !strings.HasPrefix(w, "vm ") {
				_ = r.c.Delete(r.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("draining %s's Layer2 pods (left: %v): %w", node, left, err)
	}
	return nil
}

// cordon marks node unschedulable or schedulable again.
func (r *upgradeRun) cordon(node string, off bool) error {
	n := &corev1.Node{}
	if err := r.c.Get(r.ctx, client.ObjectKey{Name: node}, n); err != nil {
		return err
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = off
	return r.c.Patch(r.ctx, n, patch)
}

// nb connects to node's zone Northbound, to read with selects.
func (r *upgradeRun) nb(node string) (libovsdb.Client, error) {
	for _, n := range r.state.Nodes {
		if n.Name == node {
			return ovsdb.ConnectNB(r.ctx, ovsdb.ClientOptions{Endpoint: n.NB, NoMonitor: true, OwnTransact: true})
		}
	}
	return nil, fmt.Errorf("no node %s in the sandbox", node)
}

// restartZone restarts node's zone controller with args.
func (r *upgradeRun) restartZone(node string, args ...string) error {
	if err := sandbox.SetZoneArgs(r.dir, node, args...); err != nil {
		return err
	}
	return sandbox.RestartProcess(r.dir, "zone-controller/"+node, time.Minute)
}

// version is node's Layer2 topology annotation.
func (r *upgradeRun) version(node string) string {
	n := &corev1.Node{}
	if err := r.c.Get(r.ctx, client.ObjectKey{Name: node}, n); err != nil {
		return ""
	}
	return n.Annotations[nodeinfo.Layer2TopologyVersionAnnotation]
}

// waitVersion waits until node says version v.
func (r *upgradeRun) waitVersion(node, v string) error {
	err := proc.WaitFor(time.Minute, 100*time.Millisecond, func() (bool, error) { return r.version(node) == v, nil })
	if err != nil {
		return fmt.Errorf("node %s is at %q, not %s: %w", node, r.version(node), v, err)
	}
	return nil
}

// waitLog waits until the last Layer2 topology line of node's zone
// controller's log (l2version.Settle's, one a start) has text.
func (r *upgradeRun) waitLog(node, text string) error {
	return proc.WaitFor(time.Minute, 100*time.Millisecond, func() (bool, error) {
		st, err := sandbox.ReadState(sandbox.NewLayoutMust(r.dir))
		if err != nil {
			return false, nil
		}
		for _, p := range st.Processes {
			if p.Name != "zone-controller/"+node {
				continue
			}
			b, err := os.ReadFile(p.Log)
			if err != nil {
				return false, nil
			}
			s := string(b)
			i := strings.LastIndex(s, `"msg":"layer2 topology`)
			if i < 0 {
				return false, nil
			}
			line, _, _ := strings.Cut(s[i:], "\n")
			return strings.Contains(line, text), nil
		}
		return false, nil
	})
}

// UpgradeRows lists the upgrade ports and old gateway router ports in
// node's zone, of every network ("stotr-<switch>-upgrade",
// "stor-GR_<network>_<node>"): none once every node is at 2.0.
func UpgradeRows(ctx context.Context, dir, node string) ([]string, error) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return nil, err
	}
	r := &upgradeRun{ctx: ctx, dir: dir, state: st}
	nb, err := r.nb(node)
	if err != nil {
		return nil, err
	}
	defer nb.Close()
	op := libovsdbdb.Operation{Op: libovsdbdb.OperationSelect, Table: "Logical_Switch_Port", Where: []libovsdbdb.Condition{},
		Columns: []string{"_uuid", "name"}}
	res, err := nb.Transact(ctx, op)
	if err == nil {
		_, err = libovsdbdb.CheckOperationResults(res, []libovsdbdb.Operation{op})
	}
	if err != nil {
		return nil, fmt.Errorf("zone %s: %w", node, err)
	}
	var out []string
	for _, row := range res[0].Rows {
		name, _ := row["name"].(string)
		if strings.HasSuffix(name, topology.UpgradePortSuffix) || strings.HasPrefix(name, "stor-GR_") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// restore deletes the namespace, and restarts at 2.0 every zone not
// there yet once its Layer2 pods are gone.
func (r *upgradeRun) restore(ns *corev1.Namespace) error {
	ctx := context.Background()
	_ = r.c.Delete(ctx, ns)
	var errs []error
	for _, n := range r.state.Nodes {
		_ = r.cordon(n.Name, false)
		if r.version(n.Name) != nodeinfo.Layer2TopologyV1 {
			_ = sandbox.SetZoneArgs(r.dir, n.Name)
			continue
		}
		errs = append(errs, r.drain(n.Name, nil), r.restartZone(n.Name), r.waitVersion(n.Name, nodeinfo.Layer2TopologyV2), r.cordon(n.Name, false))
	}
	return errors.Join(errs...)
}

// Layer2UpgradeChecks are the upgrade's verdicts: the first node kept 1.0
// while its pod ran; each node moved once drained; the other nodes' paths
// lost no probe during any step; each moved node's pod reached the others
// and the outside, and was reached, across versions; the upgrade ports
// were there while a node was at 1.0, and nothing of them is left in any
// zone (leftovers, by node) at the end.
func Layer2UpgradeChecks(steps []UpgradeStep, leftovers map[string][]string) []AppCheck {
	var out []AppCheck
	add := func(name, from, want, got string) {
		out = append(out, AppCheck{Name: name, From: from, Target: UpgradeNamespace, Want: want, Got: got})
	}
	for i, s := range steps {
		if i == 0 {
			add("restarted at 2.0 with its pod running, the node stays at 1.0", s.Node, "kept", map[bool]string{true: "kept", false: "moved"}[s.Kept])
		}
		add("drained and restarted, the node moves to 2.0", s.Node, "2.0", map[bool]string{true: "2.0", false: "1.0"}[s.Moved])
		var lost []string
		for path, n := range s.Lost {
			lost = append(lost, fmt.Sprintf("%s: %d", path, n))
		}
		sort.Strings(lost)
		// 0 lost is the goal (docs/performance.md); on a loaded machine,
		// whose probes time out with nothing moving too, no more than
		// twice that floor's rate, or no path silent for long.
		gapPath, gap := s.LongestGap()
		got := "unbroken"
		if !s.Unbroken() {
			got = strings.Join(lost, "; ") + fmt.Sprintf("; longest silence %s (%s)", gap.Round(time.Millisecond), gapPath)
		}
		add(fmt.Sprintf("while it moves, the other nodes' paths lose nothing beyond the floor or stop for more than %s (%d of %d probes lost; nothing moving, %d of %d; longest silence %d ms)",
			UpgradeGapBound, s.LostTotal(), s.Probes, s.FloorLost, s.FloorProbes, gap.Milliseconds()), s.Node, "unbroken", got)
		var bad []string
		for path, e := range s.Mixed {
			if e != "" {
				bad = append(bad, path+": "+e)
			}
		}
		sort.Strings(bad)
		got = "all answered"
		if len(bad) > 0 {
			got = strings.Join(bad, "; ")
		}
		add("its new pod and the others reach each other and the outside", s.Node, "all answered", got)
		want := map[bool]string{true: "upgrade ports", false: "none"}[i < len(steps)-1]
		add("the upgrade ports exist while a node is at 1.0", s.Node, want, map[bool]string{true: "upgrade ports", false: "none"}[s.UpgradePorts])
	}
	var left []string
	for node, rows := range leftovers {
		for _, r := range rows {
			left = append(left, node+": "+r)
		}
	}
	sort.Strings(left)
	got := "none"
	if len(left) > 0 {
		got = strings.Join(left, ", ")
	}
	add("every node at 2.0, no zone keeps an upgrade or old gateway router port", "every zone", "none", got)
	return out
}
