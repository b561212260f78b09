// Package zone is the zone controller: one per node (OVN interconnect zone),
// it keeps the zone's Northbound equal to what the row builders compute for
// every network (NetworkAttachmentDefinitions with their allocation, plus the
// built-in default network; internal/rows/topology), every pod's ports, Service
// (internal/rows/services), NetworkPolicy (internal/rows/netpol),
// ClusterNetworkConnect (internal/rows/connectrouter) and link between a
// namespace's primary networks (internal/rows/primarylinks), and registers the
// other zones' chassis in the zone's Southbound.
//
// It is a host plus features (internal/zone/feature): setup.go lists the
// features, each of which declares its watches, keys, shared columns and
// dependents next to its code. A reconcile key is a typed feature.Key,
// whose String is the OVSDB owner of the rows it writes; each key's rows
// are written in one transaction, and a reconcile with nothing to change
// writes nothing.
package zone

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/northdgate"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/connects"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressfirewalls"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressips"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressqoses"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
	"github.com/ovn-udn/ovn-udn/internal/zone/links"
	"github.com/ovn-udn/ovn-udn/internal/zone/podaddr"
	"github.com/ovn-udn/ovn-udn/internal/zone/policies"
	"github.com/ovn-udn/ovn-udn/internal/zone/services"
	"github.com/ovn-udn/ovn-udn/internal/zone/vms"
)

// NBTables are the Northbound tables a zone controller writes, referenced
// tables first.
var NBTables = []model.Model{
	&nbdb.BFD{}, &nbdb.AddressSet{}, &nbdb.LoadBalancer{}, &nbdb.LoadBalancerGroup{}, &nbdb.GatewayChassis{}, &nbdb.NAT{}, &nbdb.LogicalRouterStaticRoute{}, &nbdb.LogicalRouterPolicy{}, &nbdb.ACL{}, &nbdb.QoS{},
	&nbdb.LogicalRouterPort{}, &nbdb.LogicalSwitchPort{}, &nbdb.PortGroup{}, &nbdb.LogicalRouter{}, &nbdb.LogicalSwitch{},
}

// NBTableNames are the names of NBTables (for client indexes and monitors).
// The zone's Northbound client holds all of them in its own monitor's view
// (ovsdb.ClientOptions.Views) instead of libovsdb's cache: rows read
// without a copy, stored once.
var NBTableNames = []string{
	nbdb.BFDTable, nbdb.AddressSetTable, nbdb.LoadBalancerTable, nbdb.LoadBalancerGroupTable, nbdb.GatewayChassisTable, nbdb.NATTable, nbdb.LogicalRouterStaticRouteTable, nbdb.LogicalRouterPolicyTable, nbdb.ACLTable, nbdb.QoSTable,
	nbdb.LogicalRouterPortTable, nbdb.LogicalSwitchPortTable, nbdb.PortGroupTable, nbdb.LogicalRouterTable, nbdb.LogicalSwitchTable,
}

// NewSyncer returns the Syncer of a zone's Northbound over nb: NBTables,
// with the set columns the features contribute to declared shared
// (feature.Sharer), and the owners of the features that declare none
// never contributing: their plans, most of a zone's, need not scan every
// shared column for members to withdraw.
func NewSyncer(nb libovsdb.Client) (*ovsdbsync.Syncer, error) {
	s, err := ovsdbsync.New(nb, NBTables...)
	if err != nil {
		return nil, err
	}
	for _, f := range features(nil, nil) {
		sharer, ok := f.(feature.Sharer)
		if !ok {
			for _, k := range f.Kinds() {
				s.NeverContributes(k.Prefix())
			}
			continue
		}
		for _, sh := range sharer.Shares() {
			if err := s.ShareRows(sh.Table, sh.Column, sh.Rows); err != nil {
				return nil, fmt.Errorf("feature %s: %w", f.Name(), err)
			}
		}
	}
	return s, nil
}

