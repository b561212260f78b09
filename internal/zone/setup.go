package zone

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/dnsresolve"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/northdgate"
	"github.com/ovn-udn/ovn-udn/internal/zone/chassis"
	"github.com/ovn-udn/ovn-udn/internal/zone/connects"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressfirewalls"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressips"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressqoses"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
	"github.com/ovn-udn/ovn-udn/internal/zone/l2version"
	"github.com/ovn-udn/ovn-udn/internal/zone/links"
	"github.com/ovn-udn/ovn-udn/internal/zone/policies"
	"github.com/ovn-udn/ovn-udn/internal/zone/services"
	"github.com/ovn-udn/ovn-udn/internal/zone/vms"
)

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// features are the zone's kinds of work, each in its own file with its
// watches, its keys, the columns it contributes to and what it plans again
// when a network changes (internal/zone/feature). This list is the whole
// zone controller; the host (this package's Reconciler) gives them one
// queue, one syncer and the shared caches.
//
// Features in packages of their own get the host (h); the others, in this
// package, the reconciler (r). Both are nil when only the declarations
// are read (NewSyncer).
func features(r *Reconciler, h *feature.Host) []feature.Feature {
	return []feature.Feature{
		chassis.New(h),         // other zones' chassis in the Southbound (chassis/)
		networkFeature{r},      // each network's rows where it is used (network.go, controller.go)
		podsFeature{r},         // Layer3 pod addresses and every pod's ports (pods.go, podports.go)
		services.New(h),        // Services' load balancers (services/)
		policies.New(h),        // NetworkPolicies, default denies, peers (policies/)
		connects.New(h),        // ClusterNetworkConnects (connects/)
		links.New(h),           // links between a namespace's primary networks (links/)
		egressips.New(h),       // EgressIPs' reroutes and SNATs (egressips/)
		egressfirewalls.New(h), // EgressFirewalls' port groups and ACLs (egressfirewalls/)
		egressqoses.New(h),     // EgressQoSes' DSCP marks (egressqoses/)
		vms.New(h),             // live-migratable VMs' shared ports (vms/)
	}
}

// Options configures a zone controller.
type Options struct {
	// Zone is the zone's name (the node's name: one node per zone).
	Zone string
	// NB and SB are the zone's database remotes ("tcp:127.0.0.1:6641").
	NB, SB  string
	Cluster config.Cluster
	// Workers is how many networks are reconciled at once (default 4: on two
	// cores it overlaps the server's work with the client's best).
	Workers int
	// Logger for libovsdb; discarded when unset.
	OVSDBLogger logr.Logger
	// HealthAddr serves /healthz and /readyz (ready: caches synced, NB and
	// SB connected); "" or "0" disables it.
	HealthAddr string
	// MetricsAddr serves /metrics (controller-runtime's and ovn-udn's, see
	// docs/metrics.md); "" or "0" disables it.
	MetricsAddr string
	// Gateway is the gateway routers' default-route policy (ECMP, BFD);
	// nil is config.DefaultGateway().
	Gateway *config.Gateway
	// DisableNetworkConnect leaves ClusterNetworkConnects alone (and does
	// not watch them: their CRD may be absent).
	DisableNetworkConnect bool
	// RenderEverywhere renders every network on every node; by default a
	// primary user-defined network is rendered only on the nodes where it
	// is used (internal/activity, docs/topology.md "Where a network is
	// rendered").
	RenderEverywhere bool
	// InactiveGracePeriod keeps a network on a node this long after its
	// last pod there is gone (0: it leaves at once).
	InactiveGracePeriod time.Duration
	// DNSServer resolves EgressFirewall dnsName rules, host:port ("": the
	// first nameserver of /etc/resolv.conf).
	DNSServer string
	// Layer2TopologyVersion is the topology the zone's node is to render
	// Layer2 primary networks in ("" is 2.0); 1.0 plays a release before
	// the transit router. The node moves to 2.0 only at a start with no
	// pod on such networks (internal/zone/l2version).
	Layer2TopologyVersion string
	// ResyncPeriod is how often every key is reconciled again, networks
	// whole, putting back what someone else changed in the zone's rows
	// (the controller learns only of its own inputs' events, and of a
	// database reconnect); 0 never. A resync with nothing changed writes
	// nothing.
	ResyncPeriod time.Duration
}

// DefaultResyncPeriod is the zone's --resync-period: a resync with nothing
// changed plans 1,000 networks × 20 nodes in about 0.5 s, × 100 nodes in
// 2.4 s (docs/performance.md, "Zone controller: restart and resync"), so
// five minutes keep it under 1% of a core.
const DefaultResyncPeriod = 5 * time.Minute

// Scheme returns the scheme a zone controller needs.
func Scheme() *runtime.Scheme { return kubeobj.NewScheme(nadv1.AddToScheme, v1.AddToScheme) }

