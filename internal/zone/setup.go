package zone

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

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
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/northdgate"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/podnet"
)

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

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
}

// Scheme returns the scheme a zone controller needs.
func Scheme() *runtime.Scheme { return kubeobj.NewScheme(nadv1.AddToScheme, v1.AddToScheme) }

// Connect opens the zone's NB and SB clients (with the indexes and monitors
// the controller needs) and a write-only NB connection, retrying with backoff
// until ctx ends. They reconnect by themselves later, calling onReconnect each
// time.
func Connect(ctx context.Context, opts Options, onReconnect func()) (nb, nbWriter, sb libovsdb.Client, err error) {
	counted := func(db string) func() {
		return func() {
			metrics.Reconnects.WithLabelValues(opts.Zone, db).Inc()
			onReconnect()
		}
	}
	log := ctrl.LoggerFrom(ctx).WithValues("zone", opts.Zone)
	nbOpts := ovsdb.ClientOptions{Endpoint: opts.NB, Logger: opts.OVSDBLogger, Log: log.WithValues("database", "nb"), Reconnect: true, OnReconnect: counted("nb"),
		Indexes: ovsdbsync.Indexes(NBTableNames...), Tables: NBTables, OwnMonitor: true, Views: NBTableNames,
		Unmonitored: ovsdbsync.OthersColumns()}
	writerOpts := ovsdb.ClientOptions{Endpoint: opts.NB, Logger: opts.OVSDBLogger, Reconnect: true, NoMonitor: true, OwnTransact: true}
	sbOpts := ovsdb.ClientOptions{Endpoint: opts.SB, Logger: opts.OVSDBLogger, Log: log.WithValues("database", "sb"), Reconnect: true, OnReconnect: counted("sb"), Tables: sbTables,
		OwnMonitor: true}
	clients, err := connectAll(ctx, opts.Zone, 200*time.Millisecond,
		func(ctx context.Context) (libovsdb.Client, error) { return ovsdb.ConnectNB(ctx, nbOpts) },
		func(ctx context.Context) (libovsdb.Client, error) { return ovsdb.ConnectNB(ctx, writerOpts) },
		func(ctx context.Context) (libovsdb.Client, error) { return ovsdb.ConnectSB(ctx, sbOpts) })
	if err != nil {
		return nil, nil, nil, err
	}
	return clients[0], clients[1], clients[2], nil
}

// connectAll makes every connection, retrying the ones that fail (backing
// off from first up to 10 s) until all are up or ctx ends; then it closes
// those it made.
func connectAll(ctx context.Context, zone string, first time.Duration, dials ...func(context.Context) (libovsdb.Client, error)) ([]libovsdb.Client, error) {
	clients := make([]libovsdb.Client, len(dials))
	backoff := first
	for {
		var err error // this round's first failure only: a stale one would stop the retries
		for i, dial := range dials {
			if clients[i] != nil {
				continue
			}
			if clients[i], err = dial(ctx); err != nil {
				clients[i] = nil
				break
			}
		}
		if err == nil {
			return clients, nil
		}
		ctrl.LoggerFrom(ctx).Info("zone databases unreachable, retrying", "zone", zone, "error", err.Error(), "in", backoff)
		select {
		case <-ctx.Done():
			for _, c := range clients {
				if c != nil {
					c.Close()
				}
			}
			return nil, fmt.Errorf("connecting to zone %s databases: %w (last error: %v)", zone, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

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
	r.gate = &northdgate.Gate{NB: nbWriter}
	r.Recorder = mgr.GetEventRecorderFor("ovn-udn-zone-" + opts.Zone)
	return nil
}

// Indexes are the cache indexes the reconciler lists with: NADs by network
// name, pods by node and by attachment key, NetworkPolicies by peer. A manager's cache (IndexNADs) or
// a fake client (render) must have them.
func Indexes() []kubeobj.Index {
	return []kubeobj.Index{
		{Object: &nadv1.NetworkAttachmentDefinition{}, Field: networkNameIndex, Extract: func(o client.Object) []string {
			if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
				return []string{name}
			}
			return nil
		}},
		{Object: &corev1.Pod{}, Field: podNodeIndex, Extract: func(o client.Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}},
		{Object: &networkingv1.NetworkPolicy{}, Field: policyPeersIndex, Extract: policyPeerKeys},
		{Object: &corev1.Pod{}, Field: podKeysIndex, Extract: func(o client.Object) []string {
			nets, err := podnet.ParsePod(o)
			if err != nil {
				return nil
			}
			out := make([]string, 0, len(nets))
			for k := range nets {
				out = append(out, k)
			}
			return out
		}},
		{Object: &corev1.Pod{}, Field: podPlacementIndex, Extract: placementKeys},
	}
}

// IndexNADs registers Indexes in the manager's cache.
func IndexNADs(ctx context.Context, mgr manager.Manager) error {
	return kubeobj.AddIndexes(ctx, mgr.GetFieldIndexer(), Indexes()...)
}

// attachmentChanged reports whether a pod update changes its attachments or
// ports (what its own key and its networks render).
func attachmentChanged(o, n *corev1.Pod) bool {
	for _, k := range []string{podnet.Annotation, netconf.NetworksAnnotation, podnet.PrimaryIPAMClaimAnnotation} {
		if o.Annotations[k] != n.Annotations[k] {
			return true
		}
	}
	return o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase
}

// podChanges passes pod events that change a pod's attachments or ports, or
// its labels (which policies select it).
var podChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return attachmentChanged(o, n) || !maps.Equal(o.Labels, n.Labels)
	},
}

