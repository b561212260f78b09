package zone

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
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
	networks := []string{"blue", "default", "green", "pink", "red"}
	sets := map[string]activity.Nodes{
		"default": activity.Everywhere(),
		"red":     activity.On("node-a", "node-b"),
		"blue":    activity.On("node-a", "node-b"),
		"green":   activity.On("node-a", "node-c"), // not rendered with node-b
		// pink: not planned yet
	}
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Node
		planning string
		want     []string
	}{
		{name: "its chassis changed: every network rendering it", old: node(before), cur: node(before, chassis),
			want: []string{"net:blue", "net:default", "net:pink", "net:red"}},
		{name: "one network's slice changed", old: node(before), cur: node(newBlue), want: []string{"net:blue"}},
		{name: "a new network's slice (pink, not planned yet)", old: node(before), cur: node(addPink), want: []string{"net:pink"}},
		{name: "a slice of a network not rendered with it", old: node(before),
			cur: node(`{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"],"green":["10.140.1.0/24"]}`)},
		{name: "the same, while green is being planned", planning: "green", old: node(before),
			cur: node(`{"default":["10.244.1.0/24"],"red":["10.128.1.0/24"],"blue":["10.132.1.0/24"],"green":["10.140.1.0/24"]}`), want: []string{"net:green"}},
		{name: "created", cur: node(before), want: []string{"net:blue", "net:default", "net:pink", "net:red"}},
		{name: "deleted", old: node(before), want: []string{"net:blue", "net:default", "net:pink", "net:red"}},
		{name: "subnets that do not parse: every network rendering it", old: node(before), cur: node("{"),
			want: []string{"net:blue", "net:default", "net:pink", "net:red"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Zone: "node-a"}
			for n, s := range sets {
				r.active.put(n, s)
			}
			if tc.planning != "" {
				defer r.active.begin(tc.planning)()
			}
			if d := cmp.Diff(tc.want, r.networksRendering(networks, "node-b", slicesChanged(tc.old, tc.cur))); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
