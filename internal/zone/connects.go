package zone

import (
	"context"
	"fmt"
	"sort"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/connect"
	"github.com/ovn-udn/ovn-udn/internal/connectrouter"
	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// reconcileConnect writes one connect's rows and its contributions to the
// networks' routers in one transaction, and reports the outcome in the
// connect's Ready-In-Zone-<node> condition.
func (r *Reconciler) reconcileConnect(ctx context.Context, name string) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("clusterNetworkConnect", name, "zone", r.Zone)
	out, cnc, err := r.DesiredConnect(ctx, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The connect router is a datapath: its writes pass the northd gate.
	p, err := r.gate.Sync(ctx, r.Syncer, feature.ConnectKey(name).String(), out.Rows, out.Contributions...)
	if cnc != nil {
		if serr := r.connectStatus(ctx, cnc, out.Problems, err); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("ClusterNetworkConnect %s: %w", name, err)
	}
	return feature.Settled(logger, "connect", p, out.Problems), nil
}

// DesiredConnect returns the rows and contributions of a connect in the
// zone, and the connect (nil when it is gone): none unless cluster-manager
// accepted it and stored its allocation, and none when the zone has the
// feature off.
func (r *Reconciler) DesiredConnect(ctx context.Context, name string) (connectrouter.Result, *v1.ClusterNetworkConnect, error) {
	if r.DisableNetworkConnect {
		return connectrouter.Result{}, nil, nil // rows left from before go
	}
	cnc := &v1.ClusterNetworkConnect{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, cnc); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return connectrouter.Result{}, nil, nil
		}
		return connectrouter.Result{}, nil, err
	}
	alloc, ok := connect.Active(cnc)
	if !ok {
		return connectrouter.Result{}, cnc, nil
	}
	layout, err := connect.NewLayout(cnc.Spec.ConnectSubnets)
	if err != nil {
		return connectrouter.Result{Problems: []string{err.Error()}}, cnc, nil
	}
	byID, err := r.networksByID(ctx)
	if err != nil {
		return connectrouter.Result{}, cnc, err
	}
	var members []connectrouter.Member
	var problems []string
	for _, k := range alloc.Subnets.Keys() {
		name, ok := byID[k.ID]
		if !ok {
			continue // deleted: the connect goes on without it
		}
		n, exists, err := r.network(ctx, name)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("network %s: %v", name, err))
			continue
		case !exists:
			continue
		case n.Topology != k.Topology:
			problems = append(problems, fmt.Sprintf("network %s is %s, the allocation says %s", name, n.Topology, k.Topology))
			continue
		}
		active, err := r.activeNodes(ctx, n)
		if err != nil {
			return connectrouter.Result{}, cnc, err
		}
		members = append(members, connectrouter.Member{Network: n, Slice: alloc.Subnets[k], Active: active})
	}
	nodes, _, err := r.nodes.nodes(ctx, r.Client)
	if err != nil {
		return connectrouter.Result{}, cnc, err
	}
	res, err := connectrouter.Render(connectrouter.Input{Name: name, TunnelKey: alloc.TunnelKey, Layout: layout, Members: members, Nodes: nodes, Zone: r.Zone,
		ServicesOnly: connect.Enables(cnc, v1.ClusterIPServiceNetwork) && !connect.Enables(cnc, v1.PodNetwork), ServiceCIDRs: r.Cluster.ServiceCIDRs})
	if err != nil {
		return connectrouter.Result{}, cnc, err
	}
	res.Problems = append(problems, res.Problems...)
	return res, cnc, nil
}

// networksByID maps network IDs to network names (from the NADs'
// allocation annotations).
func (r *Reconciler) networksByID(ctx context.Context) (map[int]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads); err != nil {
		return nil, err
	}
	out := map[int]string{}
	for i := range nads.Items {
		name, ok := netconf.NetworkName(nads.Items[i].Spec.Config)
		id, _, has, err := netconf.ParseAllocation(nads.Items[i].Annotations)
		if ok && has && err == nil {
			out[id] = name
		}
	}
	return out, nil
}