// podEvents requeues a pod (its own attachments and ports) unless only its
// labels changed, and the policy keys it concerns before and after
// (podPolicyKeys).
func (r *Reconciler) podEvents() handler.TypedEventHandler[client.Object, Key] {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], attachments bool, objs ...client.Object) {
		for _, o := range objs {
			pod, ok := o.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, k := range r.podPolicyKeys(ctx, pod) {
				q.Add(k)
			}
			if !attachments {
				continue
			}
			// Its own key: its attachments, and its ports (its own rows,
			// podports.go); its networks are not planned again.
			if pod.Spec.NodeName != "" {
				q.Add(PodKey(pod.Namespace, pod.Name))
			}
		}
	}
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			if pod, ok := e.Object.(*corev1.Pod); ok {
				r.sawPod(ctx, pod, false)
				// Its node may start using its networks (activity.go).
				for _, k := range r.activityKeys(ctx, nil, pod) {
					q.Add(k)
				}
			}
			enqueue(ctx, q, true, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			o, ok1 := e.ObjectOld.(*corev1.Pod)
			n, ok2 := e.ObjectNew.(*corev1.Pod)
			if ok2 {
				r.sawPod(ctx, n, false)
			}
			if ok1 && ok2 {
				for _, k := range r.activityKeys(ctx, o, n) {
					q.Add(k)
				}
			}
			enqueue(ctx, q, !ok1 || !ok2 || attachmentChanged(o, n), e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, true, e.Object)
			if pod, ok := e.Object.(*corev1.Pod); ok {
				r.sawPod(ctx, pod, true)
				// It may have been its node's last pod of its networks.
				for _, k := range r.activityKeys(ctx, pod, nil) {
					q.Add(k)
				}
				// It freed an address on one of its namespace's primary
				// networks: pods waiting for room may be placed now.
				for _, k := range r.unplacedPods(ctx, pod) {
					q.Add(k)
				}
			}
		},
	}
}

// beforeAfter is an event handler calling enqueue with the object before
// and after each event (nil before a create, after a delete).
func beforeAfter(enqueue func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], before, after client.Object)) handler.TypedEventHandler[client.Object, Key] {
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, nil, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.Object, nil)
		},
	}
}

// serviceEvents requeues a Service, and its namespace's networks when it
// starts or stops being served on every node (serviceActivityKeys).
func (r *Reconciler) serviceEvents() handler.TypedEventHandler[client.Object, Key] {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], old, cur client.Object) {
		o, _ := old.(*corev1.Service)
		c, _ := cur.(*corev1.Service)
		for _, x := range []*corev1.Service{o, c} {
			if x != nil {
				q.Add(ServiceKey(x.Namespace, x.Name))
			}
		}
		for _, k := range r.serviceActivityKeys(ctx, o, c) {
			q.Add(k)
		}
	}
	return beforeAfter(enqueue)
}

