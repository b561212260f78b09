package zone

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/connect"
	"github.com/ovn-udn/ovn-udn/internal/epslicemirror/mirror"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/podnet"
	"github.com/ovn-udn/ovn-udn/internal/services"
	"github.com/ovn-udn/ovn-udn/internal/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// reconcileService writes one service's load balancers (and, for an
// infrastructure service, its isolation exception ACLs) in one transaction.
func (r *Reconciler) reconcileService(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("service", key.Namespace+"/"+key.Name, "zone", r.Zone)
	out, err := r.DesiredService(ctx, key.Namespace+"/"+key.Name)
	var held *NotRendered
	if errors.As(err, &held) {
		logger.V(1).Info("service not rendered", "reason", held.Reason)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := r.Syncer.Sync(ctx, key.String(), out.Rows, out.Contributions...)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("service %s/%s: %w", key.Namespace, key.Name, err)
	}
	if !p.Empty() {
		logger.Info("synced service", "inserted", p.Inserted, "updated", p.Updated, "deleted", p.Deleted, "added", p.Added, "removed", p.Removed)
	}
	if len(p.Missing) > 0 {
		// The network's rows come (reconcileNetwork replans its services
		// when it creates them); meanwhile retry with the queue's backoff.
		logger.V(1).Info("service waits for its network's rows", "missing", p.Missing)
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, nil
}

// DesiredService returns the rows the service key ("<namespace>/<name>")
// should have in the zone and what it contributes to its network's rows:
// nothing when the service or its network is gone or the zone has no node, a *NotRendered error when
// the rows must stay as they are (the namespace's network is undecided).
// `ovn-udn render` calls it too.
func (r *Reconciler) DesiredService(ctx context.Context, key string) (services.Output, error) {
	ns, name, _ := strings.Cut(key, "/")
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return services.Output{}, nil
		}
		return services.Output{}, err
	}
	sc, ok, err := r.scope(ctx, ns)
	if err != nil || !ok {
		return services.Output{}, err // no network, no node: nothing to serve
	}
	// Only the networks rendered here, and nothing without the home
	// network (its load balancer group): no pod here uses the service.
	home0 := sc.home().network.Name
	if sc, err = r.renderedHere(ctx, sc); err != nil || len(sc.nets) == 0 || sc.home().network.Name != home0 {
		return services.Output{}, err
	}
	// The load balancers live on the namespace's home network; with several
	// primary networks they also go on the others' switches, and every
	// network's mirrored slices give backends (each pod's address on the
	// network it is on; the links between the networks carry the traffic).
	home := sc.home().network
	var eps []discoveryv1.EndpointSlice
	for _, n := range sc.nets {
		s, err := mirror.ForService(ctx, r.Client, svc, n.network.Name)
		if err != nil {
			return services.Output{}, err
		}
		eps = append(eps, s...)
	}
	peers, err := r.servicePeers(ctx, home)
	if err != nil {
		return services.Output{}, err
	}
	if peers, err = r.peersHere(ctx, peers, sc.local.Name); err != nil {
		return services.Output{}, err
	}
	for _, n := range sc.nets[1:] {
		if !slices.ContainsFunc(peers, func(p topology.Network) bool { return p.Name == n.network.Name }) {
			peers = append(peers, n.network)
		}
	}
	return services.Render(services.Input{
		Service: svc, Network: home, Slices: eps, Node: sc.local.Name, HairpinIPs: r.Cluster.ServiceHairpinIPs(),
		NodeIPs: gatewayAddrs(sc.local), Infrastructure: r.Cluster.IsInfrastructureService(ns, name), Peers: peers,
	}), nil
}

// gatewayAddrs returns a node's external addresses on every uplink (its
// gateway routers'; node ports answer on each), none when it publishes no
// gateway.
func gatewayAddrs(n nodeinfo.Info) []netip.Addr {
	if n.Gateway == nil {
		return nil
	}
	return n.Gateway.Addresses()
}

// nsScope is what a namespace's Services and policies are rendered with in
// the zone: its primary networks and the zone's node.
type nsScope struct {
	// nets are the namespace's primary networks, oldest first (one but for
	// a namespace with several, OKEP-5252); the first is its home: the
	// network its Services' load balancers and node ports belong to.
	nets  []scopedNetwork
	local nodeinfo.Info // the zone's node
}

// scopedNetwork is one primary network of a namespace.
type scopedNetwork struct {
	primary podnet.Primary
	network topology.Network
}

