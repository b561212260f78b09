package netalloc_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

// state is what cluster-manager has recorded in the API.
type state struct {
	networkID  map[string]int   // network -> ID (every NAD of it agrees, else an error)
	tunnelKeys map[string][]int // network -> keys
	layer3     map[string]bool  // Layer3 networks
	nodeID     map[string]int   // node -> ID
	subnets    map[string]nodeinfo.Subnets
	nads       int
}

// observe reads the state straight from the API server and checks the
// invariants that must hold at every moment: no two live networks share an ID
// or a tunnel key, the NADs of a network agree, no two nodes share an ID, and
// no two nodes' subnets of a network overlap.
func observe(t testing.TB, c client.Client) (state, error) {
	t.Helper()
	ctx := context.Background()
	s := state{networkID: map[string]int{}, tunnelKeys: map[string][]int{}, layer3: map[string]bool{},
		nodeID: map[string]int{}, subnets: map[string]nodeinfo.Subnets{}}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &nads); err != nil {
		return s, err
	}
	for i := range nads.Items {
		n := &nads.Items[i]
		conf, err := netconf.Parse(n)
		if err != nil || conf == nil {
			continue
		}
		id, keys, ok, err := netconf.ParseAllocation(n.Annotations)
		if err != nil {
			return s, fmt.Errorf("NAD %s/%s: %v", n.Namespace, n.Name, err)
		}
		if !ok {
			continue
		}
		s.nads++
		if prev, seen := s.networkID[conf.Name]; seen && prev != id {
			return s, fmt.Errorf("network %s has IDs %d and %d on different NADs", conf.Name, prev, id)
		}
		s.networkID[conf.Name], s.tunnelKeys[conf.Name] = id, keys
		s.layer3[conf.Name] = conf.Topology == netconf.TopologyLayer3
	}
	ids, keys := map[int]string{}, map[int]string{}
	for name, id := range s.networkID {
		if other, dup := ids[id]; dup {
			return s, fmt.Errorf("networks %s and %s share ID %d", name, other, id)
		}
		ids[id] = name
		for _, k := range s.tunnelKeys[name] {
			if other, dup := keys[k]; dup {
				return s, fmt.Errorf("networks %s and %s share tunnel key %d", name, other, k)
			}
			keys[k] = name
		}
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return s, err
	}
	nodeIDs := map[int]string{}
	for _, n := range nodes.Items {
		if id, ok, _ := nodeinfo.NodeID(n.Annotations); ok {
			if other, dup := nodeIDs[id]; dup {
				return s, fmt.Errorf("nodes %s and %s share ID %d", n.Name, other, id)
			}
			nodeIDs[id] = n.Name
			s.nodeID[n.Name] = id
		}
		sub, err := nodeinfo.ParseSubnets(n.Annotations[nodeinfo.NodeSubnetsAnnotation])
		if err != nil {
			return s, err
		}
		s.subnets[n.Name] = sub
	}
	byNetwork := map[string][]netip.Prefix{}
	owner := map[netip.Prefix]string{}
	for node, sub := range s.subnets {
		for network, list := range sub {
			for _, p := range list {
				for _, q := range byNetwork[network] {
					if p.Overlaps(q) {
						return s, fmt.Errorf("network %s: subnets %s (node %s) and %s (node %s) overlap", network, p, node, q, owner[q])
					}
				}
				byNetwork[network] = append(byNetwork[network], p)
				owner[p] = node
			}
		}
	}
	return s, nil
}