// connectEvents requeues a ClusterNetworkConnect, the services of its
// networks when what services see of it changes (connectServiceKeys), and
// every NetworkPolicy key when what policies see of it changes (podView).
func (r *Reconciler) connectEvents() handler.TypedEventHandler[client.Object, Key] {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], old, cur client.Object) {
		o, _ := old.(*v1.ClusterNetworkConnect)
		c, _ := cur.(*v1.ClusterNetworkConnect)
		for _, x := range []*v1.ClusterNetworkConnect{o, c} {
			if x != nil {
				q.Add(ConnectKey(x.Name))
			}
		}
		for _, k := range r.connectServiceKeys(ctx, o, c) {
			q.Add(k)
		}
		// Its networks are used where their peers' pods run (activity.go).
		for _, k := range r.connectActivityKeys(ctx, o, c) {
			q.Add(k)
		}
		if podView(o) != podView(c) {
			// NetworkPolicy peers of the connected networks now select
			// (or no longer select) each other's pods.
			for _, k := range r.namespacePolicyKeys(ctx, "") {
				q.Add(k)
			}
		}
	}
	return beforeAfter(enqueue)
}

// policyEvents requeues what a NetworkPolicy concerns, before and after the
// change (policyKeysOf).
func (r *Reconciler) policyEvents() handler.TypedEventHandler[client.Object, Key] {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key], objs ...client.Object) {
		for _, o := range objs {
			if pol, ok := o.(*networkingv1.NetworkPolicy); ok {
				for _, k := range r.policyKeysOf(ctx, pol) {
					q.Add(k)
				}
			}
		}
	}
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[Key]) {
			enqueue(ctx, q, e.Object)
			if pol, ok := e.Object.(*networkingv1.NetworkPolicy); ok {
				r.policies.forget(pol)
			}
		},
	}
}

// networkOfKey maps an attachment key to its network name.
func (r *Reconciler) networkOfKey(ctx context.Context, key string) (string, bool) {
	if key == podnet.DefaultKey {
		return nodeinfo.DefaultNetwork, true
	}
	ns, name, _ := strings.Cut(key, "/")
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		return "", false
	}
	return netconf.NetworkName(nad.Spec.Config)
}

// nodeChanges passes Node events that can change a zone's rendering.
var nodeChanges = predicate.Funcs{
	// A Node of the informer's initial list requeues nothing: at start
	// every key comes from its own object's initial event (a network's
	// NAD, a pod, a service...) or from the database's owners, and each
	// Node requeueing every key again, one after the other, made a
	// restart plan every key once per node (20 times at 1000 × 20).
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
	UpdateFunc: func(e event.UpdateEvent) bool {
		for _, k := range renderedAnnotations {
			if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
				return true
			}
		}
		return false
	},
}

