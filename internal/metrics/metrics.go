// Package metrics defines ovn-udn's own Prometheus metrics and registers
// them in controller-runtime's registry, which each component's manager
// serves on its --metrics-addr beside controller-runtime's reconcile
// metrics. docs/metrics.md lists every series.
package metrics

import (
	"errors"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
)

// Zone controller metrics: what each owner kind writes to its zone's
// Northbound. Owner kinds are the reconcile keys' prefixes: "net" (a
// network's topology), "svc" (a Service), "np" (a NetworkPolicy), "npdeny"
// (a namespace's default deny), "npas" (a policy peer's address sets).
var (
	Transactions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ovn_udn_ovsdb_transactions_total",
		Help: "Northbound transactions a zone controller committed, by owner kind and result (ok, error).",
	}, []string{"zone", "owner_kind", "result"})
	TransactionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ovn_udn_ovsdb_transaction_duration_seconds",
		Help:    "From a transaction's start until the zone controller's cache shows its result, by owner kind.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
	}, []string{"zone", "owner_kind"})
	Rows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ovn_udn_ovsdb_rows_written_total",
		Help: "Northbound rows a zone controller inserted, updated or deleted, and members it added to or removed from other owners' rows, by owner kind.",
	}, []string{"zone", "owner_kind", "op"})
	Reconnects = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ovn_udn_ovsdb_reconnects_total",
		Help: "Times a zone controller's connection to its database (nb, sb) came back after being lost (each followed by a full resync).",
	}, []string{"zone", "db"})
	PodAnnotationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ovn_udn_pod_annotation_duration_seconds",
		Help:    "From the zone controller first seeing a pod scheduled to its node without its pod-networks annotation until it wrote the annotation.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1 ms .. 33 s
	}, []string{"zone"})
	NetworkReadySeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ovn_udn_network_ready_seconds",
		Help:    "From a network's oldest NetworkAttachmentDefinition's creation until the zone controller's first transaction wrote the network's rows in the zone.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 13), // 0.1 s .. 410 s
	}, []string{"zone"})
)

// Node agent metrics.
var (
	PlumbSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ovn_udn_pod_plumb_duration_seconds",
		Help:    "Time the node agent took to plumb a pod's interfaces (network namespace, veths, OVS ports), each time it changed some.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1 ms .. 8 s
	}, []string{"node"})
	CNIAddSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ovn_udn_cni_add_duration_seconds",
		Help:    "Time the node agent took to answer a CNI ADD, from the call to its result: waiting for the pod's annotation, plumbing, and waiting for ovn-controller; by outcome (ok, error).",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 16), // 5 ms .. 160 s
	}, []string{"node", "outcome"})
)

// PlumbedPods is a gauge function of the pods a node agent has interfaces
// plugged for.
func PlumbedPods(node string, count func() int) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "ovn_udn_pods_plumbed",
		Help:        "Pods the node agent has interfaces plugged for (OVS ports on br-int).",
		ConstLabels: prometheus.Labels{"node": node},
	}, func() float64 { return float64(count()) })
}

var register sync.Once

// Register registers the metrics in controller-runtime's registry (once per
// process).
func Register() {
	register.Do(func() {
		for _, c := range []prometheus.Collector{Transactions, TransactionSeconds, Rows, Reconnects, PodAnnotationSeconds, NetworkReadySeconds, PlumbSeconds, CNIAddSeconds} {
			ctrlmetrics.Registry.MustRegister(c)
		}
	})
}

// MustRegisterOnce registers a collector, accepting one already registered
// (several components or zones may run in one process, as in tests).
func MustRegisterOnce(c prometheus.Collector) {
	var already prometheus.AlreadyRegisteredError
	if err := ctrlmetrics.Registry.Register(c); err != nil && !errors.As(err, &already) {
		panic(err)
	}
}

// RegisterLatest registers a collector of a component that may be built
// again in the same process (a zone controller restarted by a test or an
// embedding program): one registered before with the same descriptors is
// replaced, so the metric reads the newest component, never a stopped one.
// The returned function unregisters c unless a newer one replaced it (the
// component's Close calls it).
func RegisterLatest(c prometheus.Collector) (unregister func()) {
	key := descKey(c)
	latest.mu.Lock()
	defer latest.mu.Unlock()
	var already prometheus.AlreadyRegisteredError
	err := ctrlmetrics.Registry.Register(c)
	if errors.As(err, &already) {
		ctrlmetrics.Registry.Unregister(already.ExistingCollector)
		err = ctrlmetrics.Registry.Register(c)
	}
	if err != nil {
		panic(err)
	}
	latest.by[key] = c
	return func() {
		latest.mu.Lock()
		defer latest.mu.Unlock()
		if latest.by[key] == c {
			ctrlmetrics.Registry.Unregister(c) // by descriptors: only while c is the one registered
			delete(latest.by, key)
		}
	}
}