func mustObserve(t testing.TB, c client.Client) state {
	t.Helper()
	s, err := observe(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// converged checks that every node has an ID and exactly one subnet list per
// Layer3 network (plus the default network), and that the networks in want
// all have IDs.
func converged(s state, want []string) error {
	for _, n := range want {
		if _, ok := s.networkID[n]; !ok {
			return fmt.Errorf("network %s has no ID yet", n)
		}
	}
	for node, sub := range s.subnets {
		if _, ok := s.nodeID[node]; !ok {
			return fmt.Errorf("node %s has no ID yet", node)
		}
		wantNets := []string{nodeinfo.DefaultNetwork}
		for n, l3 := range s.layer3 {
			if l3 {
				wantNets = append(wantNets, n)
			}
		}
		sort.Strings(wantNets)
		if diff := cmp.Diff(wantNets, sub.Networks()); diff != "" {
			return fmt.Errorf("node %s subnets per network (-want +got):\n%s", node, diff)
		}
	}
	return nil
}

func nodeObj(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// fleet creates networks and nodes for a test and removes them at its end.
type fleet struct {
	t        *testing.T
	c        client.Client
	secNS    string
	networks []string // network names
	udns     map[string]*v1.UserDefinedNetwork
	nodes    map[string]bool
}

// newFleet returns an empty fleet whose networks and nodes are removed when
// the test ends, by a cluster-manager of its own (whatever the test did with
// its managers).
func newFleet(t *testing.T, c client.Client) *fleet {
	f := &fleet{t: t, c: c, secNS: cmtest.Namespace(t, c, "sec", nil), udns: map[string]*v1.UserDefinedNetwork{}, nodes: map[string]bool{}}
	t.Cleanup(f.teardown)
	return f
}

// addNetwork creates a Layer3 secondary network, or (layer2Primary) a Layer2
// primary network in a namespace of its own. All use the same subnets:
// networks may overlap.
func (f *fleet) addNetwork(layer2Primary bool) string {
	f.t.Helper()
	var u *v1.UserDefinedNetwork
	if layer2Primary {
		ns := cmtest.Namespace(f.t, f.c, "l2p", map[string]string{v1.PrimaryNetworkLabel: ""})
		u = &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.100.0.0/16"}}}
	} else {
		u = &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: f.secNS, Name: cmtest.UniqueName("l3")},
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.128.0.0/14/24", "fd00:128::/48"}}}
	}
	if err := f.c.Create(context.Background(), u); err != nil {
		f.t.Fatal(err)
	}
	name := netconf.UDNNetworkName(u.Namespace, u.Name)
	f.networks = append(f.networks, name)
	f.udns[name] = u
	return name
}

func (f *fleet) deleteNetwork(name string) {
	f.t.Helper()
	if err := f.c.Delete(context.Background(), f.udns[name]); err != nil {
		f.t.Fatal(err)
	}
	delete(f.udns, name)
	for i, n := range f.networks {
		if n == name {
			f.networks = append(f.networks[:i], f.networks[i+1:]...)
			break
		}
	}
}

func (f *fleet) addNode() string {
	f.t.Helper()
	name := cmtest.UniqueName("node")
	if err := f.c.Create(context.Background(), nodeObj(name)); err != nil {
		f.t.Fatal(err)
	}
	f.nodes[name] = true
	return name
}

func (f *fleet) deleteNode(name string) {
	f.t.Helper()
	if err := f.c.Delete(context.Background(), nodeObj(name)); err != nil {
		f.t.Fatal(err)
	}
	delete(f.nodes, name)
}

// teardown deletes the fleet's networks with a manager running (it releases
// their finalizers), waits until they are gone, then deletes the nodes.
func (f *fleet) teardown() {
	stop := cmtest.Start(f.t, env, fleetConfig())
	defer stop()
	ctx := context.Background()
	for _, u := range f.udns {
		_ = f.c.Delete(ctx, u)
	}
	cmtest.Eventually(f.t, time.Minute, func() error {
		for _, u := range f.udns {
			if err := f.c.Get(ctx, client.ObjectKeyFromObject(u), u); !apierrors.IsNotFound(err) {
				return fmt.Errorf("network %s/%s still exists", u.Namespace, u.Name)
			}
		}
		return nil
	})
	for n := range f.nodes {
		_ = f.c.Delete(ctx, nodeObj(n))
	}
}

func (f *fleet) waitConverged(timeout time.Duration) state {
	f.t.Helper()
	var s state
	cmtest.Eventually(f.t, timeout, func() error {
		var err error
		if s, err = observe(f.t, f.c); err != nil {
			return err
		}
		return converged(s, f.networks)
	})
	return s
}

// TestRestartKeepsAllocations: 200 networks and 20 nodes, with the
// cluster-manager restarted in the middle of the burst and again afterwards:
// nothing allocated changes, nothing is duplicated, and the restart writes
// nothing.
func TestRestartKeepsAllocations(t *testing.T) {
	c := cmtest.Admin(t, env)
	cfg := fleetConfig()
	stop := cmtest.Start(t, env, cfg)
	f := newFleet(t, c)
	for i := 0; i < 100; i++ {
		f.addNetwork(i%4 == 0)
	}
	for i := 0; i < 10; i++ {
		f.addNode()
	}
	stop() // in the middle of the burst: the manager has not caught up yet
	stop = cmtest.Start(t, env, cfg)
	for i := 0; i < 100; i++ {
		f.addNetwork(i%4 == 0)
	}
	for i := 0; i < 10; i++ {
		f.addNode()
	}
	before := f.waitConverged(2 * time.Minute)
	if got := len(f.networks); got != 200 {
		t.Fatalf("%d networks, want 200", got)
	}
	versions := resourceVersions(t, c)

	stop()
	cmtest.Start(t, env, cfg)
	// Fences: objects created after the restart are handled after everything
	// the restarted manager found at start-up.
	f.addNetwork(false)
	fence := f.addNode()
	after := f.waitConverged(time.Minute)
	for _, m := range []map[string]int{after.networkID, after.nodeID} {
		delete(m, f.networks[len(f.networks)-1])
		delete(m, fence)
	}
	delete(after.tunnelKeys, f.networks[len(f.networks)-1])
	delete(after.subnets, fence)
	for node := range after.subnets {
		delete(after.subnets[node], f.networks[len(f.networks)-1])
	}
	if diff := cmp.Diff(before.networkID, after.networkID); diff != "" {
		t.Errorf("network IDs changed across the restart (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.nodeID, after.nodeID); diff != "" {
		t.Errorf("node IDs changed across the restart (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.tunnelKeys, after.tunnelKeys); diff != "" {
		t.Errorf("tunnel keys changed across the restart (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.subnets, after.subnets, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("node subnets changed across the restart (-before +after):\n%s", diff)
	}
	// The restart wrote nothing to what existed: only the fence network
	// touched the nodes (one more subnet each).
	for key, rv := range resourceVersions(t, c) {
		if old, ok := versions[key]; ok && old != rv && key[:5] != "node/" {
			t.Errorf("%s was rewritten by the restarted manager", key)
		}
	}
	// The node added later has a subnet of every Layer3 network.
	if got, want := len(mustObserve(t, c).subnets[fence]), 1+countLayer3(after); got != want {
		t.Errorf("node added later has subnets of %d networks, want %d", got, want)
	}
}

func countLayer3(s state) int {
	n := 0
	for _, l3 := range s.layer3 {
		if l3 {
			n++
		}
	}
	return n
}

// resourceVersions maps "nad/ns/name" and "node/name" to resource versions.
func resourceVersions(t testing.TB, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(context.Background(), &nads); err != nil {
		t.Fatal(err)
	}
	for _, n := range nads.Items {
		out["nad/"+n.Namespace+"/"+n.Name] = n.ResourceVersion
	}
	var nodes corev1.NodeList
	if err := c.List(context.Background(), &nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		out["node/"+n.Name] = n.ResourceVersion
	}
	return out
}

// TestDeleteAndRecreate: deleted networks and nodes release their values;
// new ones never get a value still held, and (next-fit) do not take a value
// released a moment ago.
func TestDeleteAndRecreate(t *testing.T) {
	c := cmtest.Admin(t, env)
	cmtest.Start(t, env, fleetConfig())
	f := newFleet(t, c)
	for i := 0; i < 20; i++ {
		f.addNetwork(i%2 == 0)
	}
	var nodes []string
	for i := 0; i < 6; i++ {
		nodes = append(nodes, f.addNode())
	}
	before := f.waitConverged(time.Minute)
	released := map[int]bool{}
	releasedNodes := map[int]bool{}
	for _, n := range append([]string{}, f.networks[:5]...) {
		released[before.networkID[n]] = true
		f.deleteNetwork(n)
	}
	for _, n := range nodes[:3] {
		releasedNodes[before.nodeID[n]] = true
		f.deleteNode(n)
	}
	var fresh []string
	for i := 0; i < 5; i++ {
		fresh = append(fresh, f.addNetwork(i%2 == 0))
	}
	var freshNodes []string
	for i := 0; i < 3; i++ {
		freshNodes = append(freshNodes, f.addNode())
	}
	after := f.waitConverged(time.Minute)
	for _, n := range fresh {
		if released[after.networkID[n]] {
			t.Errorf("new network %s took ID %d released a moment ago", n, after.networkID[n])
		}
	}
	for _, n := range freshNodes {
		if releasedNodes[after.nodeID[n]] {
			t.Errorf("new node %s took ID %d released a moment ago", n, after.nodeID[n])
		}
	}
}

// TestSubnetExhaustion: a Layer3 network with room for four nodes: the fifth
// node gets no subnet of it (an Event, a False condition), keeps its other
// subnets, and gets one as soon as another node goes.
func TestSubnetExhaustion(t *testing.T) {
	c := cmtest.Admin(t, env)
	cmtest.Start(t, env, fleetConfig())
	ctx := context.Background()
	var existing corev1.NodeList
	if err := c.List(ctx, &existing); err != nil {
		t.Fatal(err)
	}
	if len(existing.Items) != 0 {
		t.Fatalf("%d nodes left over from other tests", len(existing.Items))
	}
	f := newFleet(t, c)
	small := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: f.secNS, Name: "small"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.30.0.0/26/28"}}}
	if err := c.Create(ctx, small); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, small)
	network := netconf.UDNNetworkName(f.secNS, "small")
	var nodes []string
	for i := 0; i < 5; i++ {
		nodes = append(nodes, f.addNode())
	}
	lacking := waitSliceHolders(t, c, network, nodes, 4)
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(small), small); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(small.Status.Conditions, v1.ConditionNodeSubnetsAllocated)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1.ReasonSubnetsExhausted {
			return fmt.Errorf("condition %+v, want False/%s", cond, v1.ReasonSubnetsExhausted)
		}
		return nil
	})
	if !hasEvent(t, c, lacking, "NodeSubnetExhausted") {
		t.Errorf("no NodeSubnetExhausted event on node %s", lacking)
	}
	// Free a slice: the lacking node gets it, the condition recovers. The
	// deleted node's reconcile queues the lacking node at once: well
	// within its own next try, a minute after its last.
	for _, n := range nodes {
		if n != lacking {
			f.deleteNode(n)
			break
		}
	}
	cmtest.Eventually(t, 20*time.Second, func() error {
		s, err := observe(t, c)
		if err != nil {
			return err
		}
		if len(s.subnets[lacking][network]) != 1 {
			return fmt.Errorf("node %s still has no subnet of %s", lacking, network)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(small), small); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(small.Status.Conditions, v1.ConditionNodeSubnetsAllocated) {
			return fmt.Errorf("condition not True yet: %+v", small.Status.Conditions)
		}
		return nil
	})

	// Deleted, and created again under its name: the new object gets its
	// condition too.
	if err := c.Delete(ctx, small); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(small), &v1.UserDefinedNetwork{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("UDN small not gone yet (%v)", err)
		}
		s, err := observe(t, c)
		if err != nil {
			return err
		}
		for n, subnets := range s.subnets {
			if len(subnets[network]) > 0 {
				return fmt.Errorf("node %s still has a subnet of %s", n, network)
			}
		}
		return nil
	})
	again := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: f.secNS, Name: "small"}, Spec: small.Spec}
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, again)
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(again), again); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(again.Status.Conditions, v1.ConditionNodeSubnetsAllocated) {
			return fmt.Errorf("the network created again has no True condition: %+v", again.Status.Conditions)
		}
		return nil
	})
}

