// Package policies is the zone feature that writes NetworkPolicies on
// user-defined and default networks (rows from internal/rows/netpol): each
// policy's port groups and ACLs, each namespace's default-deny port groups,
// and each policy peer's address set on a network, on the networks of the
// namespace where the zone's node uses them. Its keys own their rows and
// contribute to nobody's. A key whose selected pods' ports are not in the
// Northbound yet waits for them (PortsWritten wakes it).
package policies

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	libovsdbclient "github.com/ovn-org/libovsdb/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// policyPeersIndex indexes NetworkPolicies by the keys of their peers.
const policyPeersIndex = "netpol.peers"

// reconcilePolicyKey writes the rows of a policy, a namespace's default deny
// or a peer, in one transaction.
func (f *Feature) reconcilePolicyKey(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("owner", key.String(), "zone", f.host.Zone)
	rows, waiting, err := f.Desired(ctx, key)
	var held *feature.NotRendered
	if errors.As(err, &held) {
		logger.V(1).Info("policy rows not rendered", "reason", held.Reason)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Syncer.Sync(ctx, key.String(), rows)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("%s: %w", key, err)
	}
	if !p.Empty() {
		logger.Info("synced network policy rows", "inserted", p.Inserted, "updated", p.Updated, "deleted", p.Deleted)
	}
	// Pods whose ports the network has not written yet: the network's
	// reconcile wakes the key when it inserts them (wakeWaiters); the
	// queue's backoff retries it too, in case they came in between. What
	// the key waits for is replaced on every reconcile, so a pod deleted
	// before its port was written is not waited for any longer.
	f.waiters.wait(key, waiting)
	if len(waiting) > 0 {
		logger.V(1).Info("policy waits for pods' ports", "ports", waiting)
		return ctrl.Result{Requeue: true}, nil
	}
	return ctrl.Result{}, nil
}

// portWaiters are the keys waiting for pods' ports to be in the Northbound,
// by port name.
type portWaiters struct {
	mu     sync.Mutex
	byPort map[string]map[feature.Key]bool
	// byKey are the ports each key waits for (byPort the other way round).
	byKey map[feature.Key][]string
}

// wait makes ports the ones key waits for (none: it waits for nothing).
func (w *portWaiters) wait(key feature.Key, ports []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.byKey[key] {
		delete(w.byPort[p], key)
		if len(w.byPort[p]) == 0 {
			delete(w.byPort, p)
		}
	}
	if len(ports) == 0 {
		delete(w.byKey, key)
		return
	}
	if w.byPort == nil {
		w.byPort, w.byKey = map[string]map[feature.Key]bool{}, map[feature.Key][]string{}
	}
	for _, p := range ports {
		if w.byPort[p] == nil {
			w.byPort[p] = map[feature.Key]bool{}
		}
		w.byPort[p][key] = true
	}
	w.byKey[key] = slices.Clone(ports)
}

// ready removes and returns the keys waiting for ports that exist now.
func (w *portWaiters) ready(exists func(port string) bool) []feature.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []feature.Key
	for p, keys := range w.byPort {
		if !exists(p) {
			continue
		}
		for k := range keys {
			out = append(out, k)
			w.byKey[k] = slices.DeleteFunc(w.byKey[k], func(q string) bool { return q == p })
			if len(w.byKey[k]) == 0 {
				delete(w.byKey, k)
			}
		}
		delete(w.byPort, p)
	}
	return out
}

// wakeWaiters requeues the keys whose ports a network's reconcile just
// inserted.
func (f *Feature) wakeWaiters(ctx context.Context) {
	f.host.Queue.Add(f.waiters.ready(func(port string) bool {
		return ovsdb.Get(ctx, f.host.Northbound, &nbdb.LogicalSwitchPort{Name: port}) == nil
	})...)
}

