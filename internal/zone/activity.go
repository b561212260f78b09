package zone

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// Where a network is rendered (internal/activity, docs/topology.md "Where a
// network is rendered"). Unless RenderEverywhere, a network's plan asks
// activity.Of for the nodes it is active on, keeps a node a grace period
// after its last pod left, renders for those nodes only (nothing at all
// when the zone's own node is not one of them) and remembers the set it
// rendered. What contributes to the network's rows (its pods' ports,
// services, connects, links between primary networks) follows that
// remembered set, so they never wait for rows the network left out on
// purpose, and a pod's plan costs no listing of its network's pods. A
// change of the set replans them.

// activeSets remembers the node set each network was last rendered with,
// and which networks a plan is being made of (their set may be about to
// change: an event meanwhile must replan them).
type activeSets struct {
	mu       sync.Mutex
	set      map[string]activity.Nodes
	planning map[string]int
	// waiting are, by network, the nodes its last plan left out only
	// because they hold no slice of it yet (withSlices).
	waiting map[string]activity.Nodes
}

// lookup returns the network's set, whether it is known, and whether a
// plan of the network is under way.
func (a *activeSets) lookup(network string) (s activity.Nodes, known, planning bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, known = a.set[network]
	return s, known, a.planning[network] > 0
}

func (a *activeSets) get(network string) (activity.Nodes, bool) {
	s, ok, _ := a.lookup(network)
	return s, ok
}

// begin marks a plan of the network under way until the returned end is
// called (after put).
func (a *activeSets) begin(network string) (end func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.planning == nil {
		a.planning = map[string]int{}
	}
	a.planning[network]++
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.planning[network]--; a.planning[network] <= 0 {
			delete(a.planning, network)
		}
	}
}

// put records the network's set, and the nodes left out of it waiting
// for their slice.
func (a *activeSets) put(network string, s, waiting activity.Nodes) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.set == nil {
		a.set, a.waiting = map[string]activity.Nodes{}, map[string]activity.Nodes{}
	}
	a.set[network] = s
	if waiting.Len() == 0 {
		delete(a.waiting, network)
	} else {
		a.waiting[network] = waiting
	}
}

// waits reports whether the network's last plan left node out waiting
// for its slice.
func (a *activeSets) waits(network, node string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.waiting[network]
	return ok && w.Has(node)
}

func (a *activeSets) forget(network string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.set, network)
	delete(a.waiting, network)
}

// dynamic reports whether n is rendered only where it is used.
func (r *Reconciler) dynamic(n topology.Network) bool {
	return !r.RenderEverywhere && !n.IsDefault() && n.IsPrimary()
}

// computeActive returns the nodes n is rendered for now (activity.Of, with
// the grace period, withSlices), those left out waiting for their slice,
// and how long until a node the grace period keeps leaves (0: none). Only
// a network's plan calls it.
func (r *Reconciler) computeActive(ctx context.Context, n topology.Network, nodes []nodeinfo.Info) (set, waiting activity.Nodes, graceLeft time.Duration, err error) {
	if !r.dynamic(n) {
		return activity.Everywhere(), activity.On(), 0, nil
	}
	cur, err := activity.Of(zoneView{ctx: ctx, r: r}, n.Name)
	if err != nil {
		return activity.Nodes{}, activity.Nodes{}, 0, err
	}
	set, graceLeft = r.grace.Apply(n.Name, cur, time.Now())
	set, waiting = withSlices(n, set, nodes)
	return set, waiting, graceLeft, nil
}

// withSlices leaves out of a Layer3 network's set the nodes that hold no
// slice of it: cluster-manager gives a node its slice when the node starts
// using the network (docs/allocation.md "Slices only where used"), and the
// Node's update then plans the network again with it, instead of every
// zone reporting the node left out meanwhile. Nodes not in nodes (not
// parsed) stay, to be reported. Every node stays every node while every
// node has its slice; until then (a node-port Service just came) it is
// the nodes that have one.
func withSlices(n topology.Network, set activity.Nodes, nodes []nodeinfo.Info) (kept, waiting activity.Nodes) {
	waiting = activity.On()
	if n.Topology != netconf.TopologyLayer3 {
		return set, waiting
	}
	lacks := map[string]bool{}
	var have []string
	for _, node := range nodes {
		if !set.Has(node.Name) {
			continue
		}
		if len(node.Subnets[n.Name]) == 0 {
			lacks[node.Name] = true
		} else {
			have = append(have, node.Name)
		}
	}
	if len(lacks) == 0 {
		return set, waiting
	}
	wait := make([]string, 0, len(lacks))
	for name := range lacks {
		wait = append(wait, name)
	}
	if set.All() {
		return activity.On(have...), activity.On(wait...)
	}
	var keep []string
	for _, name := range set.Names() {
		if !lacks[name] {
			keep = append(keep, name)
		}
	}
	return activity.On(keep...), activity.On(wait...)
}