// waitSliceHolders waits until exactly want of nodes hold a slice of
// network and the others none, every node with its two default-network
// slices, and returns one node without a slice of network.
func waitSliceHolders(t *testing.T, c client.Client, network string, nodes []string, want int) string {
	t.Helper()
	var lacking string
	cmtest.Eventually(t, time.Minute, func() error {
		s, err := observe(t, c)
		if err != nil {
			return err
		}
		have := 0
		lacking = ""
		for _, n := range nodes {
			if len(s.subnets[n][network]) == 1 {
				have++
			} else {
				lacking = n
			}
			if len(s.subnets[n][nodeinfo.DefaultNetwork]) != 2 {
				return fmt.Errorf("node %s lacks its default-network subnets", n)
			}
		}
		if have != want || lacking == "" {
			return fmt.Errorf("%d nodes have a subnet of %s, want %d and the others without", have, network, want)
		}
		return nil
	})
	return lacking
}

func hasEvent(t testing.TB, c client.Client, object, reason string) bool {
	var events corev1.EventList
	if err := c.List(context.Background(), &events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason {
			return true
		}
	}
	return false
}

// startWithOneSlot starts a cluster-manager whose network limit leaves
// room for one network more than the API server holds.
func startWithOneSlot(t *testing.T) client.Client {
	c, _ := startWithOneSlotStoppable(t)
	return c
}

