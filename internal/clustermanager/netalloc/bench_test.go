package netalloc_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/registry"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// BenchmarkAllocateNetworks allocates every network ID (4095), a third of the
// networks with a transit-router tunnel key.
func BenchmarkAllocateNetworks(b *testing.B) {
	names := make([]string, config.MaxNetworkID)
	for i := range names {
		names[i] = fmt.Sprintf("ns%d.net", i)
	}
	for b.Loop() {
		n := registry.NewNetworks(config.MaxNetworkID)
		for i, name := range names {
			if _, err := n.Allocate(name, i%3/2); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(names)), "ns/network")
}

// BenchmarkNodeSubnets gives 5000 nodes an ID and a slice of each of 100
// dual-stack Layer3 networks (plus the default network).
func BenchmarkNodeSubnets(b *testing.B) {
	var nets []netalloc.Layer3Network
	for i := 0; i < 100; i++ {
		nets = append(nets, netalloc.WithDefaultHostPrefixes(fmt.Sprintf("ns%d.net", i), []netconf.Subnet{
			{CIDR: netip.MustParsePrefix("10.0.0.0/8"), HostPrefix: 24},
			{CIDR: netip.MustParsePrefix("fd00::/48"), HostPrefix: 64},
		}))
	}
	// A default network large enough for 5000 nodes (the kind-like default,
	// a /16 in /24s, holds 256).
	nets = append(nets, netalloc.WithDefaultHostPrefixes(nodeinfo.DefaultNetwork, []netconf.Subnet{
		{CIDR: netip.MustParsePrefix("10.128.0.0/9"), HostPrefix: 24}}))
	nodes := make([]string, 5000)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("node-%d", i)
	}
	for b.Loop() {
		n := netalloc.NewNodes(config.Default().MaxNodeID())
		if _, err := n.SetNetworks(nets); err != nil {
			b.Fatal(err)
		}
		for _, node := range nodes {
			if a := n.Node(node); a.IDErr != nil || len(a.Failed) > 0 {
				b.Fatalf("node %s: %v %v", node, a.IDErr, a.Failed)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(nodes)*len(nets)), "ns/subnet")
}

// BenchmarkRecoverFromAPI measures what a restarted cluster-manager does before
// its first allocation: list 1000 networks' NADs and 100 nodes from a real API
// server and rebuild every network ID, tunnel key, node ID and node subnet.
func BenchmarkRecoverFromAPI(b *testing.B) {
	c := cmtest.Admin(b, env)
	ctx := context.Background()
	ns := cmtest.Namespace(b, c, "bench", nil)
	b.Cleanup(func() { _ = c.DeleteAllOf(ctx, &nadv1.NetworkAttachmentDefinition{}, client.InNamespace(ns)) })
	layer3 := 0
	for i := 1; i <= 1000; i++ {
		topology, subnets, keys := "layer2", "10.100.0.0/16", ""
		if i%2 == 0 {
			topology, subnets = "layer3", "10.128.0.0/14/24"
			layer3++
		} else {
			keys = fmt.Sprintf("[%d]", 16715776+i)
		}
		conf := fmt.Sprintf(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"bench.n%d","topology":%q,"role":"primary","subnets":%q,"netAttachDefName":"%s/n%d"}`, i, topology, subnets, ns, i)
		ann := map[string]string{netconf.NetworkIDAnnotation: fmt.Sprint(i)}
		if keys != "" {
			ann[netconf.TunnelKeysAnnotation] = keys
		}
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("n%d", i), Annotations: ann},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf}}
		if err := c.Create(ctx, nad); err != nil {
			b.Fatal(err)
		}
	}
	for n := 0; n < 100; n++ {
		subnets := nodeinfo.Subnets{nodeinfo.DefaultNetwork: {netip.MustParsePrefix(fmt.Sprintf("10.244.%d.0/24", n))}}
		for i := 2; i <= 1000; i += 2 {
			subnets[fmt.Sprintf("bench.n%d", i)] = []netip.Prefix{netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", 128+n/256, n%256))}
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-node-%d", n), Annotations: map[string]string{
			nodeinfo.NodeIDAnnotation: fmt.Sprint(n + 2), nodeinfo.NodeSubnetsAnnotation: subnets.String()}}}
		if err := c.Create(ctx, node); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Delete(ctx, node) })
	}
	cfg := config.Default()
	for b.Loop() {
		networks := registry.NewNetworks(0)
		r := &registry.Recovery{Reader: c, Networks: networks, Log: logr.Discard()}
		if err := r.Ensure(ctx); err != nil {
			b.Fatal(err)
		}
		nodes := netalloc.NewNodes(cfg.MaxNodeID())
		nc := &netalloc.NodeController{Client: c, Reader: c, Config: cfg, Nodes: nodes, Recorder: &record.FakeRecorder{}}
		if err := nc.Recover(ctx); err != nil {
			b.Fatal(err)
		}
		if got := networks.Len(); got < 1000 {
			b.Fatalf("recovered %d networks, want 1000", got)
		}
		if holder, ok := nodes.NodeIDHolder(101); !ok || holder != "bench-node-99" {
			b.Fatalf("node ID 101 held by %q", holder)
		}
	}
	b.ReportMetric(float64(layer3), "layer3-networks")
}