// home is the namespace's first primary network.
func (s nsScope) home() scopedNetwork { return s.nets[0] }

// scope returns the namespace's networks and the zone's node; ok is false
// when there is nothing to render (no network, no node).
func (r *Reconciler) scope(ctx context.Context, namespace string) (nsScope, bool, error) {
	primaries, ok, err := r.namespacePrimaries(ctx, namespace)
	if err != nil {
		return nsScope{}, false, err
	}
	if !ok {
		return nsScope{}, false, &NotRendered{Reason: fmt.Sprintf("namespace %s has no usable primary network yet", namespace)}
	}
	var sc nsScope
	for _, primary := range primaries {
		n, exists, err := r.network(ctx, primary.Network)
		if err != nil {
			return nsScope{}, false, &NotRendered{Reason: err.Error()}
		}
		if exists && n.IsPrimary() {
			sc.nets = append(sc.nets, scopedNetwork{primary: primary, network: n})
		}
	}
	if len(sc.nets) == 0 {
		return nsScope{}, false, nil
	}
	local, ok, err := r.usableLocalNode(ctx)
	if err != nil || !ok {
		return nsScope{}, false, err
	}
	sc.local = local
	return sc, true, nil
}

// namespacePrimaries returns a namespace's primary networks (podnet's rule,
// oldest first; none for a namespace labelled for a network that has no
// NAD, and for a namespace that is gone); ok is false while they cannot be
// told.
func (r *Reconciler) namespacePrimaries(ctx context.Context, namespace string) ([]podnet.Primary, bool, error) {
	nsObj := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, nsObj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, true, nil // no namespace, no network: nothing to serve
		}
		return nil, false, err
	}
	nads, err := podnet.NamespaceNADs(ctx, r.Client, namespace)
	if err != nil {
		return nil, false, err
	}
	p, ok := podnet.NamespacePrimaries(nsObj, nads, v1.PrimaryNetworkLabel)
	return p, ok, nil
}

// primaryNetworks returns the names of a namespace's primary networks
// (namespacePrimaries).
func (r *Reconciler) primaryNetworks(ctx context.Context, namespace string) ([]string, bool, error) {
	prims, ok, err := r.namespacePrimaries(ctx, namespace)
	var out []string
	for _, p := range prims {
		out = append(out, p.Network)
	}
	return out, ok, err
}

// infrastructureRoutes returns host routes to the cluster IPs of the
// infrastructure services that exist (pods with a primary user-defined
// network reach them through their default-network interface).
func (r *Reconciler) infrastructureRoutes(ctx context.Context) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range r.Cluster.InfrastructureServices {
		ns, name, _ := strings.Cut(s, "/")
		svc := &corev1.Service{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, netip.PrefixFrom(a, a.BitLen()))
			}
		}
	}
	return out, nil
}

