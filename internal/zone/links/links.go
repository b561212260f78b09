// Package links is the zone feature that links the primary networks of a
// namespace on the zone's node (rows from internal/rows/primarylinks): each pair
// of a namespace's primary networks is one key (feature.LinkKey), whose
// rows are a link router's ports and its contributions of ports, routes
// and policies to the two networks' routers, written in one transaction.
// A pair that no longer shares a namespace, or that the zone's node does
// not use, loses its rows.
package links

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// linkPairs returns the pairs of primary networks that share a namespace,
// by link key: every two of a namespace's primary networks
// (podnet.NamespacePrimaries, the one place that says which they are).
// Namespaces selected by the same ClusterUserDefinedNetworks give the same
// pairs once.
func (f *Feature) linkPairs(ctx context.Context) (map[feature.Key][2]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := f.host.Client.List(ctx, &nads); err != nil {
		return nil, err
	}
	byNS := map[string]map[string]*nadv1.NetworkAttachmentDefinition{}
	for i := range nads.Items {
		n := &nads.Items[i]
		if byNS[n.Namespace] == nil {
			byNS[n.Namespace] = map[string]*nadv1.NetworkAttachmentDefinition{}
		}
		byNS[n.Namespace][podnet.Key(n.Namespace, n.Name)] = n
	}
	out := map[feature.Key][2]string{}
	for ns, list := range byNS {
		if len(list) < 2 {
			continue
		}
		prims, ok := podnet.NamespacePrimaries(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, list, v1.PrimaryNetworkLabel)
		if !ok {
			continue
		}
		for i := range prims {
			for j := i + 1; j < len(prims); j++ {
				a, b := prims[i].Network, prims[j].Network
				if b < a {
					a, b = b, a
				}
				out[feature.LinkKey(a, b)] = [2]string{a, b}
			}
		}
	}
	return out, nil
}

// LinkedNetworks returns the names of the networks linked to network: the
// other primary networks of the namespaces network is a primary network of
// (nil when none). It reads network's NADs through the cache's index and
// those namespaces' NADs only.
func (f *Feature) LinkedNetworks(ctx context.Context, network string) (map[string]bool, error) {
	if network == nodeinfo.DefaultNetwork {
		return nil, nil
	}
	var own nadv1.NetworkAttachmentDefinitionList
	if err := f.host.Client.List(ctx, &own, client.MatchingFields{feature.NetworkNameIndex: network}); err != nil {
		return nil, err
	}
	var out map[string]bool
	seen := map[string]bool{}
	for _, nad := range own.Items {
		if seen[nad.Namespace] {
			continue
		}
		seen[nad.Namespace] = true
		nads, err := podnet.NamespaceNADs(ctx, f.host.Client, nad.Namespace)
		if err != nil {
			return nil, err
		}
		if len(nads) < 2 {
			continue
		}
		prims, _ := podnet.NamespacePrimaries(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nad.Namespace}}, nads, v1.PrimaryNetworkLabel)
		if !slices.ContainsFunc(prims, func(p podnet.Primary) bool { return p.Network == network }) {
			continue
		}
		for _, p := range prims {
			if p.Network != network {
				if out == nil {
					out = map[string]bool{}
				}
				out[p.Network] = true
			}
		}
	}
	return out, nil
}

// SortedKeys returns the keys of the links the namespaces' primary networks
// make, sorted (`ovn-udn render` renders them with Desired).
func (f *Feature) SortedKeys(ctx context.Context) ([]feature.Key, error) {
	pairs, err := f.linkPairs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]feature.Key, 0, len(pairs))
	for k := range pairs {
		out = append(out, k)
	}
	slices.SortFunc(out, feature.CompareKeys)
	return out, nil
}

// linkKeys returns the keys of the links the zone renders and of those
// that still hold rows in its Northbound (their pair is gone): a full
// resync's (Keys), which scans every NAD and the Northbound.
func (f *Feature) linkKeys(ctx context.Context) []feature.Key {
	var keys []feature.Key
	if pairs, err := f.linkPairs(ctx); err == nil {
		for k := range pairs {
			keys = append(keys, k)
		}
	}
	if all, err := f.host.WithOwners(keys, feature.KindLink); err == nil {
		keys = all
	}
	slices.SortFunc(keys, feature.CompareKeys)
	return keys
}

// networkLinkKeys returns the keys of the links a change of network may
// concern: those its namespaces' primary networks make now, and those the
// zone holds (it may be leaving them).
func (f *Feature) networkLinkKeys(ctx context.Context, network string) []feature.Key {
	set := map[feature.Key]bool{}
	if linked, err := f.LinkedNetworks(ctx, network); err == nil {
		for other := range linked {
			set[feature.LinkKey(network, other)] = true
		}
	}
	for _, k := range f.held.of(network) {
		set[k] = true
	}
	return slices.SortedFunc(maps.Keys(set), feature.CompareKeys)
}

