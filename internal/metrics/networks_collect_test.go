package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// lists is a client.Reader holding NADs and Nodes (what the collector
// lists); objects are handed out as a cache does with
// UnsafeDisableDeepCopy, not copied.
type lists struct {
	nads  []nadv1.NetworkAttachmentDefinition
	nodes []corev1.Node
}

func (l *lists) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return fmt.Errorf("not served")
}

func (l *lists) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	switch list := list.(type) {
	case *nadv1.NetworkAttachmentDefinitionList:
		list.Items = l.nads
	case *corev1.NodeList:
		list.Items = l.nodes
	default:
		return fmt.Errorf("%T not served", list)
	}
	return nil
}

// collect scrapes c and returns its series as "name,label=value,..." →
// value.
func collect(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf(",%s=%s", l.GetName(), l.GetValue())
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}

func testNAD(uid, version, ns, network, topology, role string, id int) nadv1.NetworkAttachmentDefinition {
	subnets := `"subnets":"10.` + fmt.Sprint(100+id) + `.0.0/16/24",`
	if topology == netconf.TopologyLayer2 {
		subnets = `"subnets":"10.` + fmt.Sprint(100+id) + `.0.0/24",`
	}
	nad := nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net", UID: types.UID(uid), ResourceVersion: version,
			Labels: map[string]string{netconf.ManagedByLabel: ""}, Annotations: netconf.AllocationAnnotations(id, nil)},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network +
			`","topology":"` + topology + `","role":"` + role + `",` + subnets + `"netAttachDefName":"` + ns + `/net"}`},
	}
	return nad
}

func testNode(uid, version, subnets string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid), ResourceVersion: version,
		Annotations: map[string]string{nodeinfo.NodeSubnetsAnnotation: subnets}}}
}

// TestNetworksCollect: the gauges follow the NADs and Nodes, and a scrape
// parses only the objects whose resource version changed since the last.
func TestNetworksCollect(t *testing.T) {
	src := &lists{
		nads: []nadv1.NetworkAttachmentDefinition{
			testNAD("n1", "1", "a", "blue", netconf.TopologyLayer3, netconf.RolePrimary, 1),
			testNAD("n2", "1", "b", "blue", netconf.TopologyLayer3, netconf.RolePrimary, 1), // the same network again
			testNAD("n3", "1", "c", "green", netconf.TopologyLayer2, netconf.RoleSecondary, 2),
		},
		nodes: []corev1.Node{
			testNode("node1", "1", `{"default":["10.244.0.0/24"],"blue":["10.101.0.0/24"]}`),
			testNode("node2", "1", `{"default":["10.244.1.0/24"],"blue":["10.101.1.0/24"]}`),
		},
	}
	n := &networks{c: src, max: 10, keys: 20}
	// Every series of the collector but the pools' fixed capacities and
	// the network counts that stay 0.
	series := func() map[string]float64 {
		out := collect(t, n)
		for k, v := range out {
			if strings.HasPrefix(k, "ovn_udn_network_ids_capacity") || strings.HasPrefix(k, "ovn_udn_tunnel_keys_capacity") ||
				strings.HasPrefix(k, "ovn_udn_networks,") && v == 0 {
				delete(out, k)
			}
		}
		return out
	}
	want := map[string]float64{
		"ovn_udn_networks,role=primary,topology=layer3":   1,
		"ovn_udn_networks,role=secondary,topology=layer2": 1,
		"ovn_udn_network_ids_allocated":                   2,
		"ovn_udn_tunnel_keys_allocated":                   0,
		"ovn_udn_node_subnets_allocated,network=blue":     2,
		"ovn_udn_node_subnets_capacity,network=blue":      256,
		"ovn_udn_node_subnets_allocated,network=default":  2,
		"ovn_udn_node_subnets_capacity,network=default":   0,
	}
	// scrape checks the series against want and how many objects the
	// scrape parsed.
	scrape := func(step string, wantParsed int64) {
		t.Helper()
		parses0 := parses.Load()
		if d := cmp.Diff(want, series()); d != "" {
			t.Errorf("%s (-want +got):\n%s", step, d)
		}
		if got := parses.Load() - parses0; got != wantParsed {
			t.Errorf("%s: the scrape parsed %d objects, want %d", step, got, wantParsed)
		}
	}
	scrape("first scrape: every object", 5)
	scrape("nothing changed", 0)

	// node2 loses its slice of blue (a new resource version), and lacks
	// one (listed with none: it is not counted); n2 goes.
	src.nodes[1] = testNode("node2", "2", `{"default":["10.244.1.0/24"],"blue":[]}`)
	src.nads = src.nads[:1:1]
	src.nads = append(src.nads, testNAD("n3", "1", "c", "green", netconf.TopologyLayer2, netconf.RoleSecondary, 2))
	want["ovn_udn_node_subnets_allocated,network=blue"] = 1
	scrape("node2 changed", 1)
	if len(n.nads) != 2 || len(n.nodes) != 2 {
		t.Errorf("the collector remembers %d NADs and %d Nodes, want 2 and 2 (n2 deleted)", len(n.nads), len(n.nodes))
	}

	// green's NAD changes (a new resource version): it is parsed again.
	src.nads[1] = testNAD("n3", "2", "c", "green", netconf.TopologyLayer2, netconf.RolePrimary, 2)
	delete(want, "ovn_udn_networks,role=secondary,topology=layer2")
	want["ovn_udn_networks,role=primary,topology=layer2"] = 1
	scrape("green's NAD changed", 1)

	// The last blue NAD goes: the network is no longer counted.
	src.nads = src.nads[1:]
	delete(want, "ovn_udn_networks,role=primary,topology=layer3")
	want["ovn_udn_network_ids_allocated"] = 1
	delete(want, "ovn_udn_node_subnets_capacity,network=blue")
	delete(want, "ovn_udn_node_subnets_allocated,network=blue")
	scrape("blue's NADs went", 0)

	// node1 goes: its slices are no longer counted.
	src.nodes = src.nodes[1:]
	want["ovn_udn_node_subnets_allocated,network=default"] = 1
	scrape("node1 went", 0)
	if _, ok := n.held["blue"]; ok {
		t.Errorf("the collector still counts slices of blue: %v", n.held)
	}
}