// Reconciler renders one zone.
type Reconciler struct {
	Zone    string
	Cluster config.Cluster
	// Gateway is the gateway routers' default-route policy (nil: default).
	Gateway *config.Gateway
	// DisableNetworkConnect leaves ClusterNetworkConnects alone.
	DisableNetworkConnect bool
	// RenderEverywhere renders every network on every node; by default a
	// primary user-defined network is rendered only on the nodes where it
	// is used (activity.go).
	RenderEverywhere bool
	// DNSServer resolves EgressFirewall dnsName rules ("": none).
	DNSServer string
	Client    client.Client // Kubernetes, cached
	NB, SB    libovsdb.Client
	nbWriter  libovsdb.Client
	Syncer    *ovsdbsync.Syncer
	// gate orders writes that create or delete datapaths (nil: no
	// ordering, as in tests without northd).
	gate     *northdgate.Gate
	Recorder record.EventRecorder
	// ReconcileTimeout bounds one reconcile (an unreachable database fails it,
	// and the key is retried with backoff).
	ReconcileTimeout time.Duration

	nodes  nodeCache
	ipam   podaddr.IPAM
	clocks clocks
	resync chan event.GenericEvent
	// resyncs counts the periodic resyncs requested (Options.ResyncPeriod).
	resyncs atomic.Int64
	// wholePlans counts networks planned whole (every row, not only remote
	// nodes' parts), written or not: what a resync does to each network.
	wholePlans atomic.Int64
	// queue takes keys from outside the watches (feature.Queue).
	queue keyQueue
	// features are the zone's kinds of work (setup.go), byKind who
	// reconciles each kind.
	host         *feature.Host
	links        *links.Feature
	connects     *connects.Feature
	services     *services.Feature
	policies     *policies.Feature
	features     []feature.Feature
	byKind       map[feature.Kind]feature.Feature
	featuresOnce sync.Once
	// unregister removes the reconciler's metric collectors (Close).
	unregister []func()
	// localName is the zone's node as localNode last found it (metrics
	// read it at scrape time without reading the API).
	localName atomic.Pointer[string]
	// grace keeps a node in a network's set for a while after its last
	// pod left (unless RenderEverywhere); active is the set each network was
	// last rendered with.
	grace  activity.Grace
	active activeSets
	// noEgressIPs: the EgressIP CRD is not installed (found when the
	// watches are set up); otherwise egress nodes count in where a network
	// is used.
	noEgressIPs bool
	egressips   *egressips.Feature
	firewalls   *egressfirewalls.Feature
	qoses       *egressqoses.Feature
	vms         *vms.Feature
	// whole remembers each network's input when it was last planned
	// whole, so a change of remote nodes alone plans only their rows.
	whole wholePlans
	mu    sync.Mutex
	noted map[string]string // what was last reported per (network, node), to emit Events once
	// running serialises reconciles of one key: controller-runtime never
	// runs a key twice at once, but a direct call (a test's resync) may
	// meet the controller's own worker on the same key.
	running keyLocks
}

// keyLocks is one mutex per key, held only while some reconcile of the key
// runs or waits (pod keys come and go: none is kept).
type keyLocks struct {
	mu sync.Mutex
	m  map[feature.Key]*keyLock
}

type keyLock struct {
	sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyLocks) lock(key feature.Key) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[feature.Key]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.refs++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// Transactions is how many transactions the reconciler has committed (NB and SB).
func (r *Reconciler) Transactions() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.Syncer.Transactions()
	for _, f := range r.features {
		if c, ok := f.(interface{ Transactions() int64 }); ok {
			n += c.Transactions()
		}
	}
	return n
}

