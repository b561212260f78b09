package zone

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"k8s.io/apimachinery/pkg/api/meta"
)

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