// BenchmarkNetworksCollect: a scrape of cluster-manager's network gauges
// with N Layer3 networks on M nodes (every Node's subnets annotation holds a
// slice of each): the first scrape parses every NAD and Node (what every
// scrape did before the collector remembered them, without the copies out
// of the cache), a scrape with nothing changed parses none, and one after
// one Node changed parses that Node.
//
//	go test -run XXX -bench BenchmarkNetworksCollect -benchmem ./internal/metrics/
func BenchmarkNetworksCollect(b *testing.B) {
	const nNetworks, nNodes = 4000, 500
	src := &lists{}
	for i := range nNetworks {
		src.nads = append(src.nads, testNAD(fmt.Sprint("nad", i), "1", fmt.Sprint("ns", i), fmt.Sprint("net", i), netconf.TopologyLayer3, netconf.RolePrimary, i%4000+1))
	}
	annotation := func(node int) string {
		s := `{"default":["10.244.` + fmt.Sprint(node%256) + `.0/24"]`
		for i := range nNetworks {
			s += fmt.Sprintf(`,"net%d":["10.%d.%d.0/24"]`, i, 100+i%100, node%256)
		}
		return s + "}"
	}
	for j := range nNodes {
		src.nodes = append(src.nodes, testNode(fmt.Sprint("node", j), "1", annotation(j)))
	}
	scrape := func(n *networks) {
		ch := make(chan prometheus.Metric, 2*nNetworks+100)
		n.Collect(ch)
		close(ch)
	}
	b.Run("every object parsed", func(b *testing.B) {
		for b.Loop() {
			scrape(&networks{c: src})
		}
	})
	b.Run("nothing changed", func(b *testing.B) {
		n := &networks{c: src}
		scrape(n)
		for b.Loop() {
			scrape(n)
		}
	})
	b.Run("one node changed", func(b *testing.B) {
		n := &networks{c: src}
		scrape(n)
		version := 1
		for b.Loop() {
			version++
			src.nodes[0].ResourceVersion = fmt.Sprint(version)
			scrape(n)
		}
	})
}