// Desired returns the rows a policy key should have in the zone, and
// the ports of selected pods the network has not written yet (the rows leave
// them out). Nothing when the object is gone, its namespace has no network or
// the zone has no node; a *feature.NotRendered error while the namespace's network is
// undecided or the zone's node unready.
func (f *Feature) Desired(ctx context.Context, key feature.Key) ([]model.Model, []string, error) {
	switch key.Kind {
	case feature.KindPolicy:
		return f.desiredPolicy(ctx, key.Namespace, key.Name)
	case feature.KindDeny:
		return f.desiredDeny(ctx, key.Namespace)
	case feature.KindPeer:
		rows, err := f.desiredPeer(ctx, key.Network, key.Name)
		return rows, nil, err
	}
	return nil, nil, fmt.Errorf("%s is not a network policy key", key)
}

func (f *Feature) desiredPolicy(ctx context.Context, namespace, name string) ([]model.Model, []string, error) {
	pol := &networkingv1.NetworkPolicy{}
	if err := f.host.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pol); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	sc, ok, err := f.host.Networks.Scope(ctx, namespace)
	if err != nil || !ok {
		return nil, nil, err
	}
	// A namespace with several primary networks has the policy rendered on
	// each: its pods there, its peers' addresses there.
	sel := netpol.PodSelector(pol)
	var rows []model.Model
	var waiting []string
	for i, net := range sc.Nets {
		// Not on a network the zone's node does not use (no pod of it
		// here to protect); i stays the network's place among the
		// namespace's, which names the rows.
		here, err := f.host.Networks.UsedOn(ctx, net.Network, sc.Local.Name)
		if err != nil {
			return nil, nil, err
		}
		if !here {
			continue
		}
		pods, wait, err := f.policyPods(ctx, namespace, sc.Local, net.Primary.Key, func(p netpol.Pod) bool { return sel.Matches(labels.Set(p.Labels)) })
		if err != nil {
			return nil, nil, err
		}
		waiting = append(waiting, wait...)
		var peerPods map[string][]netpol.Pod
		for _, p := range netpol.NamedPortPeers(pol) {
			if peerPods == nil {
				peerPods = map[string][]netpol.Pod{}
			}
			_, pp, err := f.peerPods(ctx, net.Network.Name, p)
			if err != nil {
				return nil, nil, err
			}
			peerPods[p.Key()] = pp
		}
		rows = append(rows, netpol.Render(netpol.Input{Policy: pol, Network: net.Network, Pods: pods, PeerPods: peerPods, IDPrefix: idPrefix(i, net)})...)
	}
	return rows, waiting, nil
}

// idPrefix distinguishes the rows a policy or default deny has on each
// primary network of a namespace with several: none on the first (so a
// namespace's only network keeps the IDs it always had), the network's name
// on the others.
func idPrefix(i int, net feature.ScopedNetwork) string {
	if i == 0 {
		return ""
	}
	return net.Network.Name + "/"
}

func (f *Feature) desiredDeny(ctx context.Context, namespace string) ([]model.Model, []string, error) {
	var list networkingv1.NetworkPolicyList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, nil, err
	}
	sc, ok, err := f.host.Networks.Scope(ctx, namespace)
	if err != nil || !ok {
		return nil, nil, err
	}
	pols := make([]*networkingv1.NetworkPolicy, len(list.Items))
	for i := range list.Items {
		pols[i] = &list.Items[i]
	}
	sels := make([]labels.Selector, len(pols))
	for i, pol := range pols {
		sels[i] = netpol.PodSelector(pol)
	}
	var rows []model.Model
	var waiting []string
	for i, net := range sc.Nets {
		here, err := f.host.Networks.UsedOn(ctx, net.Network, sc.Local.Name)
		if err != nil {
			return nil, nil, err
		}
		if !here {
			continue // as desiredPolicy
		}
		// The groups that exist stay while the namespace has the network:
		// a policy replaced by another (delete, create) must not delete and
		// recreate a port group of the same name, which OVN may not follow.
		keep := map[string]bool{}
		if f.host.Northbound != nil {
			for _, dir := range []string{"Ingress", "Egress"} {
				if ovsdb.Get(ctx, f.host.Northbound, &nbdb.PortGroup{Name: netpol.DenyPortGroupName(net.Network.Name, namespace, dir)}) == nil {
					keep[dir] = true
				}
			}
		}
		if len(list.Items) == 0 && len(keep) == 0 {
			continue
		}
		pods, wait, err := f.policyPods(ctx, namespace, sc.Local, net.Primary.Key, func(p netpol.Pod) bool {
			return slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(labels.Set(p.Labels)) })
		})
		if err != nil {
			return nil, nil, err
		}
		waiting = append(waiting, wait...)
		rows = append(rows, netpol.Deny(netpol.DenyInput{Namespace: namespace, Network: net.Network, Policies: pols, Pods: pods,
			Management: topology.ManagementAddresses(net.Network, sc.Local), Hairpin: f.host.Cluster.ServiceHairpinIPs(), Keep: keep,
			IDPrefix: idPrefix(i, net)})...)
	}
	return rows, waiting, nil
}