// Reconcile implements reconcile.TypedReconciler[Key]: one key's work, by
// its Kind.
func (r *Reconciler) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	timeout := r.ReconcileTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer r.running.lock(key)()
	r.featuresOnce.Do(r.setFeatures)
	f, ok := r.byKind[key.Kind]
	if !ok {
		log.FromContext(ctx).Info("key of no feature dropped", "key", key.String(), "zone", r.Zone)
		return ctrl.Result{}, nil
	}
	return f.Reconcile(ctx, key)
}

// reconcileNetwork renders one network into the zone.
func (r *Reconciler) reconcileNetwork(ctx context.Context, name string) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("network", name, "zone", r.Zone)
	defer r.active.begin(name)()
	in, err := r.input(ctx, name, false)
	d := in.out
	var held *feature.NotRendered
	if err == nil && d.exists {
		var parts *ovsdbsync.Plan
		if parts, err = r.syncRemoteParts(ctx, name, in); err != nil {
			return ctrl.Result{}, fmt.Errorf("network %s: %w", name, err)
		}
		if parts != nil {
			// Only remote nodes changed: their rows alone were planned.
			if !parts.Empty() {
				logger.Info("synced network's remote nodes", "inserted", parts.Inserted, "updated", parts.Updated, "deleted", parts.Deleted, "active", d.active.String())
			}
			return r.synced(ctx, name, d, parts, true)
		}
		d, err = r.render(ctx, name, in)
	}
	if errors.As(err, &held) {
		// A malformed or not yet allocated network is never rendered half: its
		// current rows stay until it can be rendered again.
		logger.Info("network not rendered", "reason", held.Reason)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := r.gate.Sync(ctx, r.Syncer, feature.NetworkKey(name).String(), d.rows)
	if err != nil {
		r.whole.forget(name)
		return ctrl.Result{}, fmt.Errorf("network %s: %w", name, err)
	}
	r.wholePlans.Add(1)
	if d.exists && len(d.rows) > 0 && !d.waitingForBFD {
		r.whole.remember(r.Zone, in.Input)
	} else {
		r.whole.forget(name)
	}
	if !p.Empty() {
		logger.Info("synced network", "inserted", p.Inserted, "updated", p.Updated, "deleted", p.Deleted, "active", d.active.String())
	}
	return r.synced(ctx, name, d, p, false)
}

// synced does what follows a network's plan p: the nodes it is rendered
// for are recorded, and what depends on its rows or its nodes is planned
// again. A plan of remote nodes' parts alone (parts) inserted no row
// anything contributes to: only a change of its nodes sets that off.
func (r *Reconciler) synced(ctx context.Context, name string, d desiredNetwork, p *ovsdbsync.Plan, parts bool) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("network", name, "zone", r.Zone)
	prev, known := r.active.get(name)
	moved := known && !prev.Equal(d.active)
	if d.exists {
		r.active.put(name, d.active, d.waiting)
	} else {
		r.active.forget(name)
		r.grace.Forget(name)
	}
	if moved {
		logger.Info("network's nodes changed", "before", prev.String(), "now", d.active.String())
	}
	// Rows others contribute to came, or the nodes it is rendered for
	// changed: what depends on them follows (after put: their plans read
	// the set).
	change := feature.NetworkChange{Network: name, Exists: d.exists, Known: known, Before: prev, After: d.active, Moved: moved,
		RowsChanged: !parts && p.Inserted > 0 || moved && p.Deleted > 0}
	if change.RowsChanged && p.Inserted > 0 {
		r.observeNetworkReady(ctx, name)
	}
	for _, f := range r.features {
		if dep, ok := f.(feature.NetworkDependent); ok {
			dep.NetworkChanged(ctx, change)
		}
	}
	if name == nodeinfo.DefaultNetwork && !parts && !p.Empty() && r.bfdOn(ctx) {
		// Its BFD sessions may have just been made: the other networks'
		// default routes refer to them (topology/uplinks.go).
		r.replanNetworks(ctx)
	}
	var res ctrl.Result
	if d.waitingForBFD {
		res.RequeueAfter = 2 * time.Second
	}
	if d.graceLeft > 0 && (res.RequeueAfter == 0 || d.graceLeft < res.RequeueAfter) {
		// A node kept by the grace period leaves then.
		res.RequeueAfter = d.graceLeft + 10*time.Millisecond
	}
	return res, nil
}