// serviceRoutes returns an attachment's routes to addresses of the service
// ranges (its infrastructure service routes).
func serviceRoutes(a podnet.Attachment, serviceCIDRs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, rt := range a.Routes {
		d, err := netip.ParsePrefix(rt.Dest)
		if err != nil {
			continue
		}
		for _, c := range serviceCIDRs {
			if c.Contains(d.Addr()) && d.Bits() >= c.Bits() {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// serviceKeys returns the reconcile keys of every service, and of services
// that still hold rows in the zone's Northbound.
func (r *Reconciler) serviceKeys(ctx context.Context) ([]feature.Key, error) {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	keys := make([]feature.Key, 0, len(list.Items))
	for _, s := range list.Items {
		keys = append(keys, feature.ServiceKey(s.Namespace, s.Name))
	}
	return r.host.WithOwners(keys, feature.KindService)
}

// namespaceServiceKeys returns the keys of the services of a namespace.
func (r *Reconciler) namespaceServiceKeys(ctx context.Context, namespace string) []feature.Key {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	out := make([]feature.Key, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, feature.ServiceKey(s.Namespace, s.Name))
	}
	return out
}

// sliceService returns the service key an EndpointSlice serves (its default
// label, or the mirrored slices' label).
func sliceService(s *discoveryv1.EndpointSlice) (feature.Key, bool) {
	for _, l := range []string{discoveryv1.LabelServiceName, mirror.LabelServiceName} {
		if name := s.Labels[l]; name != "" {
			return feature.ServiceKey(s.Namespace, name), true
		}
	}
	return feature.Key{}, false
}

// connectServiceKeys returns the keys of the services of the networks of a
// connect, before and after a change, when the change alters what services
// see of it (serviceView): their load balancers join or leave the peers'
// switches.
func (r *Reconciler) connectServiceKeys(ctx context.Context, old, cur *v1.ClusterNetworkConnect) []feature.Key {
	if serviceView(old) == serviceView(cur) {
		return nil
	}
	ids := map[int]bool{}
	for _, c := range []*v1.ClusterNetworkConnect{old, cur} {
		if c == nil {
			continue
		}
		if a, ok, err := connect.ParseAllocation(c.Annotations); ok && err == nil {
			for _, k := range a.Subnets.Keys() {
				ids[k.ID] = true
			}
		}
	}
	byID, err := r.networksByID(ctx)
	if err != nil {
		return nil
	}
	var out []feature.Key
	for id := range ids {
		name, ok := byID[id]
		if !ok {
			continue
		}
		namespaces, _ := r.networkNamespaces(ctx, name)
		for _, ns := range namespaces {
			out = append(out, r.namespaceServiceKeys(ctx, ns)...)
		}
	}
	return out
}

// replanServicePeers asks for the services of the networks connected to a
// network for services to be planned again: their load balancers go on the
// network's pod switch, which may have just been created.
func (r *Reconciler) replanServicePeers(ctx context.Context, network string) {
	n, exists, err := r.network(ctx, network)
	if err != nil || !exists {
		return
	}
	peers, err := r.servicePeers(ctx, n)
	if err != nil {
		return
	}
	for _, p := range peers {
		r.replanNamespaces(p.Name)
	}
}

// servicesFeature writes each Service's load balancers on the networks of
// its namespace (and of the networks connected to them for services).
type servicesFeature struct{ r *Reconciler }

func (servicesFeature) Name() string          { return "services" }
func (servicesFeature) Kinds() []feature.Kind { return []feature.Kind{feature.KindService} }

func (f servicesFeature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.r.reconcileService(ctx, key)
}

// Shares implements feature.Sharer: load balancers go in their networks'
// groups, on the networks' routers and, for connected networks, on the
// peers' switches; the ACLs of services in the default network's isolation
// port group.
func (servicesFeature) Shares() []feature.Share {
	return []feature.Share{
		{Table: &nbdb.LoadBalancerGroup{}, Column: "load_balancer"},
		{Table: &nbdb.PortGroup{}, Column: "acls"},
		{Table: &nbdb.LogicalRouter{}, Column: "load_balancer"},
		{Table: &nbdb.LogicalSwitch{}, Column: "load_balancer"},
	}
}

// Watch implements feature.Feature: a Service and its EndpointSlices (and
// their mirrors) requeue it; a NAD or a namespace's labels the namespace's
// Services (which network they render on); a connect those of its networks
// when what services see of it changes.
func (f servicesFeature) Watch(b *builder.TypedBuilder[feature.Key]) {
	r := f.r
	b.Watches(&corev1.Service{}, feature.BeforeAfter(func(_ context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object) {
		for _, o := range []client.Object{before, after} {
			if o != nil {
				q.Add(feature.ServiceKey(o.GetNamespace(), o.GetName()))
			}
		}
	}))
	b.Watches(&discoveryv1.EndpointSlice{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(_ context.Context, o client.Object) []feature.Key {
		if k, ok := sliceService(o.(*discoveryv1.EndpointSlice)); ok {
			return []feature.Key{k}
		}
		return nil
	}))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return r.namespaceServiceKeys(ctx, o.GetNamespace())
	}))
	b.Watches(&corev1.Namespace{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return r.namespaceServiceKeys(ctx, o.GetName())
	}), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if !r.DisableNetworkConnect {
		b.Watches(&v1.ClusterNetworkConnect{}, feature.KeysBeforeAfter(r.connectServiceKeys))
	}
}

// Keys are every Service, and those only the zone's Northbound still
// remembers.
func (f servicesFeature) Keys(ctx context.Context) ([]feature.Key, error) {
	return f.r.serviceKeys(ctx)
}

// NetworkChanged implements feature.NetworkDependent: the network's load
// balancer group and switches may have just been made: its namespaces'
// services, and those of the networks connected to it for services, go on
// them.
func (f servicesFeature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if c.RowsChanged {
		f.r.replanNamespaces(c.Network)
		f.r.replanServicePeers(ctx, c.Network)
	}
}