// policyPods returns the namespace's running pods on the zone's node that
// keep accepts (by namespace, name and labels) and are attached to the
// network of attachment key, with their ports there, and the names of the
// ports not in the Northbound yet.
func (f *Feature) policyPods(ctx context.Context, namespace string, local nodeinfo.Info, key string, keep func(netpol.Pod) bool) ([]netpol.Pod, []string, error) {
	var list corev1.PodList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{feature.PodNodeIndex: local.Name}); err != nil {
		return nil, nil, err
	}
	var out []netpol.Pod
	var waiting []string
	seen := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		if !keep(netpol.Pod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels}) {
			continue // selectors first: parsing annotations costs more
		}
		pod, name, ok := policyPod(p, key)
		if !ok {
			continue
		}
		if seen[name] {
			continue // a VM's pods share their port
		}
		seen[name] = true
		if f.host.Northbound == nil {
			// No database (render): the port's row ID among its network's rows.
			pod.PortUUID = topology.PortRowID(name)
			out = append(out, pod)
			continue
		}
		lsp := &nbdb.LogicalSwitchPort{Name: name}
		switch err := ovsdb.Get(ctx, f.host.Northbound, lsp); {
		case errors.Is(err, libovsdbclient.ErrNotFound):
			waiting = append(waiting, name)
		case err != nil:
			return nil, nil, err
		default:
			pod.PortUUID = lsp.UUID
		}
		out = append(out, pod)
	}
	return out, waiting, nil
}

// policyPod returns a pod as policies see it on the network of attachment
// key, and the name of its port there; ok is false for pods that are
// done, not scheduled, or not (yet) attached there.
func policyPod(p *corev1.Pod, key string) (netpol.Pod, string, bool) {
	if feature.PodDone(p) || p.Spec.NodeName == "" {
		return netpol.Pod{}, "", false
	}
	nets, err := podnet.ParsePod(p)
	if err != nil {
		return netpol.Pod{}, "", false
	}
	a, ok := nets[key]
	if !ok {
		return netpol.Pod{}, "", false
	}
	prefixes, err := a.Prefixes()
	if err != nil {
		return netpol.Pod{}, "", false
	}
	out := netpol.Pod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels}
	for _, pr := range prefixes {
		out.IPs = append(out.IPs, pr.Addr())
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name != "" {
				out.Ports = append(out.Ports, netpol.ContainerPort{Name: cp.Name, Protocol: string(cp.Protocol), Number: cp.ContainerPort})
			}
		}
	}
	return out, podnet.PortNameOf(key, p, a), true
}