// bfdOn reports whether the zone's node watches its next hops with BFD
// (the zone's policy with the node's override).
func (r *Reconciler) bfdOn(ctx context.Context) bool {
	local, ok, err := r.localNode(ctx)
	if err != nil || !ok {
		return false
	}
	return topology.UplinkPolicy(config.GatewayOrDefault(r.Gateway), local.Gateway).BFD
}

// replanNetworks asks for every user-defined network to be planned again.
func (r *Reconciler) replanNetworks(ctx context.Context) {
	names, err := r.Networks(ctx)
	if err != nil {
		return
	}
	for _, n := range names {
		if n == nodeinfo.DefaultNetwork {
			continue
		}
		r.queue.Add(feature.NetworkKey(n))
	}
}

// sharedBFD returns the UUIDs of the local node's BFD rows (the default
// network's gateway router's sessions, on its external port of each uplink)
// by next hop. Without a Northbound (render) they are the rows' IDs in the
// default network's rendering (topology.BFDRowID), when the node's policy
// has BFD on.
func (r *Reconciler) sharedBFD(ctx context.Context, local nodeinfo.Info) (map[netip.Addr]string, error) {
	if local.Gateway == nil {
		return nil, nil
	}
	ports := map[string]bool{}
	def := topology.DefaultNetwork(r.Cluster)
	for i, u := range local.Gateway.Uplinks() {
		ports[def.UplinkExternalPort(local.Name, i, u.PhysicalNetwork)] = true
	}
	if r.NB == nil {
		if !topology.UplinkPolicy(config.GatewayOrDefault(r.Gateway), local.Gateway).BFD {
			return nil, nil
		}
		out := map[netip.Addr]string{}
		for i, u := range local.Gateway.Uplinks() {
			for _, hop := range u.NextHops {
				out[hop] = topology.BFDRowID(def.UplinkExternalPort(local.Name, i, u.PhysicalNetwork), hop)
			}
		}
		return out, nil
	}
	rows, err := ovsdb.List(ctx, r.NB, func(b *nbdb.BFD) bool { return ports[b.LogicalPort] })
	if err != nil {
		return nil, err
	}
	out := map[netip.Addr]string{}
	for _, b := range rows {
		if a, err := netip.ParseAddr(b.DstIP); err == nil {
			out[a] = b.UUID
		}
	}
	return out, nil
}

// networkNamespaces returns the namespaces holding a user-defined network's
// NADs.
func (r *Reconciler) networkNamespaces(ctx context.Context, network string) ([]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.MatchingFields{feature.NetworkNameIndex: network}); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(nads.Items))
	for _, n := range nads.Items {
		out = append(out, n.Namespace)
	}
	return out, nil
}

// Desired returns the Northbound rows the network named name should have in
// the zone, from the Kubernetes objects the reconciler's client reads: none
// when the network is gone, the zone has no node or the network is not
// active on it, a *feature.NotRendered error when the rows must stay as they are.
// The rows carry stable IDs in their UUID fields (see ovsdbsync).
// `ovn-udn render` calls it too.
//
// Desired includes the ports of the network's pods, which the zone writes
// apart (each pod's own rows, podports.go): it is the zone's Northbound as
// a whole.
func (r *Reconciler) Desired(ctx context.Context, name string) ([]model.Model, error) {
	d, err := r.desired(ctx, name, true)
	return d.rows, err
}

// DesiredNetwork is Desired without the pods' ports: the rows the network's
// owner (NetworkKey) writes.
func (r *Reconciler) DesiredNetwork(ctx context.Context, name string) ([]model.Model, error) {
	d, err := r.desired(ctx, name, false)
	return d.rows, err
}