// startWithOneSlotStoppable is startWithOneSlot, with a function that stops
// the cluster-manager and one that starts it again.
func startWithOneSlotStoppable(t *testing.T) (c client.Client, restart func(stop bool)) {
	c = cmtest.Admin(t, env)
	cfg := fleetConfig()
	cfg.MaxNetworks = len(mustObserve(t, c).networkID) + 1
	stop := cmtest.Start(t, env, cfg)
	return c, func(stopIt bool) {
		if stopIt {
			stop()
			return
		}
		stop = cmtest.Start(t, env, cfg)
	}
}

// TestHandMadeNADs: networks defined by NADs directly get an ID shared by all
// their NADs, and release it (and their slot under the network limit) when the
// last NAD goes.
func TestHandMadeNADs(t *testing.T) {
	c := startWithOneSlot(t)
	ctx := context.Background()
	a, b := cmtest.Namespace(t, c, "hand-a", nil), cmtest.Namespace(t, c, "hand-b", nil)
	conf := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"by-hand","topology":"layer2","role":"secondary","subnets":"192.168.77.0/24","netAttachDefName":"x/y"}`
	var nads []*nadv1.NetworkAttachmentDefinition
	for _, ns := range []string{a, b} {
		n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		nads = append(nads, n)
	}
	cmtest.Eventually(t, 0, func() error {
		ids := map[string]bool{}
		for _, n := range nads {
			if err := c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
				return err
			}
			id := n.Annotations[netconf.NetworkIDAnnotation]
			if id == "" {
				return fmt.Errorf("NAD %s/%s has no network ID", n.Namespace, n.Name)
			}
			ids[id] = true
		}
		if len(ids) != 1 {
			return fmt.Errorf("the NADs of one network have IDs %v", ids)
		}
		return nil
	})
	// The hand-made network holds the last slot: a UDN now hits the limit ...
	ns := cmtest.Namespace(t, c, "after-hand", nil)
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.78.0/24"}}}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, u)
	waitReason := func(reason string) {
		cmtest.Eventually(t, 0, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				return err
			}
			cond := meta.FindStatusCondition(u.Status.Conditions, v1.ConditionNetworkCreated)
			if cond == nil || cond.Reason != reason {
				return fmt.Errorf("condition %+v, want reason %s", cond, reason)
			}
			return nil
		})
	}
	waitReason(v1.ReasonNetworkLimit)
	// ... until the hand-made network's last NAD is gone.
	if err := c.Delete(ctx, nads[0]); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, nads[1]); err != nil {
		t.Fatal(err)
	}
	// The release alone retries the waiting UDN.
	waitReason(v1.ReasonNADCreated)
}

// TestHandMadeNADRenamed: a hand-made NAD edited to name another network
// releases the network it named (its last NAD), so the new one gets an ID
// under the network limit, and deleting the NAD frees the slot.
func TestHandMadeNADRenamed(t *testing.T) {
	c := startWithOneSlot(t)
	ctx := context.Background()
	ns := cmtest.Namespace(t, c, "renamed", nil)
	conf := func(name string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + name + `","topology":"layer2","role":"secondary","subnets":"192.168.79.0/24","netAttachDefName":"` + ns + `/ren"}`
	}
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ren"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf("ren-1")}}
	if err := c.Create(ctx, nad); err != nil {
		t.Fatal(err)
	}
	idOtherThan := func(old string) string {
		var id string
		cmtest.Eventually(t, 0, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(nad), nad); err != nil {
				return err
			}
			if id = nad.Annotations[netconf.NetworkIDAnnotation]; id == "" || id == old {
				return fmt.Errorf("NAD ren has network ID %q, want one other than %q", id, old)
			}
			return nil
		})
		return id
	}
	first := idOtherThan("")
	// Renamed: ren-1 had the last slot; ren-2 gets it once ren-1 is released.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(nad), nad); err != nil {
			return err
		}
		nad.Spec.Config = conf("ren-2")
		return c.Update(ctx, nad)
	}); err != nil {
		t.Fatal(err)
	}
	idOtherThan(first)
	// Deleted: a UDN gets the slot.
	if err := c.Delete(ctx, nad); err != nil {
		t.Fatal(err)
	}
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.80.0/24"}}}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, u)
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		if cond := meta.FindStatusCondition(u.Status.Conditions, v1.ConditionNetworkCreated); cond == nil || cond.Reason != v1.ReasonNADCreated {
			return fmt.Errorf("condition %+v, want reason %s", cond, v1.ReasonNADCreated)
		}
		return nil
	})
}