// SetupWithManager registers the controller: NAD events requeue their network,
// Node events what the node's change can alter (nodeEvents: every key for
// the zone's own node; for another, the networks that render it, the
// chassis and its pods), and at start (and after a database reconnect)
// every key, including networks that only the database still remembers.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager, workers int) error {
	if workers == 0 {
		workers = 4
	}
	allKeys := handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, _ client.Object) []Key {
		keys, err := r.Keys(ctx)
		if err != nil {
			return nil
		}
		return keys
	})
	b := builder.TypedControllerManagedBy[Key](mgr)
	if !r.DisableNetworkConnect {
		b = b.Watches(&v1.ClusterNetworkConnect{}, r.connectEvents())
	}
	return b.
		Named("zone-"+r.Zone).
		WithOptions(controller.TypedOptions[Key]{MaxConcurrentReconciles: workers}).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
			var out []Key
			if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
				out = append(out, NetworkKey(name))
			}
			// The namespace's services and policies may change network.
			for _, k := range r.namespaceServiceKeys(ctx, o.GetNamespace()) {
				out = append(out, k)
			}
			for _, k := range r.namespacePolicyKeys(ctx, o.GetNamespace()) {
				out = append(out, k)
			}
			// Its default-deny groups and their peers on this NAD's network,
			// which they may be leaving.
			out = append(out, DenyKey(o.GetNamespace()))
			if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
				for _, k := range r.namespacePeerKeys(ctx, o.GetNamespace(), name) {
					out = append(out, k)
				}
			}
			// Connects of the network render its ports and routes; links
			// between the namespace's primary networks come and go with
			// its primary NADs.
			for _, k := range r.connectKeys(ctx) {
				out = append(out, k)
			}
			if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
				for _, k := range r.networkLinkKeys(ctx, name) {
					out = append(out, k)
				}
			}
			// Pods of the namespace may wait for this network.
			var pods corev1.PodList
			if err := r.Client.List(ctx, &pods, client.InNamespace(o.GetNamespace())); err == nil {
				for _, p := range pods.Items {
					if p.Spec.NodeName != "" {
						out = append(out, PodKey(p.Namespace, p.Name))
					}
				}
			}
			return out
		})).
		Watches(&corev1.Node{}, r.nodeEvents(), builder.WithPredicates(nodeChanges)).
		Watches(&corev1.Pod{}, r.podEvents(), builder.WithPredicates(podChanges)).
		Watches(&corev1.Service{}, r.serviceEvents()).
		Watches(&discoveryv1.EndpointSlice{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(_ context.Context, o client.Object) []Key {
			if k, ok := sliceService(o.(*discoveryv1.EndpointSlice)); ok {
				return []Key{k}
			}
			return nil
		})).
		Watches(&networkingv1.NetworkPolicy{}, r.policyEvents()).
		Watches(&corev1.Namespace{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
			var out []Key
			for _, k := range r.namespaceServiceKeys(ctx, o.GetName()) {
				out = append(out, k)
			}
			// Namespace selectors of policies may select it, or not any more;
			// its default-deny groups stay until it goes.
			for _, k := range r.namespaceSelectorKeys(ctx) {
				out = append(out, k)
			}
			out = append(out, DenyKey(o.GetName()))
			return out
		}), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WatchesRawSource(source.TypedChannel(r.resync, allKeys)).
		WatchesRawSource(source.TypedChannel(r.namespaceEvents, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
			var out []Key
			for _, k := range r.namespaceServiceKeys(ctx, o.GetName()) {
				out = append(out, k)
			}
			return out
		}))).
		WatchesRawSource(source.TypedChannel(r.policyNetworkEvents, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
			var out []Key
			for _, k := range r.networkPolicyKeys(ctx, o.GetName()) {
				out = append(out, k)
			}
			return out
		}))).
		WatchesRawSource(source.TypedChannel(r.podNetworkEvents, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
			var out []Key
			for _, k := range r.podsOfNetwork(ctx, o.GetName()) {
				out = append(out, k)
			}
			return out
		}))).
		WatchesRawSource(source.TypedChannel(r.keyEvents, handler.TypedEnqueueRequestsFromMapFunc[Key, Key](func(_ context.Context, k Key) []Key {
			return []Key{k}
		}))).
		WatchesRawSource(source.TypedFunc[Key](func(ctx context.Context, q workqueue.TypedRateLimitingInterface[Key]) error {
			// Networks, services, policies (and their default denies and
			// peers), connects, links between primary networks and pods
			// deleted while the controller was away still hold rows.
			for _, prefix := range []string{networkPrefix, servicePrefix, policyPrefix, denyPrefix, peerPrefix, connectPrefix, linkPrefix, podPrefix} {
				owners, err := r.Syncer.Owners(prefix)
				if err != nil {
					return err
				}
				for owner := range owners {
					if k, ok := ParseKey(owner); ok {
						q.Add(k)
					} else {
						ctrl.LoggerFrom(ctx).Info("rows whose owner is no key of this controller are left alone", "owner", owner, "zone", r.Zone)
					}
				}
			}
			q.Add(ChassisKey())
			q.Add(NetworkKey(nodeinfo.DefaultNetwork))
			return nil
		})).
		Complete(kubeobj.RetryConflicts(reconcile.TypedReconciler[Key](r)))
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
	r := &Reconciler{resync: resync, namespaceEvents: make(chan event.GenericEvent, 256), keyEvents: make(chan event.TypedGenericEvent[Key], 1024),
		podNetworkEvents: make(chan event.GenericEvent, 256), policyNetworkEvents: make(chan event.GenericEvent, 256)}
	nb, nbWriter, sb, err := Connect(ctx, opts, r.requestResync)
	if err != nil {
		return nil, nil, err
	}
	err = r.init(mgr, opts, nb, nbWriter, sb)
	if err == nil {
		err = r.SetupWithManager(ctx, mgr, opts.Workers)
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

// connected is a readiness check that a database client is connected.
func connected(name string, c libovsdb.Client) kubeobj.HealthCheck {
	return kubeobj.HealthCheck{Name: name, Check: func() error {
		if !c.Connected() {
			return fmt.Errorf("%s database not connected", name)
		}
		return nil
	}}
}