// desiredNetwork is a network's rendering in the zone.
type desiredNetwork struct {
	rows   []model.Model
	exists bool
	// active are the nodes it is rendered for, graceLeft how long until
	// one kept by the grace period leaves (0: none).
	active    activity.Nodes
	graceLeft time.Duration
	// waiting are the nodes left out of active until they hold a slice.
	waiting activity.Nodes
	// waitingForBFD: some default route goes without the BFD session it
	// should refer to (not made yet by the default network).
	waitingForBFD bool
}

// desired is the network's rows (with its pods' ports when withPorts).
func (r *Reconciler) desired(ctx context.Context, name string, withPorts bool) (desiredNetwork, error) {
	in, err := r.input(ctx, name, withPorts)
	if err != nil || !in.out.exists {
		return in.out, err
	}
	return r.render(ctx, name, in)
}

// networkInput is what a network's rendering in the zone reads, before it
// is rendered.
type networkInput struct {
	topology.Input
	// out is the rendering without its rows yet: exists, and the nodes it
	// is rendered for.
	out desiredNetwork
	// left are the nodes left out so far (those whose annotations do not
	// parse, among the active ones).
	left map[string]bool
	// bad are the nodes whose annotations do not parse.
	bad map[string]error
}

// renders reports whether the network is rendered for node: the node
// exists, its annotations parse, and the network is active on it (unless
// it was left out for what its rendering found).
func (in networkInput) renders(node string) bool {
	return !in.left[node] && in.Active.Has(node) &&
		slices.ContainsFunc(in.Nodes, func(n nodeinfo.Info) bool { return n.Name == node })
}

// input reads what the network's rendering needs; out.exists is false when
// the network is gone.
func (r *Reconciler) input(ctx context.Context, name string, withPorts bool) (networkInput, error) {
	n, exists, err := r.network(ctx, name)
	if err != nil {
		return networkInput{}, &feature.NotRendered{Reason: err.Error()}
	}
	if !exists {
		r.forgetNetwork(ctx, name)
		return networkInput{}, nil
	}
	nodes, bad, err := r.nodes.nodes(ctx, r.Client)
	if err != nil {
		return networkInput{}, err
	}
	active, waiting, graceLeft, err := r.computeActive(ctx, n, nodes)
	if err != nil {
		return networkInput{}, err
	}
	out := desiredNetwork{exists: true, active: active, waiting: waiting, graceLeft: graceLeft}
	left := map[string]bool{}
	for node, why := range bad {
		if active.Has(node) {
			r.note(ctx, name, node, why.Error())
			left[node] = true
		}
	}
	keys, err := r.networkKeys(ctx, name)
	if err != nil {
		return networkInput{}, err
	}
	var ports []topology.Port
	var shared map[netip.Addr]string
	if local, ok := r.localIn(nodes); ok && active.Has(local.Name) {
		if withPorts {
			if ports, err = r.ports(ctx, n, keys, local.Name); err != nil {
				return networkInput{}, err
			}
		}
		if shared, err = r.sharedBFD(ctx, local); err != nil {
			return networkInput{}, err
		}
	}
	in := topology.Input{Network: n, Nodes: nodes, Zone: r.Zone, Cluster: r.Cluster, Gateway: r.Gateway,
		SharedBFD: shared, Ports: ports, Active: active}
	return networkInput{Input: in, out: out, left: left, bad: bad}, nil
}

// render renders the network whole from its input.
func (r *Reconciler) render(ctx context.Context, name string, in networkInput) (desiredNetwork, error) {
	out := in.out
	res, err := topology.Render(in.Input)
	switch {
	case errors.Is(err, topology.ErrNotReady) && !r.hasLocalNode(in.Nodes, in.bad):
		return out, nil // the zone has no node any more: nothing to render
	case err != nil:
		return desiredNetwork{}, &feature.NotRendered{Reason: err.Error()}
	}
	for _, p := range res.Skipped {
		r.note(ctx, name, p.Node, p.Reason)
		in.left[p.Node] = true
	}
	r.resolved(ctx, name, func(node string) bool { return in.left[node] }, in.renders)
	out.rows, out.waitingForBFD = res.Rows, len(res.WaitingForBFD) > 0
	return out, nil
}