// TestHandMadeNADWaitsForRoom: a hand-made NAD refused an ID at the network
// limit gets one as soon as another network releases its own, with no
// other event about the NAD.
func TestHandMadeNADWaitsForRoom(t *testing.T) {
	c := startWithOneSlot(t)
	ctx := context.Background()
	ns := cmtest.Namespace(t, c, "room", nil)
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.81.0/24"}}}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, u)
	cmtest.WaitNetworkCreated(t, c, u)
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"room-by-hand","topology":"layer2","role":"secondary","subnets":"192.168.82.0/24","netAttachDefName":"` + ns + `/by-hand"}`}}
	if err := c.Create(ctx, nad); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, nad)
	cmtest.Eventually(t, 0, func() error {
		if !hasEvent(t, c, "by-hand", "AllocationFailed") {
			return fmt.Errorf("no AllocationFailed Event on NAD by-hand yet")
		}
		return nil
	})
	if err := c.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitNetworkID(t, c, nad)
}

// waitNetworkID waits until nad has a network ID.
func waitNetworkID(t *testing.T, c client.Client, nad *nadv1.NetworkAttachmentDefinition) {
	t.Helper()
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(nad), nad); err != nil {
			return err
		}
		if nad.Annotations[netconf.NetworkIDAnnotation] == "" {
			return fmt.Errorf("NAD %s/%s has no network ID yet", nad.Namespace, nad.Name)
		}
		return nil
	})
}

// TestHandMadeNADGoingAcrossRestart: a hand-made NAD deleted while
// cluster-manager is down, held by another finalizer, releases its network
// once it is gone (the restarted cluster-manager recovered its ID).
func TestHandMadeNADGoingAcrossRestart(t *testing.T) {
	c, cm := startWithOneSlotStoppable(t)
	ctx := context.Background()
	ns := cmtest.Namespace(t, c, "going", nil)
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand", Finalizers: []string{"example.com/hold"}},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"going-by-hand","topology":"layer2","role":"secondary","subnets":"192.168.83.0/24","netAttachDefName":"` + ns + `/by-hand"}`}}
	if err := c.Create(ctx, nad); err != nil {
		t.Fatal(err)
	}
	waitNetworkID(t, c, nad)
	cm(true)
	if err := c.Delete(ctx, nad); err != nil {
		t.Fatal(err)
	}
	cm(false)
	// The restarted cluster-manager has recovered the NAD's ID once a
	// probe network is refused for want of room.
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.84.0/24"}}}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, u)
	waitUDNReason := func(reason string) {
		cmtest.Eventually(t, 0, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
				return err
			}
			if cond := meta.FindStatusCondition(u.Status.Conditions, v1.ConditionNetworkCreated); cond == nil || cond.Reason != reason {
				return fmt.Errorf("condition %+v, want reason %s", cond, reason)
			}
			return nil
		})
	}
	waitUDNReason(v1.ReasonNetworkLimit)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(nad), nad); err != nil {
			return err
		}
		nad.Finalizers = nil
		return c.Update(ctx, nad)
	}); err != nil {
		t.Fatal(err)
	}
	waitUDNReason(v1.ReasonNADCreated)
}

