package netalloc

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// NodeController gives every Node an ID and its slice of every Layer3 network
// (the default network included), recorded as Node annotations. With a
// Usage, a node holds slices of primary user-defined networks only while it
// uses them (docs/allocation.md "Slices only where used").
type NodeController struct {
	Client   client.Client
	Reader   client.Reader // direct API reads for recovery
	Config   config.Cluster
	Nodes    *Nodes
	Recorder record.EventRecorder
	// Reporter records subnet exhaustion on the network's owner object.
	Reporter *SubnetReporter
	// Usage, when set, limits primary user-defined networks' slices to the
	// nodes that use them; nil gives every node a slice of every network.
	Usage *whereused.Usage
	// Connects says whether ClusterNetworkConnects are watched (a connect
	// makes a network used where its peers have pods).
	Connects bool

	// retries carries the nodes a deleted node's freed slices are for to
	// the controller's queue (retry), once it is set up with a manager;
	// without one they are synced in place.
	retries chan event.TypedGenericEvent[*corev1.Node]

	tracker   layer3Tracker
	mu        sync.Mutex
	recovered bool
	applied   int // tracker version last given to Nodes.SetNetworks
}

// SetupWithManager registers the controller: keys are node names; a change in
// the set of Layer3 networks requeues every node. With a Usage, a pod
// starting or stopping to use its node requeues that node, and a change
// of what makes networks used elsewhere (NADs, Services served on every
// node, connects) requeues every node, and an EgressIP's change the nodes
// it moves the use of its namespaces' networks to or from.
func (r *NodeController) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("node-allocation").
		For(&corev1.Node{}).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.nadChanged(ctx, e.Object, nil, false, q)
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.nadChanged(ctx, e.ObjectNew, e.ObjectOld, false, q)
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.nadChanged(ctx, e.Object, nil, true, q)
			},
		})
	// Pods by node: the where-used view reads them, and a sync tells the
	// pods that wait for a slice the node could not get (waiting.go).
	if err := kubeobj.AddIndexes(context.Background(), mgr.GetFieldIndexer(), whereused.Indexes()...); err != nil {
		return err
	}
	if r.Usage != nil {
		b = b.Watches(&corev1.Pod{}, curOld(func(_ context.Context, cur, old client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			podNode(cur, old, q)
		})).Watches(&corev1.Service{}, curOld(r.serviceChanged))
		if r.Connects {
			b = b.Watches(&v1.ClusterNetworkConnect{}, handler.EnqueueRequestsFromMapFunc(r.allNodes))
		}
		if kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressIP")) {
			b = b.Watches(&v1.EgressIP{}, curOld(r.egressNodes)).
				Watches(&corev1.Namespace{}, curOld(r.namespaceEgressNodes), builder.WithPredicates(predicate.LabelChangedPredicate{}))
		}
	}
	r.retries = make(chan event.TypedGenericEvent[*corev1.Node], 1024)
	b = b.WatchesRawSource(source.Channel(r.retries, &handler.TypedEnqueueRequestForObject[*corev1.Node]{}))
	return b.Complete(kubeobj.RetryConflicts(reconcile.Reconciler(r)))
}

// ObserveNAD records a NAD (or its deletion) in the set of Layer3 networks
// nodes get subnets of, and reports whether that set changed (then every node
// needs a reconcile). The controller's NAD watch calls it; so does
// `ovn-udn render`, which has no watches.
func (r *NodeController) ObserveNAD(nad *nadv1.NetworkAttachmentDefinition, deleted bool) bool {
	return r.tracker.observe(nad, deleted)
}

// Recover rebuilds the Layer3 networks and node allocations from the API, once
// (Reconcile calls it first; it runs after this replica wins the election).
func (r *NodeController) Recover(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recovered {
		return nil
	}
	logger := log.FromContext(ctx)
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Reader.List(ctx, &nads); err != nil {
		return fmt.Errorf("recovering node allocations: listing NADs: %w", err)
	}
	for i := range nads.Items {
		r.tracker.observe(&nads.Items[i], false)
	}
	if err := r.applyNetworks(); err != nil {
		logger.Error(err, "some Layer3 networks cannot be split into node subnets")
	}
	var nodes corev1.NodeList
	if err := r.Reader.List(ctx, &nodes); err != nil {
		return fmt.Errorf("recovering node allocations: listing nodes: %w", err)
	}
	kubeobj.SortOldestFirst(nodes.Items) // the older (then by name) keeps a contested value
	for _, n := range nodes.Items {
		for _, err := range RecoverNodeFrom(r.Nodes, &n) {
			logger.Error(err, "node allocation not recovered; it will be allocated afresh")
		}
	}
	logger.Info("recovered node allocations", "nodes", len(nodes.Items))
	r.recovered = true
	return nil
}