// hasLocalNode reports whether a node of the zone exists (parsed or not).
func (r *Reconciler) hasLocalNode(nodes []nodeinfo.Info, bad map[string]error) bool {
	for _, n := range nodes {
		if n.Zone == r.Zone {
			return true
		}
	}
	for name := range bad {
		if name == r.Zone {
			return true
		}
	}
	return false
}

// network returns the network named name: the default network, or the one its
// NADs define (exists is false when no NAD carries it any more). NADs of one
// network that disagree, malformed configs and missing allocation are errors.
func (r *Reconciler) network(ctx context.Context, name string) (topology.Network, bool, error) {
	if name == nodeinfo.DefaultNetwork {
		return topology.DefaultNetwork(r.Cluster), true, nil
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.MatchingFields{feature.NetworkNameIndex: name}); err != nil {
		return topology.Network{}, false, err
	}
	all := make([]*nadv1.NetworkAttachmentDefinition, 0, len(nads.Items))
	for i := range nads.Items {
		all = append(all, &nads.Items[i])
	}
	// NADs that claim a name belonging to another network object are never
	// part of the network (cluster-manager reports them on the NAD).
	admitted, refused := netconf.Admit(all)
	for _, x := range refused {
		log.FromContext(ctx).V(1).Info("NAD left out of its network", "nad", x.NAD.Namespace+"/"+x.NAD.Name, "reason", x.Reason.Error())
	}
	if len(admitted) == 0 {
		for _, x := range refused {
			if netconf.Managed(x.NAD) && metav1.GetControllerOf(x.NAD) == nil {
				// cluster-manager is putting its owner reference back: the
				// network's rows stay as they are meanwhile.
				return topology.Network{}, false, fmt.Errorf("NAD %s/%s: %v", x.NAD.Namespace, x.NAD.Name, x.Reason)
			}
		}
		return topology.Network{}, false, nil
	}
	var first *netconf.NetConf
	var id int
	var keys []int
	for _, nad := range admitted {
		c, err := netconf.Parse(nad)
		if err != nil || c == nil {
			r.Recorder.Eventf(nad, corev1.EventTypeWarning, "InvalidConfig", "zone %s cannot render the network: %v", r.Zone, err)
			return topology.Network{}, false, fmt.Errorf("NAD %s/%s: %v", nad.Namespace, nad.Name, err)
		}
		nid, nkeys, ok, err := netconf.ParseAllocation(nad.Annotations)
		if err != nil {
			return topology.Network{}, false, fmt.Errorf("NAD %s/%s: %v", nad.Namespace, nad.Name, err)
		}
		if !ok {
			return topology.Network{}, false, fmt.Errorf("NAD %s/%s has no network ID yet", nad.Namespace, nad.Name)
		}
		if first == nil {
			first, id, keys = c, nid, nkeys
			continue
		}
		c.NADName = first.NADName
		if *c != *first || nid != id {
			return topology.Network{}, false, fmt.Errorf("the NADs of network %s disagree (%s/%s differs)", name, nad.Namespace, nad.Name)
		}
	}
	n, err := topology.FromNetConf(first, id, keys, r.Cluster)
	return n, true, err
}

// Event reasons on nodes a zone leaves out of a network, and takes back.
const (
	ReasonNodeLeftOut     = "NodeLeftOutOfNetwork"
	ReasonNodeTakenBackIn = "NodeAddedToNetwork"
)