// desiredPeer returns a peer's address sets on a network: while a policy of
// a namespace on that network uses it, the addresses there of the pods it
// selects in namespaces on that network.
func (f *Feature) desiredPeer(ctx context.Context, network, peerKey string) ([]model.Model, error) {
	p, err := netpol.ParsePeerKey(peerKey)
	if err != nil {
		return nil, nil // not a key this controller writes: its rows (if any) go
	}
	var pols networkingv1.NetworkPolicyList
	if err := f.host.Client.List(ctx, &pols, client.MatchingFields{policyPeersIndex: peerKey}); err != nil {
		return nil, err
	}
	used := false
	for _, pol := range pols.Items {
		networks, ok, err := f.host.Networks.PrimaryNetworks(ctx, pol.Namespace)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &feature.NotRendered{Reason: fmt.Sprintf("namespace %s has no usable primary network yet", pol.Namespace)}
		}
		if slices.Contains(networks, network) {
			used = true
			break
		}
	}
	if !used {
		return nil, nil
	}
	n, exists, err := f.host.Networks.Network(ctx, network)
	if err != nil {
		return nil, &feature.NotRendered{Reason: err.Error()}
	}
	if !exists {
		return nil, nil
	}
	// Only where the policies that use it are rendered: on the zone's
	// node, with the network used there.
	local, ok, err := f.host.Networks.UsableLocalNode(ctx)
	if err != nil || !ok {
		return nil, err
	}
	if here, err := f.host.Networks.UsedOn(ctx, n, local.Name); err != nil || !here {
		return nil, err
	}
	namespaces, pods, err := f.peerPods(ctx, network, p)
	if err != nil {
		return nil, err
	}
	return netpol.PeerRows(n, p, netpol.PeerAddresses(p, namespaces, pods)), nil
}

// peerPods returns the namespaces on a network, or on a network whose pods
// reach it (connected for pods by a ClusterNetworkConnect, or another
// primary network of a namespace it is primary in: podPeers), a peer may
// select pods of, and those namespaces' pods with their addresses on the
// network each is placed on.
func (f *Feature) peerPods(ctx context.Context, network string, p netpol.Peer) ([]netpol.Namespace, []netpol.Pod, error) {
	var candidates []corev1.Namespace
	if p.Namespaces == nil {
		ns := corev1.Namespace{}
		if err := f.host.Client.Get(ctx, client.ObjectKey{Name: p.Namespace}, &ns); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, nil
			}
			return nil, nil, err
		}
		candidates = append(candidates, ns)
	} else {
		var list corev1.NamespaceList
		if err := f.host.Client.List(ctx, &list); err != nil {
			return nil, nil, err
		}
		candidates = list.Items
	}
	connected, err := f.host.Networks.PodPeers(ctx, network)
	if err != nil {
		return nil, nil, err
	}
	var namespaces []netpol.Namespace
	var pods []netpol.Pod
	for _, ns := range candidates {
		nsv := netpol.Namespace{Name: ns.Name, Labels: ns.Labels}
		if !p.SelectsNamespace(nsv) {
			continue
		}
		primaries, ok, err := f.host.Networks.NamespacePrimaries(ctx, ns.Name)
		if err != nil {
			return nil, nil, err
		}
		var keys []string
		for _, primary := range primaries {
			if primary.Network == network || connected[primary.Network] {
				keys = append(keys, primary.Key)
			}
		}
		if !ok || len(keys) == 0 {
			continue // an unconnected network's pods are never a peer here
		}
		namespaces = append(namespaces, nsv)
		var list corev1.PodList
		if err := f.host.Client.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
			return nil, nil, err
		}
		for i := range list.Items {
			if !p.Pods.Matches(labels.Set(list.Items[i].Labels)) {
				continue // selectors first: parsing annotations costs more
			}
			for _, key := range keys {
				if pod, _, ok := policyPod(&list.Items[i], key); ok {
					pods = append(pods, pod)
				}
			}
		}
	}
	return namespaces, pods, nil
}

// compiled is what the event handlers match pods and namespaces against: a
// policy's selectors, converted once per resource version (pod events come
// often and are matched against every policy).
type compiled struct {
	version string
	pods    labels.Selector
	peers   []netpol.Peer
	named   []netpol.Peer // peers its egress named ports resolve on
}

