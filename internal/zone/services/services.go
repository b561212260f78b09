// Package services is the zone feature that writes each Service's load
// balancers (rows from internal/rows/services) on the networks of its
// namespace rendered on the zone's node, and on the switches of the
// networks connected to them for services; for an infrastructure Service,
// its isolation exception ACLs. One key per Service, one transaction per
// key; its load balancers go in rows the network feature owns (groups,
// routers, switches), declared in Shares.
package services

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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	svcrows "github.com/ovn-udn/ovn-udn/internal/rows/services"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// reconcileService writes one service's load balancers (and, for an
// infrastructure service, its isolation exception ACLs) in one transaction.
func (f *Feature) reconcileService(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("service", key.Namespace+"/"+key.Name, "zone", f.host.Zone)
	out, err := f.Desired(ctx, key.Namespace+"/"+key.Name)
	var held *feature.NotRendered
	if errors.As(err, &held) {
		logger.V(1).Info("service not rendered", "reason", held.Reason)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Syncer.Sync(ctx, key.String(), out.Rows, out.Contributions...)
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

// Desired returns the rows the service key ("<namespace>/<name>")
// should have in the zone and what it contributes to its network's rows:
// nothing when the service or its network is gone or the zone has no node, a *feature.NotRendered error when
// the rows must stay as they are (the namespace's network is undecided).
// `ovn-udn render` calls it too.
func (f *Feature) Desired(ctx context.Context, key string) (svcrows.Output, error) {
	ns, name, _ := strings.Cut(key, "/")
	svc := &corev1.Service{}
	if err := f.host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return svcrows.Output{}, nil
		}
		return svcrows.Output{}, err
	}
	sc, ok, err := f.host.Networks.Scope(ctx, ns)
	if err != nil || !ok {
		return svcrows.Output{}, err // no network, no node: nothing to serve
	}
	// Only the networks rendered here, and nothing without the home
	// network (its load balancer group): no pod here uses the service.
	home0 := sc.Home().Network.Name
	if sc, err = f.host.Networks.RenderedHere(ctx, sc); err != nil || len(sc.Nets) == 0 || sc.Home().Network.Name != home0 {
		return svcrows.Output{}, err
	}
	// The load balancers live on the namespace's home network; with several
	// primary networks they also go on the others' switches, and every
	// network's mirrored slices give backends (each pod's address on the
	// network it is on; the links between the networks carry the traffic).
	home := sc.Home().Network
	var eps []discoveryv1.EndpointSlice
	for _, n := range sc.Nets {
		s, err := mirror.ForService(ctx, f.host.Client, svc, n.Network.Name)
		if err != nil {
			return svcrows.Output{}, err
		}
		eps = append(eps, s...)
	}
	peers, err := f.host.Networks.ServicePeers(ctx, home)
	if err != nil {
		return svcrows.Output{}, err
	}
	if peers, err = f.host.Networks.PeersHere(ctx, peers, sc.Local.Name); err != nil {
		return svcrows.Output{}, err
	}
	for _, n := range sc.Nets[1:] {
		if !slices.ContainsFunc(peers, func(p topology.Network) bool { return p.Name == n.Network.Name }) {
			peers = append(peers, n.Network)
		}
	}
	return svcrows.Render(svcrows.Input{
		Service: svc, Network: home, Slices: eps, Node: sc.Local.Name, HairpinIPs: f.host.Cluster.ServiceHairpinIPs(),
		NodeIPs: gatewayAddrs(sc.Local), Infrastructure: f.host.Cluster.IsInfrastructureService(ns, name), Peers: peers,
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

// serviceKeys returns the reconcile keys of every service, and of services
// that still hold rows in the zone's Northbound.
func (f *Feature) serviceKeys(ctx context.Context) ([]feature.Key, error) {
	var list corev1.ServiceList
	if err := f.host.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	keys := make([]feature.Key, 0, len(list.Items))
	for _, s := range list.Items {
		keys = append(keys, feature.ServiceKey(s.Namespace, s.Name))
	}
	return f.host.WithOwners(keys, feature.KindService)
}

// namespaceServiceKeys returns the keys of the services of a namespace.
func (f *Feature) namespaceServiceKeys(ctx context.Context, namespace string) []feature.Key {
	var list corev1.ServiceList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
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
func (f *Feature) connectServiceKeys(ctx context.Context, old, cur *v1.ClusterNetworkConnect) []feature.Key {
	if connect.View(old, v1.ClusterIPServiceNetwork) == connect.View(cur, v1.ClusterIPServiceNetwork) {
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
	byID, err := f.host.Networks.NetworksByID(ctx)
	if err != nil {
		return nil
	}
	var out []feature.Key
	for id := range ids {
		name, ok := byID[id]
		if !ok {
			continue
		}
		namespaces, _ := f.host.Networks.NetworkNamespaces(ctx, name)
		for _, ns := range namespaces {
			out = append(out, f.namespaceServiceKeys(ctx, ns)...)
		}
	}
	return out
}

// replanServicePeers asks for the services of the networks connected to a
// network for services to be planned again: their load balancers go on the
// network's pod switch, which may have just been created.
func (f *Feature) replanServicePeers(ctx context.Context, network string) {
	n, exists, err := f.host.Networks.Network(ctx, network)
	if err != nil || !exists {
		return
	}
	peers, err := f.host.Networks.ServicePeers(ctx, n)
	if err != nil {
		return
	}
	for _, p := range peers {
		f.replanNamespaces(p.Name)
	}
}

// replanNamespaces asks for the services of a network to be planned again
// (rows they contribute to, such as the network's load balancer group, may
// have just been created): those of the namespaces with the network's NADs,
// every namespace for the default network (namespaceServiceKeys("") lists
// all).
func (f *Feature) replanNamespaces(network string) {
	f.host.Queue.Later(func(ctx context.Context) []feature.Key {
		namespaces := []string{""}
		if network != nodeinfo.DefaultNetwork {
			var err error
			if namespaces, err = f.host.Networks.NetworkNamespaces(ctx, network); err != nil {
				return nil
			}
		}
		var out []feature.Key
		for _, ns := range namespaces {
			out = append(out, f.namespaceServiceKeys(ctx, ns)...)
		}
		return out
	})
}

// Feature writes each Service's load balancers on the networks of its
// namespace (and of the networks connected to them for services).
type Feature struct{ host *feature.Host }

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "services" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindService} }

// Reconcile implements feature.Feature.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.reconcileService(ctx, key)
}

// Shares implements feature.Sharer: load balancers go in their networks'
// groups, on the networks' routers and, for connected networks, on the
// peers' switches; the ACLs of services in the default network's isolation
// port group.
func (*Feature) Shares() []feature.Share {
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
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	b.Watches(&corev1.Service{}, feature.OwnKey(func(o client.Object) feature.Key { return feature.ServiceKey(o.GetNamespace(), o.GetName()) }))
	b.Watches(&discoveryv1.EndpointSlice{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(_ context.Context, o client.Object) []feature.Key {
		if k, ok := sliceService(o.(*discoveryv1.EndpointSlice)); ok {
			return []feature.Key{k}
		}
		return nil
	}))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return f.namespaceServiceKeys(ctx, o.GetNamespace())
	}))
	b.Watches(&corev1.Namespace{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return f.namespaceServiceKeys(ctx, o.GetName())
	}), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if !f.host.DisableNetworkConnect {
		b.Watches(&v1.ClusterNetworkConnect{}, feature.KeysBeforeAfter(f.connectServiceKeys))
	}
}

// Keys are every Service, and those only the zone's Northbound still
// remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	return f.serviceKeys(ctx)
}

// NetworkChanged implements feature.NetworkDependent: the network's load
// balancer group and switches may have just been made: its namespaces'
// services, and those of the networks connected to it for services, go on
// them.
func (f *Feature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if c.RowsChanged {
		f.replanNamespaces(c.Network)
		f.replanServicePeers(ctx, c.Network)
	}
}
