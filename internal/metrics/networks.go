package metrics

import (
	"context"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ovn-udn/ovn-udn/internal/netconf"
)

var (
	networksDesc = prometheus.NewDesc("ovn_udn_networks",
		"User-defined networks (each once, however many namespaces its NADs are in), by topology and role.",
		[]string{"topology", "role"}, nil)
	idsUsedDesc = prometheus.NewDesc("ovn_udn_network_ids_allocated",
		"Network IDs allocated to networks (their NADs' k8s.ovn.org/network-id).", nil, nil)
	idsCapacityDesc = prometheus.NewDesc("ovn_udn_network_ids_capacity",
		"Network IDs the cluster may allocate (--max-networks); allocated = capacity means new networks wait.", nil, nil)
)

// networks is a collector that counts networks from the NADs in a cache
// when scraped (so it can never disagree with them).
type networks struct {
	mu  sync.Mutex
	c   client.Reader
	max int
}

var (
	networksCollector = &networks{}
	registerNetworks  sync.Once
)

// ServeNetworks has the process serve the cluster-manager's metrics of
// networks and network-ID pool usage, read from c (the manager's cache) at
// scrape time. The last call's source wins (one cluster-manager runs per
// process; tests start several, one after another).
func ServeNetworks(c client.Reader, maxNetworks int) {
	networksCollector.mu.Lock()
	networksCollector.c, networksCollector.max = c, maxNetworks
	networksCollector.mu.Unlock()
	registerNetworks.Do(func() { ctrlmetrics.Registry.MustRegister(networksCollector) })
}

// Describe implements prometheus.Collector.
func (n *networks) Describe(ch chan<- *prometheus.Desc) {
	ch <- networksDesc
	ch <- idsUsedDesc
	ch <- idsCapacityDesc
}

// Collect implements prometheus.Collector.
func (n *networks) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	c, max := n.c, n.max
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &list); err != nil {
		ch <- prometheus.NewInvalidMetric(networksDesc, err)
		return
	}
	type kind struct{ topology, role string }
	seen := map[string]kind{}
	ids := map[int]bool{}
	for i := range list.Items {
		nad := &list.Items[i]
		if !netconf.Managed(nad) {
			continue
		}
		c, err := netconf.Parse(nad)
		if err != nil || c == nil {
			continue
		}
		seen[c.Name] = kind{c.Topology, c.Role}
		if id, _, ok, err := netconf.ParseAllocation(nad.Annotations); err == nil && ok {
			ids[id] = true
		}
	}
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
}