// latest is the collector RegisterLatest last registered, by descriptors.
var latest = struct {
	mu sync.Mutex
	by map[string]prometheus.Collector
}{by: map[string]prometheus.Collector{}}

// descKey names a collector's descriptors.
func descKey(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var b strings.Builder
	for d := range ch {
		b.WriteString(d.String())
	}
	return b.String()
}

// OwnerKind is the kind of an ovsdbsync owner key: its prefix before ":".
func OwnerKind(owner string) string {
	kind, _, _ := strings.Cut(owner, ":")
	return kind
}

// ObserveSync returns an ovsdbsync observer (Syncer.Observe) that counts a
// zone's transactions and rows.
func ObserveSync(zone string) func(ovsdbsync.Applied) {
	Register()
	return func(a ovsdbsync.Applied) {
		kind := OwnerKind(a.Plan.Owner)
		if a.Plan.Part() != nil {
			kind += "-part" // net-part: a network's rows for the remote nodes that changed
		}
		result := "ok"
		if a.Err != nil {
			result = "error"
		}
		Transactions.WithLabelValues(zone, kind, result).Inc()
		TransactionSeconds.WithLabelValues(zone, kind).Observe(a.Duration.Seconds())
		if a.Err != nil {
			return
		}
		for op, n := range map[string]int{"insert": a.Plan.Inserted, "update": a.Plan.Updated, "delete": a.Plan.Deleted,
			"member_add": a.Plan.Added, "member_remove": a.Plan.Removed} {
			if n > 0 {
				Rows.WithLabelValues(zone, kind, op).Add(float64(n))
			}
		}
	}
}

// Connected is a gauge function of a database connection: 1 while connected.
func Connected(zone, db string, connected func() bool) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "ovn_udn_ovsdb_connected",
		Help:        "1 while the zone controller is connected to the database (nb, sb), else 0.",
		ConstLabels: prometheus.Labels{"zone": zone, "db": db},
	}, func() float64 {
		if connected() {
			return 1
		}
		return 0
	})
}

// podPorts counts a zone's pod ports at scrape time.
type podPorts struct {
	desc  *prometheus.Desc
	count func() (map[string]int, error)
}

// PodPorts is a collector of ovn_udn_pods for a zone, counting with count
// (pod ports by network, from the controller's Northbound cache) when
// scraped.
func PodPorts(zone string, count func() (map[string]int, error)) prometheus.Collector {
	return &podPorts{desc: prometheus.NewDesc("ovn_udn_pods", "Pod ports in a zone's Northbound (a pod's attachment each), by network.",
		[]string{"network"}, prometheus.Labels{"zone": zone}), count: count}
}

// Describe implements prometheus.Collector.
func (p *podPorts) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

// Collect implements prometheus.Collector. A count that fails (the cache
// of a zone controller stopped in this process) reports nothing rather
// than failing the whole scrape.
func (p *podPorts) Collect(ch chan<- prometheus.Metric) {
	counts, err := p.count()
	if err != nil {
		return
	}
	for network, n := range counts {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), network)
	}
}

// networksRendered reports how many networks a zone renders on its node
// and how many it leaves out because the node does not use them.
type networksRendered struct {
	desc  *prometheus.Desc
	count func() (rendered, notUsed int)
}

// NetworksRendered is the gauge ovn_udn_zone_networks{zone, rendered}: the
// networks a zone controller has planned, by whether it renders them on
// its node ("true") or leaves them out because the node does not use them
// ("false", docs/topology.md "Where a network is rendered"), counted at
// scrape time.
func NetworksRendered(zone string, count func() (rendered, notUsed int)) prometheus.Collector {
	return &networksRendered{desc: prometheus.NewDesc("ovn_udn_zone_networks", "Networks a zone controller has planned, by whether it renders them on its node.",
		[]string{"rendered"}, prometheus.Labels{"zone": zone}), count: count}
}

// Describe implements prometheus.Collector.
func (n *networksRendered) Describe(ch chan<- *prometheus.Desc) { ch <- n.desc }

// Collect implements prometheus.Collector.
func (n *networksRendered) Collect(ch chan<- prometheus.Metric) {
	yes, no := n.count()
	ch <- prometheus.MustNewConstMetric(n.desc, prometheus.GaugeValue, float64(yes), "true")
	ch <- prometheus.MustNewConstMetric(n.desc, prometheus.GaugeValue, float64(no), "false")
}