// RecoverNodeFrom records one Node's annotations in nodes.
func RecoverNodeFrom(nodes *Nodes, n *corev1.Node) []error {
	id, hasID, err := nodeinfo.NodeID(n.Annotations)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
	}
	subnets, err := nodeinfo.ParseSubnets(n.Annotations[nodeinfo.NodeSubnetsAnnotation])
	if err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
	}
	return append(errs, nodes.RecoverNode(n.Name, id, hasID, subnets)...)
}

// applyNetworks gives Nodes the tracker's current Layer3 networks plus the
// default network, if they changed since last time. Callers hold r.mu.
func (r *NodeController) applyNetworks() error {
	nets, version := r.tracker.snapshot()
	if version == r.applied && r.recovered {
		return nil
	}
	nets = append(nets, WithDefaultHostPrefixes(nodeinfo.DefaultNetwork, r.Config.ClusterSubnets))
	_, err := r.Nodes.SetNetworks(nets)
	r.applied = version
	if r.Reporter != nil {
		names := make([]string, len(nets))
		for i, n := range nets {
			names[i] = n.Name
		}
		r.Reporter.Keep(names)
	}
	return err
}

// Reconcile implements reconcile.Reconciler for one node.
func (r *NodeController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := r.Recover(ctx); err != nil {
		return ctrl.Result{}, err
	}
	r.mu.Lock()
	err := r.applyNetworks()
	r.mu.Unlock()
	if err != nil {
		log.FromContext(ctx).Error(err, "Layer3 networks")
	}

	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		if r.Usage != nil {
			r.Usage.Forget(req.Name)
		}
		retry := r.Nodes.ReleaseNode(req.Name)
		log.FromContext(ctx).Info("released node allocations", "node", req.Name, "retrying", retry)
		return ctrl.Result{}, r.retry(ctx, retry)
	}
	res, err := r.sync(ctx, node)
	if err != nil {
		return ctrl.Result{}, err
	}
	var out ctrl.Result
	if !res.complete {
		out.RequeueAfter = time.Minute
	}
	if res.next > 0 && (out.RequeueAfter == 0 || res.next < out.RequeueAfter) {
		out.RequeueAfter = res.next
	}
	return out, nil
}

// synced is what a node's sync did.
type synced struct {
	// complete: the node got everything it is to hold.
	complete bool
	// next is when a slice it keeps without using it is due (0: none).
	next time.Duration
}

// sync annotates node with its ID and subnets, records failures as Events and
// on the networks' owners, and says what it did.
func (r *NodeController) sync(ctx context.Context, node *corev1.Node) (synced, error) {
	var use func(string) bool
	var out synced
	if r.Usage != nil {
		var err error
		use, out.next, err = r.Usage.Decide(ctx, node.Name, r.Nodes.Held(node.Name), r.tracker.primary)
		if err != nil {
			return synced{}, fmt.Errorf("networks node %s uses: %w", node.Name, err)
		}
	}
	a := r.Nodes.NodeUsing(node.Name, use)
	for _, network := range a.Released {
		// Nodes lacking a slice of the network take it at their own next
		// try (within a minute), not at once: a pod that lands on this
		// node as its slice is released gets the same slice back first.
		log.FromContext(ctx).V(1).Info("released a slice the node no longer uses", "node", node.Name, "network", network)
	}
	want := map[string]string{nodeinfo.NodeSubnetsAnnotation: a.Subnets.String()}
	if a.IDErr == nil {
		want[nodeinfo.NodeIDAnnotation] = strconv.Itoa(a.ID)
	} else {
		r.Recorder.Eventf(node, corev1.EventTypeWarning, "NodeIDExhausted", "node gets no ID: %v", a.IDErr)
	}
	reason := func(network string) string {
		if r.Nodes.Unsplittable(network) != nil {
			return "NodeSubnetTooSmall"
		}
		return "NodeSubnetExhausted"
	}
	for network, ferr := range a.Failed {
		r.Recorder.Eventf(node, corev1.EventTypeWarning, reason(network), "no subnet of network %s for this node: %v", network, ferr)
	}
	r.tellWaitingPods(ctx, node.Name, a.Failed, reason)
	wrote, err := kubeobj.PatchAnnotations(ctx, r.Client, node, want)
	if err != nil {
		return synced{}, err
	}
	if wrote {
		log.FromContext(ctx).V(1).Info("annotated node", "node", node.Name, "annotations", want)
	}
	if r.Reporter != nil {
		for _, network := range r.tracker.networkNames() {
			if err := r.Reporter.Report(ctx, network, r.Nodes.Lacking(network), r.Nodes.Unsplittable(network)); err != nil {
				log.FromContext(ctx).Error(err, "reporting node subnets", "network", network)
			}
		}
	}
	out.complete = a.IDErr == nil && len(a.Failed) == 0
	return out, nil
}

