package zone

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// networkFeature renders each network (its NADs' config and allocation,
// or the built-in default network) where it is used (activity.go), from
// the nodes' annotations (controller.go). Its rows are the ones the other
// features contribute to: it contributes to none.
type networkFeature struct{ r *Reconciler }

func (networkFeature) Name() string          { return "network" }
func (networkFeature) Kinds() []feature.Kind { return []feature.Kind{feature.KindNetwork} }
func (networkFeature) InitialKeys() []feature.Key {
	return []feature.Key{feature.NetworkKey(nodeinfo.DefaultNetwork)}
}

func (f networkFeature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.r.reconcileNetwork(ctx, key.Network)
}

// Watch implements feature.Feature: a NAD requeues its network; a pod, a
// Service or a connect may make a node start or stop using a network
// (activity.go).
func (f networkFeature) Watch(b *builder.TypedBuilder[feature.Key]) {
	r := f.r
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(_ context.Context, o client.Object) []feature.Key {
		if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
			return []feature.Key{feature.NetworkKey(name)}
		}
		return nil
	}))
	b.Watches(&corev1.Pod{}, feature.KeysBeforeAfter(r.activityKeys), builder.WithPredicates(feature.PodChanges))
	b.Watches(&corev1.Service{}, feature.KeysBeforeAfter(r.serviceActivityKeys))
	if !r.DisableNetworkConnect {
		// Its networks are used where their peers' pods run.
		b.Watches(&v1.ClusterNetworkConnect{}, feature.KeysBeforeAfter(r.connectActivityKeys))
	}
	// Its networks are used where their egress IPs are held (checked once,
	// at start, as the egressips feature does).
	r.noEgressIPs = !kubeobj.Installed(r.Client.RESTMapper(), v1.GroupVersion.WithKind("EgressIP"))
	if !r.noEgressIPs {
		b.Watches(&v1.EgressIP{}, feature.KeysBeforeAfter(r.egressActivityKeys))
		b.Watches(&corev1.Node{}, feature.KeysBeforeAfter(r.assignableActivityKeys))
		// A namespace's labels decide which EgressIPs select it.
		b.Watches(&corev1.Namespace{}, feature.KeysBeforeAfter(r.namespaceEgressKeys), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
}

// Keys are every network a NAD defines, the default network, and those
// that only the zone's Northbound still remembers.
func (f networkFeature) Keys(ctx context.Context) ([]feature.Key, error) {
	names, err := f.r.Networks(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]feature.Key, 0, len(names))
	for _, name := range names {
		keys = append(keys, feature.NetworkKey(name))
	}
	return f.r.host.WithOwners(keys, feature.KindNetwork)
}

// RemoteNodeKeys are the networks whose rendering of the node may have
// changed (nodeevents.go).
func (f networkFeature) RemoteNodeKeys(ctx context.Context, node string, changed func(string) bool) []feature.Key {
	networks, err := f.r.Networks(ctx)
	if err != nil {
		// Not knowing the networks, plan again those the zone holds.
		keys, _ := f.r.host.WithOwners(nil, feature.KindNetwork)
		return keys
	}
	return f.r.networksRendering(networks, node, changed)
}

// networksView is the zone's feature.Networks: the network feature's view
// of networks and nodes, for the features in packages of their own.
type networksView struct{ r *Reconciler }

func (v networksView) Network(ctx context.Context, name string) (topology.Network, bool, error) {
	return v.r.network(ctx, name)
}

func (v networksView) ActiveNodes(ctx context.Context, n topology.Network) (activity.Nodes, error) {
	return v.r.activeNodes(ctx, n)
}

func (v networksView) Nodes(ctx context.Context) ([]nodeinfo.Info, map[string]error, error) {
	return v.r.nodes.nodes(ctx, v.r.Client)
}

func (v networksView) LocalNode(ctx context.Context) (nodeinfo.Info, bool, error) {
	return v.r.localNode(ctx)
}

func (v networksView) NetworksByID(ctx context.Context) (map[int]string, error) {
	return v.r.networksByID(ctx)
}

func (v networksView) UsableLocalNode(ctx context.Context) (nodeinfo.Info, bool, error) {
	return v.r.usableLocalNode(ctx)
}

func (v networksView) NetworkNamespaces(ctx context.Context, network string) ([]string, error) {
	return v.r.networkNamespaces(ctx, network)
}

func (v networksView) UsedOn(ctx context.Context, n topology.Network, node string) (bool, error) {
	return v.r.usedOn(ctx, n, node)
}

func (v networksView) NamespacePrimaries(ctx context.Context, namespace string) ([]podnet.Primary, bool, error) {
	return v.r.namespacePrimaries(ctx, namespace)
}

func (v networksView) PrimaryNetworks(ctx context.Context, namespace string) ([]string, bool, error) {
	return v.r.primaryNetworks(ctx, namespace)
}

func (v networksView) Scope(ctx context.Context, namespace string) (feature.Scope, bool, error) {
	return v.r.scope(ctx, namespace)
}

func (v networksView) RenderedHere(ctx context.Context, sc feature.Scope) (feature.Scope, error) {
	return v.r.renderedHere(ctx, sc)
}

func (v networksView) ServicePeers(ctx context.Context, n topology.Network) ([]topology.Network, error) {
	return v.r.servicePeers(ctx, n)
}

func (v networksView) PodPeers(ctx context.Context, network string) (map[string]bool, error) {
	return v.r.podPeers(ctx, network)
}

func (v networksView) PeersHere(ctx context.Context, nets []topology.Network, node string) ([]topology.Network, error) {
	return v.r.peersHere(ctx, nets, node)
}
