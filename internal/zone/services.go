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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/epslicemirror/mirror"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/podnet"
	"github.com/ovn-udn/ovn-udn/internal/services"
	"github.com/ovn-udn/ovn-udn/internal/topology"
)

// reconcileService writes one service's load balancers (and, for an
// infrastructure service, its isolation exception ACLs) in one transaction.
func (r *Reconciler) reconcileService(ctx context.Context, key Key) (ctrl.Result, error) {
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
func (r *Reconciler) serviceKeys(ctx context.Context) ([]Key, error) {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	keys := make([]Key, 0, len(list.Items))
	for _, s := range list.Items {
		keys = append(keys, ServiceKey(s.Namespace, s.Name))
	}
	return r.withOwners(keys, servicePrefix)
}

// withOwners returns keys, and the keys of the owners holding rows in the
// zone's Northbound under any of the prefixes, each once.
func (r *Reconciler) withOwners(keys []Key, prefixes ...string) ([]Key, error) {
	set := map[Key]bool{}
	for _, k := range keys {
		set[k] = true
	}
	for _, prefix := range prefixes {
		owners, err := r.Syncer.Owners(prefix)
		if err != nil {
			return nil, err
		}
		for o := range owners {
			if k, ok := ParseKey(o); ok {
				set[k] = true
			}
		}
	}
	out := make([]Key, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	return out, nil
}

// namespaceServiceKeys returns the keys of the services of a namespace.
func (r *Reconciler) namespaceServiceKeys(ctx context.Context, namespace string) []Key {
	var list corev1.ServiceList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	out := make([]Key, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, ServiceKey(s.Namespace, s.Name))
	}
	return out
}

// sliceService returns the service key an EndpointSlice serves (its default
// label, or the mirrored slices' label).
func sliceService(s *discoveryv1.EndpointSlice) (Key, bool) {
	for _, l := range []string{discoveryv1.LabelServiceName, mirror.LabelServiceName} {
		if name := s.Labels[l]; name != "" {
			return ServiceKey(s.Namespace, name), true
		}
	}
	return Key{}, false
}