// TestChurn creates and deletes networks and nodes in random order, restarting
// the cluster-manager now and then, and checks the invariants at every
// observation; at the end everything has converged. OVN_UDN_CHURN_SEED
// replays a run.
func TestChurn(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("OVN_UDN_CHURN_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (set OVN_UDN_CHURN_SEED to replay)", seed)
	rng := rand.New(rand.NewSource(seed))
	c := cmtest.Admin(t, env)
	cfg := fleetConfig()
	stop := cmtest.Start(t, env, cfg)
	f := newFleet(t, c)
	var nodes []string
	for step := 0; step < 120; step++ {
		switch op := rng.Intn(10); {
		case op < 4 || len(f.networks) == 0:
			f.addNetwork(rng.Intn(3) == 0)
		case op < 6:
			f.deleteNetwork(f.networks[rng.Intn(len(f.networks))])
		case op < 8 || len(nodes) == 0:
			nodes = append(nodes, f.addNode())
		case op < 9:
			i := rng.Intn(len(nodes))
			f.deleteNode(nodes[i])
			nodes = append(nodes[:i], nodes[i+1:]...)
		default:
			stop()
			stop = cmtest.Start(t, env, cfg)
		}
		if step%5 == 0 {
			if _, err := observe(t, c); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
	}
	s := f.waitConverged(2 * time.Minute)
	t.Logf("converged: %d networks, %d nodes", len(s.networkID), len(s.nodeID))
}

// TestTamperedNodeAnnotations: a node's ID and subnets edited or removed by
// someone else are put back from cluster-manager's allocations at once; an
// edit made while cluster-manager is down that gives a node another node's ID
// is resolved at restart: the older node keeps it, the edited one gets a
// fresh ID, and nothing is duplicated.
func TestTamperedNodeAnnotations(t *testing.T) {
	c := cmtest.Admin(t, env)
	ctx := context.Background()
	stop := cmtest.Start(t, env, fleetConfig())
	f := newFleet(t, c)
	f.addNetwork(false)
	a := f.addNode()
	f.waitConverged(time.Minute)
	b := f.addNode()
	before := f.waitConverged(time.Minute)
	edit := func(name string, change func(map[string]string)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			change(n.Annotations)
			return c.Update(ctx, n)
		}); err != nil {
			t.Fatal(err)
		}
	}
	restored := func() {
		t.Helper()
		cmtest.Eventually(t, time.Minute, func() error {
			s, err := observe(t, c)
			if err != nil {
				return err
			}
			if s.nodeID[b] != before.nodeID[b] || s.subnets[b].String() != before.subnets[b].String() {
				return fmt.Errorf("node %s: ID %d subnets %s, want %d %s", b, s.nodeID[b], s.subnets[b], before.nodeID[b], before.subnets[b])
			}
			return nil
		})
	}
	edit(b, func(m map[string]string) {
		m[nodeinfo.NodeIDAnnotation] = strconv.Itoa(before.nodeID[a])
		m[nodeinfo.NodeSubnetsAnnotation] = before.subnets[a].String()
	})
	restored()
	edit(b, func(m map[string]string) {
		delete(m, nodeinfo.NodeIDAnnotation)
		delete(m, nodeinfo.NodeSubnetsAnnotation)
	})
	restored()

	// Creation times have a resolution of a second: "older" is by creation
	// time, then by name (kubeobj.SortOldestFirst); make a the one first.
	pair := []corev1.Node{{}, {}}
	for i, name := range []string{a, b} {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &pair[i]); err != nil {
			t.Fatal(err)
		}
	}
	kubeobj.SortOldestFirst(pair)
	if pair[0].Name != a {
		a, b = b, a
	}
	stop()
	edit(b, func(m map[string]string) { m[nodeinfo.NodeIDAnnotation] = strconv.Itoa(before.nodeID[a]) })
	cmtest.Start(t, env, fleetConfig())
	after := f.waitConverged(time.Minute) // fails on a duplicated ID or overlapping subnets
	if after.nodeID[a] != before.nodeID[a] || after.subnets[a].String() != before.subnets[a].String() {
		t.Errorf("the older node %s lost its allocation: ID %d subnets %s, had %d %s", a, after.nodeID[a], after.subnets[a], before.nodeID[a], before.subnets[a])
	}
	if after.nodeID[b] == before.nodeID[a] {
		t.Errorf("node %s kept the ID %d forged from node %s", b, after.nodeID[b], a)
	}
}

// fleetConfig is the default configuration without the per-namespace limit:
// a fleet puts all its Layer3 networks in one namespace.
func fleetConfig() config.Cluster {
	c := config.Default()
	c.MaxNetworksPerNamespace = 0
	return c
}
