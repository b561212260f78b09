// Package egressips is the zone feature that renders the EgressIPs of each
// network in the zone (rows from internal/rows/egressip): the reroute
// policies of the pods they select toward their egress nodes, the allow
// policies that keep the network's traffic within the cluster, and on an
// egress node the SNATs of those pods to the egress IP it holds. One key,
// and one owner, per network: its rows depend on every EgressIP that
// selects any of its pods, and on where each egress IP is assigned
// (cluster-manager's status).
//
// EgressServices take the same path (services.go): an EgressService with
// an elected host is an object whose one address is its Service's
// load-balancer IP, held by the host, selecting the Service's endpoints;
// it comes before the EgressIPs, so that its pods are its own.
//
// The feature is off when neither the EgressIP nor the EgressService CRD
// is installed: it neither watches nor renders, and rows left from before
// go.
package egressips

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// Feature renders the EgressIPs in the zone.
type Feature struct {
	host *feature.Host
	// off: neither the EgressIP nor the EgressService CRD is installed;
	// noEIPs, noServices: one of them is not (set by Watch).
	off, noEIPs, noServices bool
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "egressips" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindEgressIP} }

// Shares implements feature.Sharer: policies and source routes on the
// networks' cluster and transit routers, SNATs on their gateway routers.
func (*Feature) Shares() []feature.Share {
	return []feature.Share{
		{Table: &nbdb.LogicalRouter{}, Column: "policies"},
		{Table: &nbdb.LogicalRouter{}, Column: "static_routes"},
		{Table: &nbdb.LogicalRouter{}, Column: "nat"},
	}
}

// Reconcile implements feature.Feature: one network's EgressIP rows in one
// transaction.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("egressIPs", key.Network, "zone", f.host.Zone)
	out, err := f.Desired(ctx, key.Network)
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Syncer.Sync(ctx, key.String(), out.Rows, out.Contributions...)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("EgressIPs of network %s: %w", key.Network, err)
	}
	// Its problems last until an object changes (an IP family without an
	// egress IP, a pod two objects select, no egress node yet), and each
	// change brings the key back: they are logged, not retried.
	if len(out.Problems) > 0 {
		logger.V(1).Info("EgressIPs without an egress path", "problems", out.Problems)
	}
	return feature.Settled(logger, "egressips", p, nil), nil
}

// Desired returns a network's EgressIP rows in the zone: none when the
// feature is off, the network is gone or not rendered on the zone's node,
// or no EgressIP selects its pods.
func (f *Feature) Desired(ctx context.Context, network string) (egressip.Result, error) {
	if f.off {
		return egressip.Result{}, nil
	}
	nets := f.host.Networks
	n, exists, err := nets.Network(ctx, network)
	if err != nil || !exists {
		return egressip.Result{}, err
	}
	local, ok, err := nets.LocalNode(ctx)
	if err != nil || !ok {
		return egressip.Result{}, err
	}
	if used, err := nets.UsedOn(ctx, n, local.Name); err != nil || !used {
		return egressip.Result{}, err
	}
	objects, err := f.objects(ctx, network)
	if err != nil {
		return egressip.Result{}, err
	}
	services, err := f.serviceObjects(ctx, network)
	if err != nil {
		return egressip.Result{}, err
	}
	// An EgressService's pods take its path before any EgressIP's (the
	// builder gives a pod to the first object that selects it).
	objects = append(services, objects...)
	if len(objects) == 0 {
		return egressip.Result{}, nil
	}
	nodes, _, err := nets.Nodes(ctx)
	if err != nil {
		return egressip.Result{}, err
	}
	active, err := nets.ActiveNodes(ctx, n)
	if err != nil {
		return egressip.Result{}, err
	}
	in := egressip.Input{Network: n, Local: local, NodeIDs: map[string]int{}, Objects: objects, Rendered: active.Has}
	old := map[string]bool{}
	in.Layer2V1 = func(node string) bool { return old[node] }
	for _, x := range nodes {
		in.NodeIDs[x.Name] = x.ID
		old[x.Name] = x.Layer2V1
		for _, p := range x.PrimaryIPs {
			in.NodeIPs = append(in.NodeIPs, p.Addr())
		}
	}
	if local.Gateway != nil {
		for i, u := range local.Gateway.Uplinks() {
			in.Uplinks = append(in.Uplinks, egressip.Uplink{Port: n.UplinkExternalPort(local.Name, i, u.PhysicalNetwork),
				Subnets: u.IPs, NextHops: u.NextHops})
		}
	}
	return egressip.Render(in), nil
}