// connectStatus sets the zone's Ready-In-Zone-<node> condition on the
// connect: OVNSetupFailed with the error or the links left out, else
// OVNSetupSucceeded. A connect the zone does not render (refused, not yet
// allocated) gets none.
func (r *Reconciler) connectStatus(ctx context.Context, cnc *v1.ClusterNetworkConnect, problems []string, syncErr error) error {
	local, ok, err := r.localNode(ctx)
	if err != nil || !ok {
		return err
	}
	if !meta.IsStatusConditionTrue(cnc.Status.Conditions, v1.ConditionAccepted) {
		return nil
	}
	cond := metav1.Condition{Type: v1.ConditionReadyInZonePrefix + local.Name, Status: metav1.ConditionTrue, Reason: v1.ReasonOVNSetupSucceeded,
		Message: "Connect router and all ports created successfully", ObservedGeneration: cnc.Generation}
	switch {
	case syncErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1.ReasonOVNSetupFailed, syncErr.Error()
	case len(problems) > 0:
		sort.Strings(problems)
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1.ReasonOVNSetupFailed, strings.Join(problems, "; ")
	}
	if !meta.SetStatusCondition(&cnc.Status.Conditions, cond) {
		return nil
	}
	if cond.Status == metav1.ConditionFalse {
		r.Recorder.Eventf(cnc, corev1.EventTypeWarning, v1.ReasonOVNSetupFailed, "zone %s: %s", r.Zone, cond.Message)
	}
	return r.Client.Status().Update(ctx, cnc)
}

// connectKeys are the keys of every ClusterNetworkConnect.
func (r *Reconciler) connectKeys(ctx context.Context) []feature.Key {
	if r.DisableNetworkConnect {
		return nil
	}
	var list v1.ClusterNetworkConnectList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]feature.Key, len(list.Items))
	for i, c := range list.Items {
		out[i] = feature.ConnectKey(c.Name)
	}
	return out
}

// replanConnects asks for every connect to be planned again (a network's
// routers, which connects add ports and policies to, may have just been
// created).
func (r *Reconciler) replanConnects(ctx context.Context) {
	r.queue.Add(r.connectKeys(ctx)...)
}

// servicePeers returns the networks whose pods reach network n's ClusterIP
// services through connects: none with the feature off, for networks
// without services, or while a peer is not known yet.
func (r *Reconciler) servicePeers(ctx context.Context, n topology.Network) ([]topology.Network, error) {
	if !n.HasServices() {
		return nil, nil
	}
	return r.connectedNetworks(ctx, n, v1.ClusterIPServiceNetwork)
}

// podPeers returns the names of the networks whose pods reach network's
// pods (by name): those connected to it for pods, and the other primary
// networks of the namespaces it is primary in (linkedNetworks); its
// NetworkPolicy peers select their pods too. Pod events ask it: without a
// connect for pods it reads nothing but the connects and network's NADs.
func (r *Reconciler) podPeers(ctx context.Context, network string) (map[string]bool, error) {
	out, err := r.linksFeature().LinkedNetworks(ctx, network)
	if err != nil {
		return nil, err
	}
	cncs, err := r.activeConnects(ctx, v1.PodNetwork)
	if err != nil || len(cncs) == 0 {
		return out, err
	}
	n, exists, err := r.network(ctx, network)
	if err != nil || !exists {
		return out, err
	}
	nets, err := r.peerNetworks(ctx, cncs, n, v1.PodNetwork)
	if err != nil {
		return nil, err
	}
	for _, p := range nets {
		if out == nil {
			out = map[string]bool{}
		}
		out[p.Name] = true
	}
	return out, nil
}

// connectedNetworks returns the networks connected to n for t by active
// connects: none with the feature off or for the default network.
func (r *Reconciler) connectedNetworks(ctx context.Context, n topology.Network, t v1.ConnectivityType) ([]topology.Network, error) {
	cncs, err := r.activeConnects(ctx, t)
	if err != nil || len(cncs) == 0 {
		return nil, err
	}
	return r.peerNetworks(ctx, cncs, n, t)
}