// note emits an Event on a node about a network once per distinct reason.
func (r *Reconciler) note(ctx context.Context, network, node, reason string) {
	key := network + "/" + node
	r.mu.Lock()
	if r.noted == nil {
		r.noted = map[string]string{}
	}
	same := r.noted[key] == reason
	r.noted[key] = reason
	r.mu.Unlock()
	if same {
		return
	}
	log.FromContext(ctx).Info("node left out of network", "network", network, "node", node, "reason", reason)
	r.Recorder.Eventf(&corev1.Node{ObjectMeta: objectMeta(node)}, corev1.EventTypeWarning, ReasonNodeLeftOut,
		"zone %s leaves the node out of network %s: %s", r.Zone, network, reason)
}

// resolved clears the notes (note) of a network's nodes that are no longer
// left out (left is false), and records, with a Normal Event, those of them
// the network now takes in (in is true). A noted node that is gone, or no
// longer uses the network, is not "added": its note goes without an Event.
func (r *Reconciler) resolved(ctx context.Context, network string, left, in func(node string) bool) {
	var back []string
	for _, node := range r.clearNotes(network, func(node string) bool { return !left(node) }) {
		if in(node) {
			back = append(back, node)
		} else {
			log.FromContext(ctx).V(1).Info("node no longer left out of network: gone or not using it", "network", network, "node", node)
		}
	}
	for _, node := range back {
		log.FromContext(ctx).Info("node added to network", "network", network, "node", node)
		r.Recorder.Eventf(&corev1.Node{ObjectMeta: objectMeta(node)}, corev1.EventTypeNormal, ReasonNodeTakenBackIn,
			"zone %s adds the node to network %s", r.Zone, network)
	}
}

// clearNotes drops the notes (note) of the network's nodes for which clear
// is true and returns those nodes, sorted.
func (r *Reconciler) clearNotes(network string, clear func(node string) bool) []string {
	prefix := network + "/"
	var out []string
	r.mu.Lock()
	for key := range r.noted {
		node, ok := strings.CutPrefix(key, prefix)
		if ok && !strings.Contains(node, "/") && clear(node) {
			delete(r.noted, key)
			out = append(out, node)
		}
	}
	r.mu.Unlock()
	slices.Sort(out)
	return out
}

// forgetNetwork drops what the zone holds of a network that is gone, so
// that a network created again under its name starts afresh: its notes
// (it reports its left-out nodes again), its clock (its time to its first
// rows is observed again) and its pods' address pools (it allocates with
// its own exclusions, not the old network's).
func (r *Reconciler) forgetNetwork(ctx context.Context, network string) {
	r.clearNotes(network, func(string) bool { return true })
	r.clocks.forgetNetwork(network)
	r.ipam.Forget(network, func() bool {
		_, exists, err := r.network(ctx, network)
		return err == nil && !exists
	})
}

// Keys returns every reconcile key the zone has now: each feature's
// (feature.Keyer), among them those whose rows only the zone's Northbound
// still holds.
func (r *Reconciler) Keys(ctx context.Context) ([]feature.Key, error) {
	r.featuresOnce.Do(r.setFeatures)
	keys := map[feature.Key]bool{}
	for _, f := range r.features {
		keyer, ok := f.(feature.Keyer)
		if !ok {
			continue
		}
		fk, err := keyer.Keys(ctx)
		if err != nil {
			return nil, fmt.Errorf("keys of %s: %w", f.Name(), err)
		}
		for _, k := range fk {
			keys[k] = true
		}
	}
	out := make([]feature.Key, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	return out, nil
}

// Networks returns the names of the networks the zone renders, sorted: the
// default network and every network a NAD defines.
func (r *Reconciler) Networks(ctx context.Context) ([]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads); err != nil {
		return nil, err
	}
	set := map[string]bool{nodeinfo.DefaultNetwork: true}
	for i := range nads.Items {
		if name, ok := netconf.NetworkName(nads.Items[i].Spec.Config); ok {
			set[name] = true
		}
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