// policyCache holds compiled policies by UID.
type policyCache struct {
	mu    sync.Mutex
	byUID map[types.UID]compiled
}

// get returns a policy compiled.
func (c *policyCache) get(pol *networkingv1.NetworkPolicy) compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byUID[pol.UID]; ok && e.version == pol.ResourceVersion {
		return e
	}
	e := compiled{version: pol.ResourceVersion, pods: netpol.PodSelector(pol), peers: netpol.Peers(pol), named: netpol.NamedPortPeers(pol)}
	if c.byUID == nil {
		c.byUID = map[types.UID]compiled{}
	}
	c.byUID[pol.UID] = e
	return e
}

// forget drops a deleted policy.
func (c *policyCache) forget(pol *networkingv1.NetworkPolicy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byUID, pol.UID)
}

// policyPeerKeys extracts policyPeersIndex.
func policyPeerKeys(o client.Object) []string {
	pol, ok := o.(*networkingv1.NetworkPolicy)
	if !ok {
		return nil
	}
	var out []string
	for _, p := range netpol.Peers(pol) {
		out = append(out, p.Key())
	}
	return out
}

// policyKeysOf returns the keys a policy's change concerns: its own, its
// namespace's default deny, and its peers on its namespace's networks.
func (f *Feature) policyKeysOf(ctx context.Context, pol *networkingv1.NetworkPolicy) []feature.Key {
	out := []feature.Key{feature.PolicyKey(pol.Namespace, pol.Name), feature.DenyKey(pol.Namespace)}
	networks, ok, err := f.host.Networks.PrimaryNetworks(ctx, pol.Namespace)
	if err != nil || !ok {
		return out
	}
	for _, p := range f.policies.get(pol).peers {
		for _, n := range networks {
			out = append(out, feature.PeerKey(n, p))
		}
	}
	return out
}

// namespacePolicyKeys returns the keys of the policies of a namespace (every
// namespace for ""), with their default denies and peers.
func (f *Feature) namespacePolicyKeys(ctx context.Context, namespace string) []feature.Key {
	var list networkingv1.NetworkPolicyList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []feature.Key
	for i := range list.Items {
		out = append(out, f.policyKeysOf(ctx, &list.Items[i])...)
	}
	return out
}

// replanPoliciesIfUsedHereChanged asks for the NetworkPolicy keys of a
// dynamic network's namespaces to be planned again when whether the zone's
// node uses it changed from prev (known: the network's last plan in this
// process) to cur, or is first known: policies render on it only where it
// is used.
func (f *Feature) replanPoliciesIfUsedHereChanged(ctx context.Context, network string, prev activity.Nodes, known bool, cur activity.Nodes) {
	if f.host.RenderEverywhere || network == nodeinfo.DefaultNetwork {
		return
	}
	local, ok, err := f.host.Networks.LocalNode(ctx)
	if err != nil || !ok || known && prev.Has(local.Name) == cur.Has(local.Name) {
		return
	}
	f.host.Queue.Later(func(ctx context.Context) []feature.Key { return f.networkPolicyKeys(ctx, network) })
}

// networkPolicyKeys returns the NetworkPolicy keys of a network's
// namespaces: their policies, default denies and peers.
func (f *Feature) networkPolicyKeys(ctx context.Context, network string) []feature.Key {
	namespaces, err := f.host.Networks.NetworkNamespaces(ctx, network)
	if err != nil {
		return nil
	}
	var out []feature.Key
	for _, ns := range namespaces {
		out = append(out, feature.DenyKey(ns))
		out = append(out, f.namespacePolicyKeys(ctx, ns)...)
	}
	return out
}

// namespacePeerKeys returns the keys of the peers of a namespace's policies
// on a given network (whether or not it is still the namespace's).
func (f *Feature) namespacePeerKeys(ctx context.Context, namespace, network string) []feature.Key {
	var list networkingv1.NetworkPolicyList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []feature.Key
	for i := range list.Items {
		for _, p := range f.policies.get(&list.Items[i]).peers {
			out = append(out, feature.PeerKey(network, p))
		}
	}
	return out
}