// init fills the reconciler for the zone on connected database clients.
func (r *Reconciler) init(mgr manager.Manager, opts Options, nb, nbWriter, sb libovsdb.Client) error {
	s, err := NewSyncer(nb)
	if err != nil {
		return err
	}
	s.WithWriter(nbWriter)
	s.Observe(metrics.ObserveSync(opts.Zone))
	for _, c := range []prometheus.Collector{metrics.Connected(opts.Zone, "nb", nb.Connected), metrics.Connected(opts.Zone, "sb", sb.Connected),
		metrics.PodPorts(opts.Zone, r.podPortsByNetwork), metrics.NetworksRendered(opts.Zone, r.renderedCount)} {
		r.unregister = append(r.unregister, metrics.RegisterLatest(c))
	}
	r.Zone, r.Cluster, r.Client, r.NB, r.nbWriter, r.SB, r.Syncer = opts.Zone, opts.Cluster, mgr.GetClient(), nb, nbWriter, sb, s
	r.Gateway = opts.Gateway
	r.DisableNetworkConnect = opts.DisableNetworkConnect
	r.RenderEverywhere, r.grace.Period = opts.RenderEverywhere, opts.InactiveGracePeriod
	r.DNSServer = opts.DNSServer
	if r.DNSServer == "" {
		if server, err := dnsresolve.ServerFromResolvConf("/etc/resolv.conf"); err == nil {
			r.DNSServer = server
		} else {
			mgr.GetLogger().Info("no DNS server: EgressFirewall dnsName rules are not enforced", "reason", err.Error())
		}
	}
	r.gate = &northdgate.Gate{NB: nbWriter}
	r.Recorder = mgr.GetEventRecorderFor("ovn-udn-zone-" + opts.Zone)
	return nil
}

// SetupWithManager registers the zone's controller: one queue of typed
// keys, each feature's watches, and the host's own: Node events requeue
// what a node's change can alter (nodeevents.go); at start every key that
// no object's event brings (the features' initial keys, and those only
// the zone's Northbound still holds, deleted while the controller was
// away); after a database reconnect every key (requestResync); and the
// features' own requests (queue.go).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, workers int) error {
	if workers == 0 {
		workers = 4
	}
	r.featuresOnce.Do(r.setFeatures)
	b := builder.TypedControllerManagedBy[feature.Key](mgr).
		Named("zone-" + r.Zone).
		WithOptions(controller.TypedOptions[feature.Key]{MaxConcurrentReconciles: workers})
	for _, f := range r.features {
		f.Watch(b)
		if run, ok := f.(feature.Runner); ok {
			if err := mgr.Add(manager.RunnableFunc(run.Start)); err != nil {
				return err
			}
		}
	}
	allKeys := handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, _ client.Object) []feature.Key {
		keys, err := r.Keys(ctx)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "resync: listing every key failed; the next resync or event will retry", "zone", r.Zone)
			return nil
		}
		return keys
	})
	return b.
		Watches(&corev1.Node{}, r.nodeEvents(), builder.WithPredicates(nodeChanges)).
		WatchesRawSource(source.TypedChannel(r.resync, allKeys)).
		WatchesRawSource(source.TypedChannel(r.queue.keys, handler.TypedEnqueueRequestsFromMapFunc[feature.Key, feature.Key](func(_ context.Context, k feature.Key) []feature.Key {
			return []feature.Key{k}
		}))).
		WatchesRawSource(source.TypedChannel(r.queue.later, handler.TypedEnqueueRequestsFromMapFunc[keysFunc, feature.Key](func(ctx context.Context, f keysFunc) []feature.Key {
			return f(ctx)
		}))).
		WatchesRawSource(source.TypedFunc[feature.Key](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key]) error {
			keys, err := r.startKeys(ctx)
			for _, k := range keys {
				q.Add(k)
			}
			return err
		})).
		Complete(kubeobj.RetryConflicts(reconcile.TypedReconciler[feature.Key](r)))
}

// setFeatures lists the features and who reconciles each kind (once:
// featuresOnce).
func (r *Reconciler) setFeatures() {
	r.host = &feature.Host{Zone: r.Zone, Cluster: r.Cluster, Client: r.Client, Recorder: r.Recorder, Queue: r.queue,
		Northbound: r.NB, Southbound: r.SB, Syncer: r.Syncer, Gate: r.gate,
		DisableNetworkConnect: r.DisableNetworkConnect, RenderEverywhere: r.RenderEverywhere, Networks: networksView{r},
		DNSServer: r.DNSServer, PortsWritten: r.portsWritten}
	r.features = features(r, r.host)
	for _, f := range r.features {
		switch f := f.(type) {
		case *links.Feature:
			r.links = f
		case *connects.Feature:
			r.connects = f
		case *services.Feature:
			r.services = f
		case *policies.Feature:
			r.policies = f
		case *egressips.Feature:
			r.egressips = f
		case *egressfirewalls.Feature:
			r.firewalls = f
		case *egressqoses.Feature:
			r.qoses = f
		case *vms.Feature:
			r.vms = f
		}
	}
	r.byKind = map[feature.Kind]feature.Feature{}
	for _, f := range r.features {
		for _, k := range f.Kinds() {
			r.byKind[k] = f
		}
	}
}

