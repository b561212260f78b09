package udncontroller

import (
	"context"
	"sort"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udn"
)

// Limits on how many networks exist. The cluster-wide limit is netalloc's
// (its network IDs, --max-networks); this file adds the per-namespace limit
// on tenants' UserDefinedNetworks and retries the networks waiting for either
// when room appears.

// admitted returns the UserDefinedNetworks of one namespace that may hold a
// network under a limit of max (0: no limit). A network that is created (has
// its NAD) keeps it, whatever the limit, so lowering the limit never tears
// down a working network; the others take the room left in order of age
// (then name). Networks being deleted without a NAD do not count.
func admitted(udns []v1.UserDefinedNetwork, created map[types.UID]bool, max int) map[types.UID]bool {
	out := map[types.UID]bool{}
	var waiting []*v1.UserDefinedNetwork
	for i := range udns {
		u := &udns[i]
		switch {
		case created[u.UID]:
			out[u.UID] = true
		case u.DeletionTimestamp == nil:
			waiting = append(waiting, u)
		}
	}
	if max == 0 {
		for _, u := range waiting {
			out[u.UID] = true
		}
		return out
	}
	sort.Slice(waiting, func(i, j int) bool {
		a, b := waiting[i], waiting[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	room := max - len(out)
	for _, u := range waiting {
		if room <= 0 {
			break
		}
		out[u.UID] = true
		room--
	}
	return out
}

// namespaceLimit returns a failure when u may not be created because its
// namespace already has the configured maximum of UserDefinedNetworks.
func (r *Controller) namespaceLimit(ctx context.Context, u *v1.UserDefinedNetwork) (*failure, error) {
	max := r.Config.MaxNetworksPerNamespace
	if max == 0 {
		return nil, nil
	}
	var udns v1.UserDefinedNetworkList
	if err := r.Client.List(ctx, &udns, client.InNamespace(u.Namespace)); err != nil {
		return nil, err
	}
	if len(udns.Items) <= max {
		return nil, nil
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.InNamespace(u.Namespace)); err != nil {
		return nil, err
	}
	byName := map[string]*nadv1.NetworkAttachmentDefinition{}
	for i := range nads.Items {
		byName[nads.Items[i].Name] = &nads.Items[i]
	}
	created := map[types.UID]bool{}
	for i := range udns.Items {
		o := &udns.Items[i]
		if n := byName[o.Name]; n != nil && ownedBy(n, udn.ForUDN(o).Owner) {
			created[o.UID] = true
		}
	}
	if admitted(udns.Items, created, max)[u.UID] {
		return nil, nil
	}
	return fail(u.Namespace, v1.ReasonNamespaceNetworkLimit,
		"namespace %s already has the maximum of %d UserDefinedNetworks (cluster-manager --max-networks-per-namespace) created or ahead of this one; it waits until one is deleted",
		u.Namespace, max), nil
}

// waitingForRoom reports whether a network's condition says it waits for a
// limit: the cluster's network IDs or tunnel keys, or its namespace's limit.
func waitingForRoom(conds []metav1.Condition) bool {
	c := meta.FindStatusCondition(conds, v1.ConditionNetworkCreated)
	if c == nil || c.Status != metav1.ConditionFalse {
		return false
	}
	switch c.Reason {
	case v1.ReasonNetworkLimit, v1.ReasonTunnelKeysExhausted, v1.ReasonNamespaceNetworkLimit:
		return true
	}
	return false
}

// udnsWaiting and cudnsWaiting requeue every network waiting for room.
func (c *Controller) udnsWaiting(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests[v1.UserDefinedNetwork, *v1.UserDefinedNetworkList](ctx, c.Client, udnItems, func(u *v1.UserDefinedNetwork) bool {
		return waitingForRoom(u.Status.Conditions)
	})
}

func (c *Controller) cudnsWaiting(ctx context.Context, _ client.Object) []reconcile.Request {
	return requests[v1.ClusterUserDefinedNetwork, *v1.ClusterUserDefinedNetworkList](ctx, c.Client, cudnItems, func(cu *v1.ClusterUserDefinedNetwork) bool {
		return waitingForRoom(cu.Status.Conditions)
	})
}

// udnsWaitingIn requeues the UserDefinedNetworks of o's namespace that wait
// for room: o (a UserDefinedNetwork) was deleted or changed.
func (c *Controller) udnsWaitingIn(ctx context.Context, o client.Object) []reconcile.Request {
	return requests[v1.UserDefinedNetwork, *v1.UserDefinedNetworkList](ctx, c.Client, udnItems, func(u *v1.UserDefinedNetwork) bool {
		return u.Name != o.GetName() && waitingForRoom(u.Status.Conditions)
	}, client.InNamespace(o.GetNamespace()))
}