// layer3Tracker follows which Layer3 networks exist, from NAD events. A network
// exists while at least one NAD carries it; its slicing is the one its NADs give
// (they agree for networks ovn-udn renders).
type layer3Tracker struct {
	mu      sync.Mutex
	byNAD   map[types.NamespacedName]Layer3Network
	refs    map[string]int           // network name -> NADs carrying it
	nets    map[string]Layer3Network // network name -> slicing
	version int
	// sorted and names are nets by name as of sortedVersion (snapshot).
	sorted        []Layer3Network
	names         []string
	sortedVersion int
}

// observe records a NAD (or its deletion) and reports whether the set of
// Layer3 networks or their slicing changed.
func (t *layer3Tracker) observe(nad *nadv1.NetworkAttachmentDefinition, deleted bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byNAD == nil {
		t.byNAD, t.refs, t.nets = map[types.NamespacedName]Layer3Network{}, map[string]int{}, map[string]Layer3Network{}
	}
	key := types.NamespacedName{Namespace: nad.Namespace, Name: nad.Name}
	old, had := t.byNAD[key]
	var cur Layer3Network
	has := false
	if !deleted {
		if c, err := netconf.Parse(nad); err == nil {
			cur, has = Layer3FromConfig(c)
		}
	}
	if had == has && (!has || (old.Name == cur.Name && old.key() == cur.key() && old.Primary == cur.Primary)) {
		return false
	}
	changed := false
	if had {
		delete(t.byNAD, key)
		t.refs[old.Name]--
		if t.refs[old.Name] == 0 {
			delete(t.refs, old.Name)
			delete(t.nets, old.Name)
			changed = true
		}
	}
	if has {
		t.byNAD[key] = cur
		t.refs[cur.Name]++
		if prev, ok := t.nets[cur.Name]; !ok || prev.key() != cur.key() || prev.Primary != cur.Primary {
			t.nets[cur.Name] = cur
			changed = true
		}
	}
	if changed {
		t.version++
	}
	return changed
}

// snapshot returns the Layer3 networks (sorted by name; shared, not to be
// modified) and the version. It is computed once per version: every node's
// reconcile asks for it.
func (t *layer3Tracker) snapshot() ([]Layer3Network, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sorted == nil || t.sortedVersion != t.version {
		t.sorted = make([]Layer3Network, 0, len(t.nets))
		t.names = make([]string, 0, len(t.nets))
		for _, n := range t.nets {
			t.sorted = append(t.sorted, n)
		}
		sort.Slice(t.sorted, func(i, j int) bool { return t.sorted[i].Name < t.sorted[j].Name })
		for _, n := range t.sorted {
			t.names = append(t.names, n.Name)
		}
		t.sortedVersion = t.version
	}
	return slices.Clip(t.sorted), t.version
}

// primary reports whether network is a primary user-defined network.
func (t *layer3Tracker) primary(network string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nets[network].Primary
}

// networkNames returns the networks' names, sorted (shared, not to be
// modified).
func (t *layer3Tracker) networkNames() []string {
	t.snapshot()
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clip(t.names)
}