// linksFeature is the links feature (connects read which networks it
// links; render its rows).
func (r *Reconciler) linksFeature() *links.Feature {
	r.featuresOnce.Do(r.setFeatures)
	return r.links
}

// portsWritten tells the features waiting for pods' ports that some were
// just inserted.
func (r *Reconciler) portsWritten(ctx context.Context) {
	for _, f := range r.features {
		if dep, ok := f.(feature.PortDependent); ok {
			dep.PortsWritten(ctx)
		}
	}
}

// startKeys are the keys the start reconciles apart from the objects'
// initial events: every feature's initial keys, and those whose rows only
// the zone's Northbound still holds.
func (r *Reconciler) startKeys(ctx context.Context) ([]feature.Key, error) {
	var keys []feature.Key
	for _, f := range r.features {
		if in, ok := f.(feature.Initializer); ok {
			keys = append(keys, in.InitialKeys()...)
		}
		for _, kind := range f.Kinds() {
			if kind == feature.KindChassis {
				continue // its rows are in the Southbound
			}
			owners, err := r.Syncer.Owners(kind.Prefix())
			if err != nil {
				return keys, err
			}
			for owner := range owners {
				if k, ok := feature.ParseKey(owner); ok {
					keys = append(keys, k)
				} else {
					ctrl.LoggerFrom(ctx).Info("rows whose owner is no key of this controller are left alone", "owner", owner, "zone", r.Zone)
				}
			}
		}
	}
	return keys, nil
}

// Close closes the reconciler's database connections.
func (r *Reconciler) Close() {
	for _, u := range r.unregister {
		u()
	}
	r.unregister = nil
	for _, c := range []libovsdb.Client{r.NB, r.nbWriter, r.SB} {
		if c != nil {
			c.Close()
		}
	}
}

// requestResync asks for every key to be reconciled (after a database
// reconnected: it may have come back different, even empty), networks
// whole: what they last wrote is not trusted.
func (r *Reconciler) requestResync() {
	r.whole.forgetAll()
	select {
	case r.resync <- event.GenericEvent{Object: &corev1.Node{ObjectMeta: objectMeta("resync")}}:
	default: // one is pending already
	}
}

// resyncEvery requests a resync every period until ctx ends.
func (r *Reconciler) resyncEvery(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.resyncs.Add(1)
			r.requestResync()
		}
	}
}

// Run runs a zone controller until ctx ends: its own manager (watching NADs
// and Nodes), its database clients, its reconciler.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	r, mgr, err := Build(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	return mgr.Start(ctx)
}

// Build connects to the zone's databases and returns the reconciler registered
// in a new manager, ready to Start.
func Build(ctx context.Context, cfg *rest.Config, opts Options) (*Reconciler, manager.Manager, error) {
	if opts.Gateway != nil {
		if err := opts.Gateway.Validate(); err != nil {
			return nil, nil, fmt.Errorf("zone %s: %w", opts.Zone, err)
		}
	}
	if err := opts.Cluster.Validate(); err != nil {
		return nil, nil, fmt.Errorf("invalid cluster configuration: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: kubeobj.ListenAddr(opts.MetricsAddr)},
		HealthProbeBindAddress: kubeobj.ListenAddr(opts.HealthAddr),
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("zone %s: creating manager: %w", opts.Zone, err)
	}
	if err := IndexNADs(ctx, mgr); err != nil {
		return nil, nil, err
	}
	resync := make(chan event.GenericEvent, 1)
	r := &Reconciler{resync: resync, queue: newKeyQueue()}
	nb, nbWriter, sb, err := Connect(ctx, opts, r.requestResync)
	if err != nil {
		return nil, nil, err
	}
	err = settleLayer2Version(ctx, cfg, nbWriter, opts)
	if err == nil {
		err = r.init(mgr, opts, nb, nbWriter, sb)
	}
	if err == nil {
		err = r.SetupWithManager(ctx, mgr, opts.Workers)
	}
	if err == nil && opts.ResyncPeriod > 0 {
		err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			r.resyncEvery(ctx, opts.ResyncPeriod)
			return nil
		}))
	}
	if err == nil {
		err = kubeobj.AddHealthChecks(mgr, connected("northbound", nb), connected("southbound", sb))
	}
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("zone %s: %w", opts.Zone, err)
	}
	return r, mgr, nil
}

// settleLayer2Version settles the node's Layer2 topology before any
// controller runs (l2version.Settle).
func settleLayer2Version(ctx context.Context, cfg *rest.Config, nb libovsdb.Client, opts Options) error {
	want := opts.Layer2TopologyVersion
	if want == "" {
		want = nodeinfo.Layer2TopologyV2
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return err
	}
	_, err = l2version.Settle(ctx, c, nb, opts.Zone, want, ctrl.LoggerFrom(ctx).WithValues("zone", opts.Zone))
	return err
}