// objects are the EgressIPs as they concern network, oldest first: their
// assignments and the network's pods they select. The network's
// namespaces are read once, and each object's selectors matched against
// them in memory: only a namespace an object selects has its pods listed.
func (f *Feature) objects(ctx context.Context, network string) ([]egressip.Object, error) {
	if f.noEIPs {
		return nil, nil
	}
	var list v1.EgressIPList
	// Read only, never kept: the cache's objects themselves.
	if err := f.host.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	namespaces, err := f.namespaces(ctx, network, list.Items)
	if err != nil || len(namespaces) == 0 {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	var out []egressip.Object
	for i := range list.Items {
		e := &list.Items[i]
		pods, err := f.selected(ctx, e, namespaces)
		if err != nil {
			return nil, err
		}
		if len(pods) == 0 {
			continue
		}
		o := egressip.Object{Name: e.Name, Pods: pods}
		for _, it := range e.Status.Items {
			if ip, err := netip.ParseAddr(it.EgressIP); err == nil && it.Node != "" {
				o.Assignments = append(o.Assignments, egressip.Assignment{Node: it.Node, IP: ip.Unmap()})
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// namespace is one of a network's namespaces: its labels, and the key of
// the network in its pods' pod-networks annotation.
type namespace struct {
	name, key string
	labels    labels.Set
}

// namespaces are the namespaces whose primary network is network, sorted:
// among those holding its NADs for a user-defined network; for the default
// network, among those one of the EgressIPs selects (every namespace is a
// candidate there, and most are never selected).
func (f *Feature) namespaces(ctx context.Context, network string, eips []v1.EgressIP) ([]namespace, error) {
	var names []string
	if network == nodeinfo.DefaultNetwork {
		var all corev1.NamespaceList
		if err := f.host.Client.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for _, ns := range all.Items {
			if slices.ContainsFunc(eips, func(e v1.EgressIP) bool { return kubeobj.Selects(&e.Spec.NamespaceSelector, ns.Labels) }) {
				names = append(names, ns.Name)
			}
		}
	} else {
		var err error
		if names, err = f.host.Networks.NetworkNamespaces(ctx, network); err != nil {
			return nil, err
		}
	}
	sort.Strings(names)
	var out []namespace
	for i, name := range names {
		if i > 0 && names[i-1] == name {
			continue // a namespace with two NADs of the network
		}
		prims, ok, err := f.host.Networks.NamespacePrimaries(ctx, name)
		if err != nil {
			return nil, err
		}
		key := ""
		for _, p := range prims {
			if p.Network == network {
				key = p.Key
			}
		}
		if !ok || key == "" {
			continue
		}
		var ns corev1.Namespace
		if err := f.host.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		out = append(out, namespace{name: name, key: key, labels: ns.Labels})
	}
	return out, nil
}

// selected are the pods of the namespaces that an EgressIP selects, with
// their addresses on the network, sorted.
func (f *Feature) selected(ctx context.Context, e *v1.EgressIP, namespaces []namespace) ([]egressip.Pod, error) {
	// The API's CEL rules refuse selectors these cannot read: an object
	// that got past them selects nothing.
	var out []egressip.Pod
	var podSel labels.Selector
	for _, ns := range namespaces {
		if !kubeobj.Selects(&e.Spec.NamespaceSelector, ns.labels) {
			continue
		}
		if podSel == nil {
			var err error
			if podSel, err = kubeobj.Selector(&e.Spec.PodSelector); err != nil { // empty: every pod
				return nil, nil
			}
		}
		var pods corev1.PodList
		if err := f.host.Client.List(ctx, &pods, client.InNamespace(ns.name), client.MatchingLabelsSelector{Selector: podSel}); err != nil {
			return nil, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.HostNetwork || p.Spec.NodeName == "" || feature.PodDone(p) {
				continue
			}
			nets, err := podnet.Parse(p.Annotations)
			if err != nil {
				continue
			}
			pod := egressip.Pod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName}
			for _, s := range nets[ns.key].IPs {
				if pfx, err := netip.ParsePrefix(s); err == nil {
					pod.IPs = append(pod.IPs, pfx.Addr())
				}
			}
			if len(pod.IPs) > 0 {
				out = append(out, pod)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// keys are the keys of every network the zone may render EgressIPs on: the
// default network and every user-defined one (only the default's when the
// networks cannot be listed: the error is the resync's, in Keys).
func (f *Feature) keys(ctx context.Context) []feature.Key {
	out, _ := f.allKeys(ctx)
	return out
}

func (f *Feature) allKeys(ctx context.Context) ([]feature.Key, error) {
	if f.off {
		return nil, nil
	}
	byID, err := f.host.Networks.NetworksByID(ctx)
	if err != nil {
		return []feature.Key{feature.EgressIPKey(nodeinfo.DefaultNetwork)}, err
	}
	out := []feature.Key{feature.EgressIPKey(nodeinfo.DefaultNetwork)}
	for _, name := range byID {
		out = append(out, feature.EgressIPKey(name))
	}
	sort.Slice(out, func(i, j int) bool { return feature.CompareKeys(out[i], out[j]) < 0 })
	return out, nil
}

// Keys implements feature.Keyer: every network's, and those only the
// zone's Northbound still remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	keys, err := f.allKeys(ctx)
	if err != nil {
		return nil, err
	}
	return f.host.WithOwners(keys, feature.KindEgressIP)
}

// Watch implements feature.Feature: an EgressIP (its selectors, its
// status) changes the rows of the networks of the namespaces it selects,
// before and after; a namespace's labels, or a pod's (its labels,
// addresses, node), those of the namespace's primary networks.
// Nothing when the CRD is absent (checked once, at start).
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	f.noEIPs = !kubeobj.Installed(f.host.Client.RESTMapper(), v1.GroupVersion.WithKind("EgressIP"))
	f.noServices = !kubeobj.Installed(f.host.Client.RESTMapper(), v1.GroupVersion.WithKind("EgressService"))
	if f.off = f.noEIPs && f.noServices; f.off {
		return
	}
	networkKeys := func(ctx context.Context, namespace string) []feature.Key {
		names, ok, err := f.host.Networks.PrimaryNetworks(ctx, namespace)
		if err != nil || !ok {
			return nil
		}
		out := make([]feature.Key, len(names))
		for i, n := range names {
			out[i] = feature.EgressIPKey(n)
		}
		return out
	}
	namespaceKeys := func(ctx context.Context, namespace string) []feature.Key {
		if !f.any(ctx) {
			return nil
		}
		return networkKeys(ctx, namespace)
	}
	if !f.noEIPs {
		b.Watches(&v1.EgressIP{}, feature.KeysBeforeAfter(func(ctx context.Context, before, after *v1.EgressIP) []feature.Key {
			return f.selectedKeys(ctx, networkKeys, before, after)
		}))
	}
	if !f.noServices {
		f.watchServices(b, networkKeys)
	}
	b.Watches(&corev1.Namespace{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return namespaceKeys(ctx, o.GetName())
	}), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	b.Watches(&corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return namespaceKeys(ctx, o.GetNamespace())
	}), builder.WithPredicates(feature.PodChanges))
}

// selectedKeys are the keys of the networks of the namespaces the
// EgressIPs (nil ones skipped) select: an object's selectors, status and
// existence change only those networks' rows.
func (f *Feature) selectedKeys(ctx context.Context, networkKeys func(context.Context, string) []feature.Key, eips ...*v1.EgressIP) []feature.Key {
	namespaces, err := activity.SelectedNamespaces(ctx, f.host.Client, eips...)
	if err != nil {
		return f.keys(ctx) // every network, rather than miss one
	}
	seen := map[feature.Key]bool{}
	var out []feature.Key
	for _, ns := range namespaces {
		for _, k := range networkKeys(ctx, ns) {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// any reports whether there is an EgressIP or an EgressService at all
// (pods and namespaces then matter).
func (f *Feature) any(ctx context.Context) bool {
	if !f.noEIPs {
		var list v1.EgressIPList
		if f.host.Client.List(ctx, &list, client.Limit(1)) == nil && len(list.Items) > 0 {
			return true
		}
	}
	if !f.noServices {
		var list v1.EgressServiceList
		if f.host.Client.List(ctx, &list, client.Limit(1)) == nil && len(list.Items) > 0 {
			return true
		}
	}
	return false
}

// NetworkChanged implements feature.NetworkDependent: the network's
// routers, which its EgressIP rows are contributed to, may have just been
// made, moved or gone.
func (f *Feature) NetworkChanged(_ context.Context, c feature.NetworkChange) {
	if f.off || !(c.RowsChanged || c.Moved || !c.Exists || !c.Known) {
		return
	}
	f.host.Queue.Add(feature.EgressIPKey(c.Network))
}

// RemoteNodeKeys implements feature.RemoteNodeDependent: next hops and the
// allow policies follow the other nodes' IDs and addresses.
func (f *Feature) RemoteNodeKeys(ctx context.Context, _ string, _ func(string) bool) []feature.Key {
	if !f.any(ctx) {
		return nil
	}
	return f.keys(ctx)
}