// activeNodes returns the nodes n is rendered on: the set of its last plan,
// or, before its first plan in this process, the set it would have now.
func (r *Reconciler) activeNodes(ctx context.Context, n topology.Network) (activity.Nodes, error) {
	if !r.dynamic(n) {
		return activity.Everywhere(), nil
	}
	if s, ok := r.active.get(n.Name); ok {
		return s, nil
	}
	cur, err := activity.Of(zoneView{ctx: ctx, r: r}, n.Name)
	if err != nil {
		return activity.Nodes{}, err
	}
	nodes, _, err := r.nodes.nodes(ctx, r.Client)
	if err != nil {
		return activity.Nodes{}, err
	}
	cur, _ = withSlices(n, cur, nodes)
	return cur, nil
}

// zoneView answers activity.Of from the controller's caches.
type zoneView struct {
	ctx context.Context
	r   *Reconciler
}

func (v zoneView) NetworkNamespaces(network string) ([]string, error) {
	return v.r.networkNamespaces(v.ctx, network)
}

// Connected returns the networks a connect joins the network to, for pods
// or for services.
func (v zoneView) Connected(network string) ([]string, error) {
	n, exists, err := v.r.network(v.ctx, network)
	if err != nil || !exists {
		return nil, err
	}
	var out []string
	for _, t := range []v1.ConnectivityType{v1.PodNetwork, v1.ClusterIPServiceNetwork} {
		peers, err := v.r.connectedNetworks(v.ctx, n, t)
		if err != nil {
			return nil, err
		}
		for _, p := range peers {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

func (v zoneView) NamespacePods(namespace string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := v.r.Client.List(v.ctx, &list, client.InNamespace(namespace))
	return list.Items, err
}

func (v zoneView) NamespaceServices(namespace string) ([]corev1.Service, error) {
	var list corev1.ServiceList
	err := v.r.Client.List(v.ctx, &list, client.InNamespace(namespace))
	return list.Items, err
}

func (v zoneView) NamespaceEgressNodes(namespace string) ([]string, error) {
	if v.r.noEgressIPs {
		return nil, nil
	}
	return activity.NamespaceEgressNodes(v.ctx, v.r.Client, namespace)
}

// egressActivityKeys returns the networks of the namespaces an EgressIP
// selects, before and after a change that moves where they are used
// (activity.EgressChange).
//
// A change that only adds nodes (an object created, an IP given to a
// node) requeues a network only when a node it adds is not in the set the
// network was last rendered with: 500 EgressIPs of one namespace plan its
// network once, not 500 times. A change that may remove a node requeues
// every network it touches (the plan decides, with the grace period).
func (r *Reconciler) egressActivityKeys(ctx context.Context, before, after *v1.EgressIP) []feature.Key {
	if r.RenderEverywhere {
		return nil
	}
	nodes, assignable := activity.EgressChange(before, after)
	if len(nodes) == 0 && !assignable {
		return nil
	}
	if !onlyAdds(before, after) {
		return r.egressNetworkKeys(ctx, before, after)
	}
	if assignable {
		more, err := activity.AssignableNodes(ctx, r.Client)
		if err != nil {
			return r.egressNetworkKeys(ctx, before, after)
		}
		nodes = append(nodes, more...)
	}
	var out []feature.Key
	for _, k := range r.egressNetworkKeys(ctx, after) {
		set, known, planning := r.active.lookup(k.Network)
		if !known || planning {
			out = append(out, k)
			continue
		}
		for _, n := range nodes {
			if !set.Has(n) {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

// onlyAdds reports whether an EgressIP's change can only add nodes to
// where its namespaces' networks are used: it was created, or it kept its
// namespace selector and every node that held one of its IPs still does.
func onlyAdds(before, after *v1.EgressIP) bool {
	if after == nil {
		return false
	}
	if before == nil {
		return true
	}
	if nodes, assignable := activity.EgressChange(before, after); assignable {
		return false // its selector changed
	} else if len(nodes) == 0 {
		return true
	}
	for _, b := range before.Status.Items {
		if !slices.ContainsFunc(after.Status.Items, func(a v1.EgressIPStatusItem) bool { return a.Node == b.Node }) {
			return false
		}
	}
	return true
}

// assignableActivityKeys returns the networks of every namespace an
// EgressIP selects when a node comes, goes, or gains or loses the
// egress-assignable label (those networks are used on every such node).
func (r *Reconciler) assignableActivityKeys(ctx context.Context, before, after *corev1.Node) []feature.Key {
	has := func(n *corev1.Node) bool {
		if n == nil {
			return false
		}
		_, ok := n.Labels[v1.EgressAssignableLabel]
		return ok
	}
	if r.RenderEverywhere || has(before) == has(after) {
		return nil
	}
	var list v1.EgressIPList
	if err := r.Client.List(ctx, &list); err != nil {
		return r.allNetworkKeys(ctx)
	}
	eips := make([]*v1.EgressIP, len(list.Items))
	for i := range list.Items {
		eips[i] = &list.Items[i]
	}
	return r.egressNetworkKeys(ctx, eips...)
}

// namespaceEgressKeys returns a namespace's networks when its labels
// change and an EgressIP selects it before or after: its networks are
// used, or no longer, on the EgressIP's nodes.
func (r *Reconciler) namespaceEgressKeys(ctx context.Context, before, after *corev1.Namespace) []feature.Key {
	if r.RenderEverywhere {
		return nil
	}
	ns := after
	if ns == nil {
		ns = before
	}
	if ns == nil {
		return nil
	}
	var list v1.EgressIPList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return r.allNetworkKeys(ctx)
	}
	selected := func(n *corev1.Namespace) bool {
		return n != nil && slices.ContainsFunc(list.Items, func(e v1.EgressIP) bool { return kubeobj.Selects(&e.Spec.NamespaceSelector, n.Labels) })
	}
	if !selected(before) && !selected(after) {
		return nil
	}
	var out []feature.Key
	for _, name := range r.namespaceNetworks(ctx, ns.Name) {
		out = append(out, feature.NetworkKey(name))
	}
	return out
}

// allNetworkKeys returns every network's key: what a requeue falls back
// to when it cannot tell which networks an event concerns.
func (r *Reconciler) allNetworkKeys(ctx context.Context) []feature.Key {
	names, err := r.Networks(ctx)
	if err != nil {
		return nil
	}
	out := make([]feature.Key, len(names))
	for i, n := range names {
		out[i] = feature.NetworkKey(n)
	}
	return out
}

// egressNetworkKeys returns the network keys of the namespaces the
// EgressIPs (nil ones skipped) select; every network's when they cannot
// be listed.
func (r *Reconciler) egressNetworkKeys(ctx context.Context, eips ...*v1.EgressIP) []feature.Key {
	namespaces, err := activity.SelectedNamespaces(ctx, r.Client, eips...)
	if err != nil {
		return r.allNetworkKeys(ctx)
	}
	seen := map[string]bool{}
	var out []feature.Key
	for _, ns := range namespaces {
		for _, name := range r.namespaceNetworks(ctx, ns) {
			if !seen[name] {
				seen[name] = true
				out = append(out, feature.NetworkKey(name))
			}
		}
	}
	return out
}

// activityKeys returns the networks a pod's event may add its node to or
// remove it from (before is the pod as it was, nil on a create; after as it
// is, nil on a delete): the networks of its namespace and those connected
// to them, each only when the node is the zone's own or the network is
// rendered here, and only when the pod's use of the node changes what the
// network was rendered with (a pod stopping on a node of the set may have
// been the last there: the plan decides, with the grace period).
func (r *Reconciler) activityKeys(ctx context.Context, before, after *corev1.Pod) []feature.Key {
	if r.RenderEverywhere {
		return nil
	}
	type use struct {
		node string
		on   bool
	}
	var changes []use
	uses := func(p *corev1.Pod) (string, bool) {
		if p == nil || !activity.UsesNode(p) {
			return "", false
		}
		return p.Spec.NodeName, true
	}
	bn, bOn := uses(before)
	an, aOn := uses(after)
	if bOn && aOn && bn == an {
		return nil // it goes on using the same node
	}
	if bOn {
		changes = append(changes, use{bn, false})
	}
	if aOn {
		changes = append(changes, use{an, true})
	}
	if len(changes) == 0 {
		return nil
	}
	pod := after
	if pod == nil {
		pod = before
	}
	local, ok, err := r.localNode(ctx)
	if err != nil || !ok {
		return nil
	}
	networks := r.namespaceNetworks(ctx, pod.Namespace)
	var out []feature.Key
	for _, name := range networks {
		set, known, planning := r.active.lookup(name)
		if !known || planning {
			// A plan under way may have read the pods before this
			// change: the network is planned again after it.
			out = append(out, feature.NetworkKey(name))
			continue
		}
		if set.All() {
			continue // pods do not change it
		}
		for _, c := range changes {
			if c.node != local.Name && !set.Has(local.Name) {
				continue // not rendered here, and not about this zone's node
			}
			if set.Has(c.node) != c.on {
				out = append(out, feature.NetworkKey(name))
				break
			}
		}
	}
	return out
}

// namespaceNetworks returns the user-defined networks of a namespace's NADs
// and the networks connected to them (whose activity its pods decide too).
func (r *Reconciler) namespaceNetworks(ctx context.Context, namespace string) []string {
	nads, err := podnet.NamespaceNADs(ctx, r.Client, namespace)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	for _, nad := range nads {
		name, ok := netconf.NetworkName(nad.Spec.Config)
		if !ok {
			continue
		}
		add(name)
		peers, err := zoneView{ctx: ctx, r: r}.Connected(name)
		if err != nil {
			continue
		}
		for _, p := range peers {
			add(p)
		}
	}
	return out
}

// serviceActivityKeys returns the networks of a service's namespace when
// the service starts or stops needing every node (activity.NeedsEveryNode).
func (r *Reconciler) serviceActivityKeys(ctx context.Context, before, after *corev1.Service) []feature.Key {
	if r.RenderEverywhere {
		return nil
	}
	needs := func(s *corev1.Service) bool { return s != nil && activity.NeedsEveryNode(s) }
	if needs(before) == needs(after) {
		return nil
	}
	s := after
	if s == nil {
		s = before
	}
	nads, err := podnet.NamespaceNADs(ctx, r.Client, s.Namespace)
	if err != nil {
		return nil
	}
	var out []feature.Key
	for _, nad := range nads {
		if name, ok := netconf.NetworkName(nad.Spec.Config); ok {
			out = append(out, feature.NetworkKey(name))
		}
	}
	return out
}

// renderedHere keeps the networks of a namespace's scope that are rendered
// on the zone's node.
func (r *Reconciler) renderedHere(ctx context.Context, sc feature.Scope) (feature.Scope, error) {
	out := sc
	out.Nets = nil
	for _, n := range sc.Nets {
		here, err := r.usedOn(ctx, n.Network, sc.Local.Name)
		if err != nil {
			return feature.Scope{}, err
		}
		if here {
			out.Nets = append(out.Nets, n)
		}
	}
	return out, nil
}

// usedOn reports whether n is rendered on node (activeNodes).
func (r *Reconciler) usedOn(ctx context.Context, n topology.Network, node string) (bool, error) {
	active, err := r.activeNodes(ctx, n)
	if err != nil {
		return false, err
	}
	return active.Has(node), nil
}

// peersHere keeps the networks rendered on node (their switches are here).
func (r *Reconciler) peersHere(ctx context.Context, nets []topology.Network, node string) ([]topology.Network, error) {
	var out []topology.Network
	for _, n := range nets {
		active, err := r.activeNodes(ctx, n)
		if err != nil {
			return nil, err
		}
		if active.Has(node) {
			out = append(out, n)
		}
	}
	return out, nil
}

// connectActivityKeys returns the networks of a connect, before and after a
// change, when what it joins changes (each is then used where its peers'
// pods run).
func (r *Reconciler) connectActivityKeys(ctx context.Context, old, cur *v1.ClusterNetworkConnect) []feature.Key {
	if r.RenderEverywhere || connect.View(old, v1.PodNetwork)+"|"+connect.View(old, v1.ClusterIPServiceNetwork) == connect.View(cur, v1.PodNetwork)+"|"+connect.View(cur, v1.ClusterIPServiceNetwork) {
		return nil
	}
	ids := map[int]bool{}
	for _, c := range []*v1.ClusterNetworkConnect{old, cur} {
		if c == nil {
			continue
		}
		if a, ok := connect.Active(c); ok {
			for _, k := range a.Subnets.Keys() {
				ids[k.ID] = true
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	byID, err := r.networksByID(ctx)
	if err != nil {
		return nil
	}
	var out []feature.Key
	for id := range ids {
		if name, ok := byID[id]; ok {
			out = append(out, feature.NetworkKey(name))
		}
	}
	return out
}

// renderedCount counts the networks planned since start by whether they
// are rendered on the zone's node (ovn_udn_zone_networks).
// It reads no API object (a scrape must not wait for the caches): the
// zone's node is the one the plans last found.
func (r *Reconciler) renderedCount() (rendered, notUsed int) {
	local := r.localName.Load()
	if local == nil {
		return 0, 0
	}
	r.active.mu.Lock()
	defer r.active.mu.Unlock()
	for _, s := range r.active.set {
		if s.Has(*local) {
			rendered++
		} else {
			notUsed++
		}
	}
	return rendered, notUsed
}