// podPolicyKeys returns the keys a pod's change concerns: the policies of its
// namespace that select it (and the namespace's default deny) when it is on
// the zone's node, and every peer that selects it, on its namespace's
// network and the networks connected to it for pods (policies whose egress
// named ports resolve on such a peer too).
func (f *Feature) podPolicyKeys(ctx context.Context, pod *corev1.Pod) []feature.Key {
	var all networkingv1.NetworkPolicyList
	if err := f.host.Client.List(ctx, &all); err != nil || len(all.Items) == 0 {
		return nil
	}
	var out []feature.Key
	if local, ok, err := f.host.Networks.LocalNode(ctx); err == nil && ok && pod.Spec.NodeName == local.Name {
		selected := false
		for i := range all.Items {
			pol := &all.Items[i]
			if pol.Namespace == pod.Namespace && f.policies.get(pol).pods.Matches(labels.Set(pod.Labels)) {
				out = append(out, feature.PolicyKey(pol.Namespace, pol.Name))
				selected = true
			}
		}
		if selected {
			out = append(out, feature.DenyKey(pod.Namespace))
		}
	}
	ns := &corev1.Namespace{}
	if err := f.host.Client.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return out
	}
	own, ok, err := f.host.Networks.PrimaryNetworks(ctx, pod.Namespace)
	if err != nil || !ok {
		return out
	}
	// Its networks' peers, and those of networks its pods reach.
	networks := slices.Clone(own)
	for _, n := range own {
		if connected, err := f.host.Networks.PodPeers(ctx, n); err == nil {
			for n := range connected {
				if !slices.Contains(networks, n) {
					networks = append(networks, n)
				}
			}
		}
	}
	nsv := netpol.Namespace{Name: ns.Name, Labels: ns.Labels}
	for i := range all.Items {
		pol := &all.Items[i]
		cp := f.policies.get(pol)
		for _, p := range cp.peers {
			if p.Selects(nsv, pod.Labels) {
				for _, n := range networks {
					out = append(out, feature.PeerKey(n, p))
				}
			}
		}
		for _, p := range cp.named {
			if p.Selects(nsv, pod.Labels) {
				out = append(out, feature.PolicyKey(pol.Namespace, pol.Name))
				break
			}
		}
	}
	return out
}

// namespaceSelectorKeys returns the keys a namespace's label change
// concerns: every peer with a namespace selector, and every policy whose
// egress named ports resolve on such a peer.
func (f *Feature) namespaceSelectorKeys(ctx context.Context) []feature.Key {
	var all networkingv1.NetworkPolicyList
	if err := f.host.Client.List(ctx, &all); err != nil {
		return nil
	}
	var out []feature.Key
	for i := range all.Items {
		pol := &all.Items[i]
		networks, ok, err := f.host.Networks.PrimaryNetworks(ctx, pol.Namespace)
		if err != nil || !ok {
			continue
		}
		cp := f.policies.get(pol)
		for _, p := range cp.peers {
			if p.Namespaces != nil {
				for _, n := range networks {
					out = append(out, feature.PeerKey(n, p))
				}
			}
		}
		if len(cp.named) > 0 {
			out = append(out, feature.PolicyKey(pol.Namespace, pol.Name))
		}
	}
	return out
}

// PolicyKeys returns the keys of every policy, default deny and peer the
// cluster's NetworkPolicies make, sorted (`ovn-udn render` renders them).
func (f *Feature) PolicyKeys(ctx context.Context) []feature.Key {
	keys := f.namespacePolicyKeys(ctx, "")
	slices.SortFunc(keys, feature.CompareKeys)
	return slices.Compact(keys)
}

