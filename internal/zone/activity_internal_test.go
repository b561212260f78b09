package zone

import (
	"context"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// TestActivityKeys: which pod events queue their namespace's network in
// zone node-a, given the set the network was last rendered with: those
// that change it, here or where it is rendered here, and any while a plan
// of it is under way.
func TestActivityKeys(t *testing.T) {
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "net"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"ns1.net","type":"ovn-k8s-cni-overlay","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"ns1/net"}`}}
	annotations := nodeinfo.Example("node-a", 0).Annotations()
	annotations[nodeinfo.NodeIDAnnotation] = "2"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: annotations}}
	b := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(nad, node)
	for _, i := range Indexes() {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	c := b.Build()
	pod := func(node string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p"}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	done := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	host := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	queued := []string{"net:ns1.net"}
	for _, tc := range []struct {
		name          string
		set           *activity.Nodes // nil: not planned yet
		planning      bool
		everywhere    bool
		before, after *corev1.Pod
		want          []string
	}{
		{name: "not planned yet: queued", after: pod("node-b"), want: queued},
		{name: "a plan under way: queued whatever the set", set: setOf(activity.On("node-a", "node-b")), planning: true, after: pod("node-b"), want: queued},
		{name: "first pod on this node", set: setOf(activity.On("node-b")), after: pod("node-a"), want: queued},
		{name: "another pod on a node of the set", set: setOf(activity.On("node-a")), after: pod("node-a")},
		{name: "first pod on another node, rendered here", set: setOf(activity.On("node-a")), after: pod("node-b"), want: queued},
		{name: "first pod on another node, not rendered here", set: setOf(activity.On("node-b")), after: pod("node-c")},
		{name: "a pod of the set's node goes (maybe the last)", set: setOf(activity.On("node-a", "node-b")), before: pod("node-b"), want: queued},
		{name: "a pod of this node finishes", set: setOf(activity.On("node-a")), before: pod("node-a"), after: pod("node-a", done), want: queued},
		{name: "a pod goes from a node not in the set", set: setOf(activity.On("node-a")), before: pod("node-c")},
		{name: "scheduled onto a node of the set", set: setOf(activity.On("node-a")), before: pod(""), after: pod("node-a")},
		{name: "nothing changes about its node", set: setOf(activity.On("node-a")), before: pod("node-b"), after: pod("node-b")},
		{name: "a host-network pod never counts", set: setOf(activity.On("node-a")), after: pod("node-b", host)},
		{name: "every node (node ports): pods change nothing", set: setOf(activity.Everywhere()), before: pod("node-b")},
		{name: "rendering everywhere: never", everywhere: true, after: pod("node-b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Zone: "node-a", Client: c, RenderEverywhere: tc.everywhere}
			if tc.set != nil {
				r.active.put("ns1.net", *tc.set, activity.On())
			}
			if tc.planning {
				defer r.active.begin("ns1.net")()
			}
			if d := cmp.Diff(tc.want, owners(r.activityKeys(context.Background(), tc.before, tc.after))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func setOf(s activity.Nodes) *activity.Nodes { return &s }

// TestWithSlices: a Layer3 network's set leaves out, as waiting, the
// parsed nodes holding no slice of it; other topologies, every node and
// nodes not parsed are kept as they are.
func TestWithSlices(t *testing.T) {
	info := func(name string, nets ...string) nodeinfo.Info {
		i := nodeinfo.Example(name, 1)
		i.Subnets = nodeinfo.Subnets{}
		for _, n := range nets {
			i.Subnets[n] = []netip.Prefix{netip.MustParsePrefix("10.128.1.0/24")}
		}
		return i
	}
	nodes := []nodeinfo.Info{info("n1", "blue"), info("n2"), info("n3", "blue")}
	all := []nodeinfo.Info{info("n1", "blue"), info("n3", "blue")}
	l3 := topology.Network{Name: "blue", Topology: netconf.TopologyLayer3}
	l2 := topology.Network{Name: "blue", Topology: netconf.TopologyLayer2}
	for _, tc := range []struct {
		name          string
		n             topology.Network
		set           activity.Nodes
		want, waiting string
		nodes         []nodeinfo.Info
	}{
		{"every node while one has no slice yet: those that have", l3, activity.Everywhere(), "n1,n3", "n2", nil},
		{"a node without its slice waits", l3, activity.On("n1", "n2"), "n1", "n2", nil},
		{"all have theirs", l3, activity.On("n1", "n3"), "n1,n3", "no node", nil},
		{"a node not parsed stays, to be reported", l3, activity.On("n1", "gone"), "gone,n1", "no node", nil},
		{"every node, all with their slice, stays every node", l3, activity.Everywhere(), "every node", "no node", all},
		{"Layer2 has no slices", l2, activity.On("n2"), "n2", "no node", nil},
	} {
		if tc.nodes == nil {
			tc.nodes = nodes
		}
		got, waiting := withSlices(tc.n, tc.set, tc.nodes)
		if got.String() != tc.want || waiting.String() != tc.waiting {
			t.Errorf("%s: %v waiting %v, want %s waiting %s", tc.name, got, waiting, tc.want, tc.waiting)
		}
	}
}

// TestRoomForSliceComing: a pod of a namespace with several primary
// networks is placed on a Layer3 network whose slice its node does not
// hold yet (cluster-manager gives it with the pod), not on the next
// network; a network the node lacks (cluster-manager could not give a
// slice) has no room.
func TestRoomForSliceComing(t *testing.T) {
	r := &Reconciler{Zone: "node-a"}
	blue := podnet.Primary{Network: "ns.blue", Conf: &netconf.NetConf{Topology: netconf.TopologyLayer3}}
	for _, tc := range []struct {
		subnets string
		want    bool
	}{
		{`{"default":["10.244.0.0/24"]}`, true}, // coming
		{`{"default":["10.244.0.0/24"],"ns.blue":[]}`, false},
		{`{"default":["10.244.0.0/24"],"ns.blue":["10.128.0.0/24"]}`, true},
	} {
		s, err := nodeinfo.ParseSubnets(tc.subnets)
		if err != nil {
			t.Fatal(err)
		}
		local := nodeinfo.Info{Name: "node-a", Subnets: s}
		if got := r.roomFor(context.Background(), local)(blue); got != tc.want {
			t.Errorf("subnets %s: room %v, want %v", tc.subnets, got, tc.want)
		}
	}
}

// TestEgressActivityKeys: which EgressIP events queue the network of the
// namespace they select: those that may add a node not in its set, every
// one that may remove a node, and none that changes nothing.
func TestEgressActivityKeys(t *testing.T) {
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "net"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"ns1.net","type":"ovn-k8s-cni-overlay","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"ns1/net"}`}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{"team": "blue"}}}
	egress := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{v1.EgressAssignableLabel: ""}}}
	b := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(nad, ns, egress)
	for _, i := range Indexes() {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	c := b.Build()
	eip := func(nodes ...string) *v1.EgressIP {
		e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: v1.EgressIPSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}}}
		for _, n := range nodes {
			e.Status.Items = append(e.Status.Items, v1.EgressIPStatusItem{Node: n, EgressIP: "172.18.0.50"})
		}
		return e
	}
	reselected := func(nodes ...string) *v1.EgressIP {
		e := eip(nodes...)
		e.Spec.NamespaceSelector.MatchLabels = map[string]string{"team": "red"}
		return e
	}
	queued := []string{"net:ns1.net"}
	for _, tc := range []struct {
		name          string
		set           *activity.Nodes // nil: not planned yet
		before, after *v1.EgressIP
		want          []string
	}{
		{name: "created: its assignable node-b is not in the set", set: setOf(activity.On("node-a")), after: eip(), want: queued},
		{name: "created: node-b is in the set already", set: setOf(activity.On("node-a", "node-b")), after: eip()},
		{name: "an IP given to node-b, in the set", set: setOf(activity.On("node-a", "node-b")), before: eip(), after: eip("node-b")},
		{name: "an IP given to node-c, not in the set", set: setOf(activity.On("node-a", "node-b")), before: eip(), after: eip("node-c"), want: queued},
		{name: "an IP taken from node-b: maybe its last use", set: setOf(activity.On("node-a", "node-b")), before: eip("node-b"), after: eip("node-c"), want: queued},
		{name: "deleted", set: setOf(activity.On("node-a", "node-b")), before: eip("node-b"), want: queued},
		{name: "not planned yet", after: eip(), want: queued},
		{name: "status unchanged", set: setOf(activity.On("node-a")), before: eip("node-b"), after: eip("node-b")},
		{name: "its selector no longer selects the namespace", set: setOf(activity.On("node-a", "node-b")), before: eip("node-b"), after: reselected("node-b"), want: queued},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Zone: "node-a", Client: c}
			if tc.set != nil {
				r.active.put("ns1.net", *tc.set, activity.On())
			}
			if d := cmp.Diff(tc.want, owners(r.egressActivityKeys(context.Background(), tc.before, tc.after))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
