package metrics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

var (
	networksDesc = prometheus.NewDesc("ovn_udn_networks",
		"User-defined networks (each once, however many namespaces its NADs are in), by topology and role.",
		[]string{"topology", "role"}, nil)
	idsUsedDesc = prometheus.NewDesc("ovn_udn_network_ids_allocated",
		"Network IDs allocated to networks (their NADs' k8s.ovn.org/network-id).", nil, nil)
	idsCapacityDesc = prometheus.NewDesc("ovn_udn_network_ids_capacity",
		"Network IDs the cluster may allocate (--max-networks); allocated = capacity means new networks wait.", nil, nil)
	keysUsedDesc = prometheus.NewDesc("ovn_udn_tunnel_keys_allocated",
		"Interconnect tunnel keys allocated to networks (their NADs' k8s.ovn.org/tunnel-keys).", nil, nil)
	keysCapacityDesc = prometheus.NewDesc("ovn_udn_tunnel_keys_capacity",
		"Interconnect tunnel keys the cluster may allocate.", nil, nil)
	slicesUsedDesc = prometheus.NewDesc("ovn_udn_node_subnets_allocated",
		"Nodes holding a slice (node subnet) of a Layer3 network, by network (\"default\" is the cluster default network).", []string{"network"}, nil)
	slicesCapacityDesc = prometheus.NewDesc("ovn_udn_node_subnets_capacity",
		"Nodes a Layer3 network's subnets can give a slice (the fewest over its address families), by network.", []string{"network"}, nil)
)

// networks is a collector that counts networks from the NADs in a cache
// when scraped (so it can never disagree with them).
//
// A scrape reads the NADs and Nodes without copying them out of the cache
// and parses only those whose resource version changed since the last
// scrape: at 4,000 Layer3 networks each Node's subnets annotation is about
// 160 KB of JSON, parsed again on every scrape before.
type networks struct {
	mu       sync.Mutex
	c        client.Reader
	max      int
	keys     int
	defaults []netconf.Subnet

	// nads and nodes are what the last scrape parsed, by UID (held under
	// mu, which also serializes scrapes).
	nads  map[types.UID]parsedNAD
	nodes map[types.UID]parsedNode
	// held is how many of those Nodes hold a slice of each network.
	held map[string]int
}

// parsedNAD is what a scrape reads of one NAD, at one resource version.
type parsedNAD struct {
	version string
	// network is empty for a NAD that is not ovn-udn's or does not parse.
	network, topology, role string
	// allocated: the NAD holds its network ID and tunnel keys.
	allocated bool
	id        int
	keys      []int
	// capacity is a Layer3 network's slice capacity (sliceCapacity).
	capacity int
}

// parsedNode is what a scrape reads of one Node: the networks it holds a
// slice of (none when its annotation does not parse).
type parsedNode struct {
	version  string
	networks []string
}

// parses counts NADs and Nodes parsed by scrapes (for tests).
var parses atomic.Int64

// parseNAD reads a NAD for the collector.
func parseNAD(nad *nadv1.NetworkAttachmentDefinition) parsedNAD {
	parses.Add(1)
	p := parsedNAD{version: nad.ResourceVersion}
	if !netconf.Managed(nad) {
		return p
	}
	c, err := netconf.Parse(nad)
	if err != nil || c == nil {
		return p
	}
	p.network, p.topology, p.role = c.Name, c.Topology, c.Role
	if id, ks, ok, err := netconf.ParseAllocation(nad.Annotations); err == nil && ok {
		p.allocated, p.id, p.keys = true, id, ks
	}
	if c.Topology == netconf.TopologyLayer3 {
		p.capacity = sliceCapacity(c.ParsedSubnets())
	}
	return p
}

// parseNode reads a Node for the collector.
func parseNode(node *corev1.Node) parsedNode {
	parses.Add(1)
	p := parsedNode{version: node.ResourceVersion}
	subnets, err := nodeinfo.ParseSubnets(node.Annotations[nodeinfo.NodeSubnetsAnnotation])
	if err != nil {
		return p
	}
	for network, list := range subnets {
		if len(list) > 0 { // not a network the node lacks
			p.networks = append(p.networks, network)
		}
	}
	return p
}

var (
	networksCollector = &networks{}
	registerNetworks  sync.Once
)

// ServeNetworks has the process serve the cluster-manager's metrics of
// networks and of its pools' usage (network IDs, tunnel keys, each Layer3
// network's node subnets), read from c (the manager's cache: NADs and
// Nodes) at scrape time. maxNetworks and tunnelKeys are the pools' sizes,
// clusterSubnets the default network's. The last call's source wins (one
// cluster-manager runs per process; tests start several, one after
// another).
func ServeNetworks(c client.Reader, maxNetworks, tunnelKeys int, clusterSubnets []netconf.Subnet) {
	networksCollector.mu.Lock()
	networksCollector.c, networksCollector.max, networksCollector.keys, networksCollector.defaults = c, maxNetworks, tunnelKeys, clusterSubnets
	networksCollector.nads, networksCollector.nodes, networksCollector.held = nil, nil, nil
	networksCollector.mu.Unlock()
	registerNetworks.Do(func() { ctrlmetrics.Registry.MustRegister(networksCollector) })
}