// policyKeys returns the keys of every policy, default deny and peer, and of
// those that still hold rows in the zone's Northbound.
func (f *Feature) policyKeys(ctx context.Context) ([]feature.Key, error) {
	return f.host.WithOwners(f.namespacePolicyKeys(ctx, ""), feature.KindPolicy, feature.KindDeny, feature.KindPeer)
}

// Feature writes each NetworkPolicy's rows, each namespace's default-deny
// port groups and each policy peer's address sets.
type Feature struct {
	host     *feature.Host
	policies policyCache
	waiters  portWaiters
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "policies" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind {
	return []feature.Kind{feature.KindPolicy, feature.KindDeny, feature.KindPeer}
}

func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.reconcilePolicyKey(ctx, key)
}

// Watch implements feature.Feature: a policy requeues what it concerns
// (policyKeysOf); a pod the policies and peers that select it, before and
// after; a NAD its namespace's policies, default deny and peers on its
// network, which they may be leaving; a namespace's labels the policies
// whose namespace selectors may select it, and its default deny; a connect
// every policy when what policies see of it changes (connect.View).
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	b.Watches(&networkingv1.NetworkPolicy{}, feature.BeforeAfter(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object) {
		for _, o := range []client.Object{before, after} {
			if pol, ok := o.(*networkingv1.NetworkPolicy); ok {
				for _, k := range f.policyKeysOf(ctx, pol) {
					q.Add(k)
				}
			}
		}
		if pol, ok := before.(*networkingv1.NetworkPolicy); ok && after == nil {
			f.policies.forget(pol)
		}
	}))
	b.Watches(&corev1.Pod{}, feature.BeforeAfter(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object) {
		for _, o := range []client.Object{before, after} {
			if pod, ok := o.(*corev1.Pod); ok {
				for _, k := range f.podPolicyKeys(ctx, pod) {
					q.Add(k)
				}
			}
		}
	}), builder.WithPredicates(feature.PodChanges))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		out := append(f.namespacePolicyKeys(ctx, o.GetNamespace()), feature.DenyKey(o.GetNamespace()))
		if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
			out = append(out, f.namespacePeerKeys(ctx, o.GetNamespace(), name)...)
		}
		return out
	}))
	b.Watches(&corev1.Namespace{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return append(f.namespaceSelectorKeys(ctx), feature.DenyKey(o.GetName()))
	}), builder.WithPredicates(predicate.LabelChangedPredicate{}))
	if !f.host.DisableNetworkConnect {
		b.Watches(&v1.ClusterNetworkConnect{}, feature.KeysBeforeAfter(func(ctx context.Context, o, n *v1.ClusterNetworkConnect) []feature.Key {
			if connect.View(o, v1.PodNetwork) == connect.View(n, v1.PodNetwork) {
				return nil
			}
			// Peers of the connected networks now select (or no longer
			// select) each other's pods.
			return f.namespacePolicyKeys(ctx, "")
		}))
	}
}

// Keys are every policy with its default deny and peers, and those only
// the zone's Northbound still remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	return f.policyKeys(ctx)
}

// NetworkChanged implements feature.NetworkDependent: a policy's rows are
// where its network is used, so they follow when the zone's node comes to
// use it or stops; keys waiting for ports the network just inserted are
// woken.
func (f *Feature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if c.Exists && (!c.Known || c.Moved) {
		f.replanPoliciesIfUsedHereChanged(ctx, c.Network, c.Before, c.Known, c.After)
	}
	if c.RowsChanged {
		f.wakeWaiters(ctx)
	}
}

// PortsWritten implements feature.PortDependent: keys waiting for ports
// that exist now are reconciled again.
func (f *Feature) PortsWritten(ctx context.Context) { f.wakeWaiters(ctx) }

// Indexes implements feature.Indexer: policies by the keys of their
// peers.
func (*Feature) Indexes() []kubeobj.Index {
	return []kubeobj.Index{{Object: &networkingv1.NetworkPolicy{}, Field: policyPeersIndex, Extract: policyPeerKeys}}
}