// replanLinks asks for network's links to be planned again (its routers,
// which links add ports, routes and policies to, may have just been
// created).
func (f *Feature) replanLinks(ctx context.Context, network string) {
	f.host.Queue.Add(f.networkLinkKeys(ctx, network)...)
}

// reconcileLink writes the link of a pair of primary networks on the
// zone's node, and its contributions to the two networks' routers, in one
// transaction; a pair that no longer shares a namespace loses its rows.
func (f *Feature) reconcileLink(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("primaryLink", key.Network+"|"+key.Name, "zone", f.host.Zone)
	out, err := f.Desired(ctx, key)
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Sync(ctx, key.String(), out.Rows, out.Contributions...)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("primary link %s: %w", key, err)
	}
	f.held.set(key, len(out.Rows) > 0)
	return feature.Settled(logger, "primary link", p, out.Problems), nil
}

// Desired returns the rows and contributions of the link whose key is
// key in the zone: none when its two networks no longer share a namespace,
// or one of them is not rendered here. It reads the NADs of the link's
// networks and of their namespaces only.
func (f *Feature) Desired(ctx context.Context, key feature.Key) (primarylinks.Result, error) {
	if key.Kind != feature.KindLink {
		return primarylinks.Result{}, nil // not a link: no rows
	}
	na, nb := key.Network, key.Name
	linked, err := f.LinkedNetworks(ctx, na)
	if err != nil {
		return primarylinks.Result{}, err
	}
	if !linked[nb] {
		return primarylinks.Result{}, nil
	}
	local, ok, err := f.host.Networks.LocalNode(ctx)
	if err != nil || !ok {
		return primarylinks.Result{Problems: []string{"the zone's node has no annotations yet"}}, err
	}
	a, okA, err := f.host.Networks.Network(ctx, na)
	if err != nil {
		return primarylinks.Result{}, err
	}
	b, okB, err := f.host.Networks.Network(ctx, nb)
	if err != nil {
		return primarylinks.Result{}, err
	}
	if !okA || !okB {
		return primarylinks.Result{}, nil
	}
	for _, n := range []topology.Network{a, b} {
		// Both networks' routers must be here (a namespace's networks are
		// used on the same nodes, so both are or neither is).
		active, err := f.host.Networks.ActiveNodes(ctx, n)
		if err != nil {
			return primarylinks.Result{}, err
		}
		if !active.Has(local.Name) {
			return primarylinks.Result{}, nil
		}
	}
	return primarylinks.Render(primarylinks.Input{A: a, B: b, Local: local, Subnets: f.host.Cluster.PrimaryLinkSubnets})
}

// linkSet is the links the zone holds rows of, kept by reconcileLink (and
// filled at start by reconciling the links found in the Northbound), so that
// a network's events find the links it leaves without scanning the database.
type linkSet struct {
	mu   sync.Mutex
	keys map[feature.Key]bool
}

func (l *linkSet) set(key feature.Key, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[feature.Key]bool{}
	}
	if held {
		l.keys[key] = true
	} else {
		delete(l.keys, key)
	}
}

// of returns the held links one of whose networks is network.
func (l *linkSet) of(network string) []feature.Key {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []feature.Key
	for k := range l.keys {
		if k.Network == network || k.Name == network {
			out = append(out, k)
		}
	}
	return out
}

// Feature links the primary networks of each namespace on the zone's
// node.
type Feature struct {
	host *feature.Host
	held linkSet
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "links" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindLink} }

// Reconcile implements feature.Feature.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.reconcileLink(ctx, key)
}

// Shares implements feature.Sharer: a link adds ports, routes and policies
// to its networks' routers.
func (*Feature) Shares() []feature.Share {
	return []feature.Share{
		{Table: &nbdb.LogicalRouter{}, Column: "ports"},
		{Table: &nbdb.LogicalRouter{}, Column: "policies"},
		{Table: &nbdb.LogicalRouter{}, Column: "static_routes"},
	}
}

// Watch implements feature.Feature: a NAD requeues the links of its network
// (a namespace's primary NADs make them).
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
			return f.networkLinkKeys(ctx, name)
		}
		return nil
	}))
}

// Keys are the links the zone renders and those still holding rows.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) { return f.linkKeys(ctx), nil }

// RemoteNodeKeys implements feature.RemoteNodeDependent: a link renders on
// each node its networks use.
func (f *Feature) RemoteNodeKeys(ctx context.Context, _ string, _ func(string) bool) []feature.Key {
	return f.linkKeys(ctx)
}

// NetworkChanged implements feature.NetworkDependent: the network's routers
// may have just been made.
func (f *Feature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if c.RowsChanged {
		f.replanLinks(ctx, c.Network)
	}
}