// Describe implements prometheus.Collector.
func (n *networks) Describe(ch chan<- *prometheus.Desc) {
	ch <- networksDesc
	ch <- idsUsedDesc
	ch <- idsCapacityDesc
	ch <- keysUsedDesc
	ch <- keysCapacityDesc
	ch <- slicesUsedDesc
	ch <- slicesCapacityDesc
}

// Collect implements prometheus.Collector.
func (n *networks) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, max, maxKeys, clusterSubnets := n.c, n.max, n.keys, n.defaults
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Read only: the objects are the cache's own.
	var list nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(networksDesc, err)
		return
	}
	type kind struct{ topology, role string }
	seen := map[string]kind{}
	ids, keys := map[int]bool{}, map[int]bool{}
	slices := map[string]int{nodeinfo.DefaultNetwork: sliceCapacity(clusterSubnets)}
	nads := make(map[types.UID]parsedNAD, len(list.Items))
	for i := range list.Items {
		nad := &list.Items[i]
		p, ok := n.nads[nad.UID]
		if !ok || p.version != nad.ResourceVersion {
			p = parseNAD(nad)
		}
		nads[nad.UID] = p
		if p.network == "" {
			continue
		}
		seen[p.network] = kind{p.topology, p.role}
		if p.allocated {
			ids[p.id] = true
			for _, k := range p.keys {
				keys[k] = true
			}
		}
		if p.topology == netconf.TopologyLayer3 {
			slices[p.network] = p.capacity
		}
	}
	n.nads = nads
	counts := map[kind]int{}
	for _, k := range seen {
		counts[k]++
	}
	for _, topo := range []string{netconf.TopologyLayer3, netconf.TopologyLayer2, netconf.TopologyLocalnet} {
		for _, role := range []string{netconf.RolePrimary, netconf.RoleSecondary} {
			ch <- prometheus.MustNewConstMetric(networksDesc, prometheus.GaugeValue, float64(counts[kind{topo, role}]), topo, role)
		}
	}
	ch <- prometheus.MustNewConstMetric(idsUsedDesc, prometheus.GaugeValue, float64(len(ids)))
	ch <- prometheus.MustNewConstMetric(idsCapacityDesc, prometheus.GaugeValue, float64(max))
	ch <- prometheus.MustNewConstMetric(keysUsedDesc, prometheus.GaugeValue, float64(len(keys)))
	ch <- prometheus.MustNewConstMetric(keysCapacityDesc, prometheus.GaugeValue, float64(maxKeys))
	var nodeList corev1.NodeList
	if err := c.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(slicesUsedDesc, err)
		return
	}
	// held counts the Nodes holding a slice of each network, kept up to
	// date Node by Node (4,000 networks on 500 Nodes are 2 M slices).
	if n.held == nil {
		n.held = map[string]int{}
	}
	count := func(p parsedNode, d int) {
		for _, network := range p.networks {
			if n.held[network] += d; n.held[network] == 0 {
				delete(n.held, network)
			}
		}
	}
	nodes := make(map[types.UID]parsedNode, len(nodeList.Items))
	for i := range nodeList.Items {
		node := &nodeList.Items[i]
		p, ok := n.nodes[node.UID]
		if !ok || p.version != node.ResourceVersion {
			if ok {
				count(p, -1)
			}
			p = parseNode(node)
			count(p, +1)
		}
		nodes[node.UID] = p
	}
	for uid, p := range n.nodes {
		if _, ok := nodes[uid]; !ok {
			count(p, -1) // the Node is gone
		}
	}
	n.nodes = nodes
	for network, capacity := range slices {
		ch <- prometheus.MustNewConstMetric(slicesUsedDesc, prometheus.GaugeValue, float64(n.held[network]), network)
		ch <- prometheus.MustNewConstMetric(slicesCapacityDesc, prometheus.GaugeValue, float64(capacity), network)
	}
}

// sliceCapacity is how many nodes a Layer3 network's subnets give a slice:
// per address family the slices of all its subnets, the fewest over the
// families (a node needs one of each); capped at 2^30.
func sliceCapacity(subnets []netconf.Subnet) int {
	const limit = 1 << 30
	perFamily := map[bool]int{}
	for _, s := range subnets {
		if s.HostPrefix == 0 || s.HostPrefix < s.CIDR.Bits() {
			continue
		}
		n := limit
		if bits := s.HostPrefix - s.CIDR.Bits(); bits < 30 {
			n = 1 << bits
		}
		perFamily[s.CIDR.Addr().Is4()] = min(limit, perFamily[s.CIDR.Addr().Is4()]+n)
	}
	out := 0
	for _, n := range perFamily {
		if out == 0 || n < out {
			out = n
		}
	}
	return out
}
