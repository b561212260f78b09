// Package connects is the zone feature that renders each
// ClusterNetworkConnect the cluster-manager accepted and allocated: its
// connect router, its ports on the connected networks' routers, and their
// routes and reroute policies (rows from internal/rows/connectrouter), in one
// transaction per connect. It reports the outcome in the connect's
// Ready-In-Zone-<node> condition.
package connects

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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/connectrouter"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// reconcileConnect writes one connect's rows and its contributions to the
// networks' routers in one transaction, and reports the outcome in the
// connect's Ready-In-Zone-<node> condition.
func (f *Feature) reconcileConnect(ctx context.Context, name string) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("clusterNetworkConnect", name, "zone", f.host.Zone)
	out, cnc, err := f.Desired(ctx, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The connect router is a datapath: its writes pass the northd gate.
	p, err := f.host.Sync(ctx, feature.ConnectKey(name).String(), out.Rows, out.Contributions...)
	if cnc != nil {
		if serr := f.connectStatus(ctx, cnc, out.Problems, err); serr != nil && err == nil {
			err = serr
		}
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("ClusterNetworkConnect %s: %w", name, err)
	}
	return feature.Settled(logger, "connect", p, out.Problems), nil
}

// Desired returns the rows and contributions of a connect in the
// zone, and the connect (nil when it is gone): none unless cluster-manager
// accepted it and stored its allocation, and none when the zone has the
// feature off.
func (f *Feature) Desired(ctx context.Context, name string) (connectrouter.Result, *v1.ClusterNetworkConnect, error) {
	if f.host.DisableNetworkConnect {
		return connectrouter.Result{}, nil, nil // rows left from before go
	}
	cnc := &v1.ClusterNetworkConnect{}
	if err := f.host.Client.Get(ctx, client.ObjectKey{Name: name}, cnc); err != nil {
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
	byID, err := f.host.Networks.NetworksByID(ctx)
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
		n, exists, err := f.host.Networks.Network(ctx, name)
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
		active, err := f.host.Networks.ActiveNodes(ctx, n)
		if err != nil {
			return connectrouter.Result{}, cnc, err
		}
		members = append(members, connectrouter.Member{Network: n, Slice: alloc.Subnets[k], Active: active})
	}
	nodes, _, err := f.host.Networks.Nodes(ctx)
	if err != nil {
		return connectrouter.Result{}, cnc, err
	}
	res, err := connectrouter.Render(connectrouter.Input{Name: name, TunnelKey: alloc.TunnelKey, Layout: layout, Members: members, Nodes: nodes, Zone: f.host.Zone,
		ServicesOnly: connect.Enables(cnc, v1.ClusterIPServiceNetwork) && !connect.Enables(cnc, v1.PodNetwork), ServiceCIDRs: f.host.Cluster.ServiceCIDRs})
	if err != nil {
		return connectrouter.Result{}, cnc, err
	}
	res.Problems = append(problems, res.Problems...)
	return res, cnc, nil
}

// connectStatus sets the zone's Ready-In-Zone-<node> condition on the
// connect: OVNSetupFailed with the error or the links left out, else
// OVNSetupSucceeded. A connect the zone does not render (refused, not yet
// allocated) gets none.
func (f *Feature) connectStatus(ctx context.Context, cnc *v1.ClusterNetworkConnect, problems []string, syncErr error) error {
	local, ok, err := f.host.Networks.LocalNode(ctx)
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
		f.host.Recorder.Eventf(cnc, corev1.EventTypeWarning, v1.ReasonOVNSetupFailed, "zone %s: %s", f.host.Zone, cond.Message)
	}
	return f.host.Client.Status().Update(ctx, cnc)
}

// connectKeys are the keys of every ClusterNetworkConnect.
func (f *Feature) connectKeys(ctx context.Context) []feature.Key {
	if f.host.DisableNetworkConnect {
		return nil
	}
	var list v1.ClusterNetworkConnectList
	if err := f.host.Client.List(ctx, &list); err != nil {
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
func (f *Feature) replanConnects(ctx context.Context) {
	f.host.Queue.Add(f.connectKeys(ctx)...)
}

// Feature renders the ClusterNetworkConnects in the zone.
type Feature struct{ host *feature.Host }

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "connects" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindConnect} }

// Reconcile implements feature.Feature.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.reconcileConnect(ctx, key.Name)
}

// Shares implements feature.Sharer: a connect adds its ports, reroute
// policies and routes to the networks' routers, and services-only ACLs to
// their switches.
func (*Feature) Shares() []feature.Share {
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
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	if f.host.DisableNetworkConnect {
		return
	}
	b.Watches(&v1.ClusterNetworkConnect{}, feature.OwnKey(func(o client.Object) feature.Key { return feature.ConnectKey(o.GetName()) }))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, _ client.Object) []feature.Key {
		return f.connectKeys(ctx)
	}))
}

// Keys implements feature.Keyer: every connect, and those only the zone's
// Northbound still remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	return f.host.WithOwners(f.connectKeys(ctx), feature.KindConnect)
}

// RemoteNodeKeys implements feature.RemoteNodeDependent: a connect renders
// its networks' links to each node.
func (f *Feature) RemoteNodeKeys(ctx context.Context, _ string, _ func(string) bool) []feature.Key {
	return f.connectKeys(ctx)
}

// NetworkChanged implements feature.NetworkDependent: a connect renders the
// network's links to each node it is active on (here too when it is not
// active here), and adds ports and policies to its routers, which may have
// just been made.
func (f *Feature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if c.Moved || c.RowsChanged {
		f.replanConnects(ctx)
	}
}