// activeConnects returns the connects zones render that enable t; none with
// the feature off (or its CRD absent).
func (r *Reconciler) activeConnects(ctx context.Context, t v1.ConnectivityType) ([]v1.ClusterNetworkConnect, error) {
	if r.DisableNetworkConnect {
		return nil, nil
	}
	var list v1.ClusterNetworkConnectList
	if err := r.Client.List(ctx, &list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []v1.ClusterNetworkConnect
	for _, c := range list.Items {
		if _, ok := connect.Active(&c); ok && connect.Enables(&c, t) {
			out = append(out, c)
		}
	}
	return out, nil
}

// peerNetworks resolves the networks connect.Peers (the one place that
// reads connects for this) names for n among cncs; a peer not known yet (no
// NAD, another topology) is left out, and the default network has none.
func (r *Reconciler) peerNetworks(ctx context.Context, cncs []v1.ClusterNetworkConnect, n topology.Network, t v1.ConnectivityType) ([]topology.Network, error) {
	if n.IsDefault() {
		return nil, nil
	}
	keys := connect.Peers(cncs, connect.Key{Topology: n.Topology, ID: n.ID}, t)
	if len(keys) == 0 {
		return nil, nil
	}
	byID, err := r.networksByID(ctx)
	if err != nil {
		return nil, err
	}
	var out []topology.Network
	for _, k := range keys {
		name, ok := byID[k.ID]
		if !ok {
			continue
		}
		p, exists, err := r.network(ctx, name)
		if err != nil {
			return nil, err
		}
		if exists && p.Topology == k.Topology && p.IsPrimary() {
			out = append(out, p)
		}
	}
	return out, nil
}

// serviceView and podView are what services and NetworkPolicy peers see of
// a connect: its networks' slices when it is active and enables their
// kind of connectivity, else nothing.
func serviceView(cnc *v1.ClusterNetworkConnect) string {
	return connectView(cnc, v1.ClusterIPServiceNetwork)
}
func podView(cnc *v1.ClusterNetworkConnect) string { return connectView(cnc, v1.PodNetwork) }

func connectView(cnc *v1.ClusterNetworkConnect, t v1.ConnectivityType) string {
	if cnc == nil || !connect.Enables(cnc, t) {
		return ""
	}
	a, ok := connect.Active(cnc)
	if !ok {
		return ""
	}
	return a.Subnets.Format()
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

// connectsFeature writes each ClusterNetworkConnect's router, its ports
// on the connected networks' routers, and their routes and policies
// (internal/connectrouter).
type connectsFeature struct{ r *Reconciler }

func (connectsFeature) Name() string          { return "connects" }
func (connectsFeature) Kinds() []feature.Kind { return []feature.Kind{feature.KindConnect} }

func (f connectsFeature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.r.reconcileConnect(ctx, key.Name)
}

// Shares implements feature.Sharer: a connect adds its ports, reroute
// policies and routes to the networks' routers, and services-only ACLs to
// their switches.
func (connectsFeature) Shares() []feature.Share {
	return []feature.Share{
		{Table: &nbdb.LogicalRouter{}, Column: "ports"},
		{Table: &nbdb.LogicalRouter{}, Column: "policies"},
		{Table: &nbdb.LogicalRouter{}, Column: "static_routes"},
		{Table: &nbdb.LogicalSwitch{}, Column: "acls"},
	}
}

// Watch implements feature.Feature: a connect requeues itself, and any NAD
// every connect (a network it selects may come, go or change). Nothing when
// the feature is off: the CRD may be absent.
func (f connectsFeature) Watch(b *builder.TypedBuilder[feature.Key]) {
	r := f.r
	if r.DisableNetworkConnect {
		return
	}
	b.Watches(&v1.ClusterNetworkConnect{}, beforeAfter(func(_ context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object) {
		for _, o := range []client.Object{before, after} {
			if o != nil {
				q.Add(feature.ConnectKey(o.GetName()))
			}
		}
	}))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, _ client.Object) []feature.Key {
		return r.connectKeys(ctx)
	}))
}

// Keys are every connect, and those only the zone's Northbound still
// remembers.
func (f connectsFeature) Keys(ctx context.Context) ([]feature.Key, error) {
	return f.r.host.WithOwners(f.r.connectKeys(ctx), feature.KindConnect)
}

// RemoteNodeKeys implements feature.RemoteNodeDependent: a connect renders
// its networks' links to each node.
func (f connectsFeature) RemoteNodeKeys(ctx context.Context, _ string, _ func(string) bool) []feature.Key {
	return f.r.connectKeys(ctx)
}

// NetworkChanged implements feature.NetworkDependent: a connect renders the
// network's links to each node it is active on (here too when it is not
// active here), and adds ports and policies to its routers, which may have
// just been made.
func (f connectsFeature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if c.Moved || c.RowsChanged {
		f.r.replanConnects(ctx)
	}
}
