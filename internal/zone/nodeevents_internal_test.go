package zone

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// TestNodeEventNetworks: which networks another node's change requeues in
// zone node-a: those that render the node (by their last plan's node set;
// any not planned yet or being planned), and, when only the node's subnets
// changed, only those whose slice on it changed.
func TestNodeEventNetworks(t *testing.T) {
	node := func(subnets string, mutate ...func(map[string]string)) *corev1.Node {
		a := nodeinfo.Example("node-b", 1).Annotations()
		a[nodeinfo.NodeSubnetsAnnotation] = subnets
		for _, m := range mutate {
			m(a)
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Annotations: a}}
	}
	const (
		before  = `{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"]}`
		newBlue = `{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.9.0/24"]}`
		addPink = `{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"],"pink":["10.136.1.0/24"]}`
	)
	chassis := func(a map[string]string) { a[nodeinfo.ChassisIDAnnotation] = "another-chassis" }
	old := func(a map[string]string) { a[nodeinfo.Layer2TopologyVersionAnnotation] = nodeinfo.Layer2TopologyV1 }
	networks := []string{"blue", "default", "green", "pink", "red", "violet"}
	sets := map[string]activity.Nodes{
		"default": activity.Everywhere(),
		"red":     activity.On("node-a", "node-b"),
		"blue":    activity.On("node-a", "node-b"),
		"green":   activity.On("node-a", "node-c"), // not rendered with node-b
		// pink: not planned yet
		"violet": activity.On("node-a"), // node-b uses it, waiting for its slice
	}
	waiting := map[string]activity.Nodes{"violet": activity.On("node-b")}
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Node
		planning string
		want     []string
	}{
		{name: "its chassis changed: every network rendering it", old: node(before), cur: node(before, chassis),
			want: []string{"net:blue", "net:default", "net:pink", "net:red", "net:violet"}},
		{name: "one network's slice changed", old: node(before), cur: node(newBlue), want: []string{"net:blue"}},
		{name: "a new network's slice (pink, not planned yet)", old: node(before), cur: node(addPink), want: []string{"net:pink"}},
		{name: "a slice of a network not rendered with it", old: node(before),
			cur: node(`{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"],"green":["10.140.1.0/24"]}`)},
		{name: "the same, while green is being planned", planning: "green", old: node(before),
			cur: node(`{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"],"green":["10.140.1.0/24"]}`), want: []string{"net:green"}},
		{name: "the slice a network left it out waiting for", old: node(before),
			cur: node(`{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"],"violet":["10.150.1.0/24"]}`), want: []string{"net:violet"}},
		{name: "created", cur: node(before), want: []string{"net:blue", "net:default", "net:pink", "net:red", "net:violet"}},
		{name: "deleted", old: node(before), want: []string{"net:blue", "net:default", "net:pink", "net:red", "net:violet"}},
		{name: "its Layer2 topology version changed: the Layer2 networks rendering it (red)", old: node(before, old), cur: node(before),
			want: []string{"net:red"}},
		{name: "its version and a slice changed", old: node(before, old), cur: node(newBlue), want: []string{"net:blue", "net:red"}},
		{name: "subnets that do not parse: every network rendering it", old: node(before), cur: node("{"),
			want: []string{"net:blue", "net:default", "net:pink", "net:red", "net:violet"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Zone: "node-a"}
			for n, s := range sets {
				w, ok := waiting[n]
				if !ok {
					w = activity.On()
				}
				r.active.put(n, s, w)
			}
			if tc.planning != "" {
				defer r.active.begin(tc.planning)()
			}
			changed, _ := slicesChanged(tc.old, tc.cur, func(n string) bool { return n == "red" || n == "green" })
			if d := cmp.Diff(tc.want, owners(r.networksRendering(networks, "node-b", changed))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestLocalSliceKeys: a change of the zone's own node's subnets alone
// queues the networks whose slice changed and the pods and services of
// their namespaces (all of them for the default network), and every other
// kind of key as before.
func TestLocalSliceKeys(t *testing.T) {
	nad := func(ns, network string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"` + network + `","type":"ovn-k8s-cni-overlay","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"` + ns + `/net"}`}}
	}
	b := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(nad("ns1", "red"), nad("ns1b", "red"), nad("ns2", "blue"))
	for _, i := range Indexes() {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	r := &Reconciler{Zone: "node-a", Client: b.Build()}
	keys := []string{"chassis", "net:blue", "net:default", "net:red", "np:ns2/deny-all", "pod:ns1/a", "pod:ns1b/b", "pod:ns2/c", "pod:ns3/d",
		"svc:ns1/web", "svc:ns2/web"}
	for _, tc := range []struct {
		name    string
		changed []string
		want    []string
	}{
		{"red's slice", []string{"red"}, []string{"chassis", "net:red", "np:ns2/deny-all", "pod:ns1/a", "pod:ns1b/b", "svc:ns1/web"}},
		{"a new network's slice, nothing of it here yet", []string{"green"}, []string{"chassis", "np:ns2/deny-all"}},
		{"the default network's slice", []string{"default"}, []string{"chassis", "net:default", "np:ns2/deny-all", "pod:ns1/a", "pod:ns1b/b",
			"pod:ns2/c", "pod:ns3/d", "svc:ns1/web", "svc:ns2/web"}},
	} {
		changed := func(n string) bool { return slices.Contains(tc.changed, n) }
		var in []feature.Key
		for _, k := range keys {
			key, ok := feature.ParseKey(k)
			if !ok || key.String() != k {
				t.Fatalf("ParseKey(%q) = %v, %v", k, key, ok)
			}
			in = append(in, key)
		}
		if d := cmp.Diff(tc.want, owners(r.localSliceKeys(context.Background(), in, changed))); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}
