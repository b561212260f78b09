package render

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/testing"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressservice"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/podalloc"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udncontroller"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// Options configures a render.
type Options struct {
	Cluster config.Cluster
	// Zones limits the Northbound rows to these zones (node names, unless
	// nodes say otherwise); every zone when empty.
	Zones []string
	// Nodes are node names to add to the input's Nodes. Nodes that pods name
	// are added too.
	Nodes []string
	// Log receives the controllers' logs; discarded when zero.
	Log logr.Logger
	// MaxRounds bounds the passes over every object (default 50).
	MaxRounds int
	// RenderEverywhere renders every network in every zone, as zone
	// controllers started with --render-everywhere do; by default a
	// primary user-defined network is rendered only on the nodes its
	// input's pods (or a service served on every node) use.
	RenderEverywhere bool
	// Gateway is the gateway routers' default-route policy (ECMP, BFD and
	// its timers), as the zone controllers' flags give it; nil is
	// config.DefaultGateway(). A node's annotation may override ECMP and BFD.
	Gateway *config.Gateway
	// Layer2TopologyVersion is the Layer2 topology of the nodes whose
	// manifests do not say one (nodeinfo.Layer2TopologyVersionAnnotation),
	// as zone controllers started with --layer2-topology-version render;
	// "" leaves them at 2.0. Nodes at different versions show the upgrade
	// ports (docs/topology.md, "Changing a topology").
	Layer2TopologyVersion string
}

// engine is one render: the in-memory API and the controllers over it.
type engine struct {
	// everywhere: every network in every zone (Options.RenderEverywhere).
	everywhere bool
	// gateway is Options.Gateway.
	gateway *config.Gateway
	c       client.Client
	events  *recorder
	warn    func(Problem)

	udns     reconcile.Reconciler
	cudns    reconcile.Reconciler
	connects reconcile.Reconciler
	nads     *netalloc.NADController
	nodes    *netalloc.NodeController
	pods     *podalloc.Controller
	eips     *egressip.Controller
	esvcs    *egressservice.Controller
	zones    map[string]*zone.Reconciler
	zoneOf   map[string]string // node -> zone

	seen     map[string]map[types.NamespacedName]bool // kind -> every key ever seen
	observed map[types.NamespacedName]*nadv1.NetworkAttachmentDefinition
}

// Run renders the input: it passes every object to the controllers that
// would handle it, in a fixed order, until a pass changes nothing.
func Run(ctx context.Context, in *Input, opts Options) (*Result, error) {
	if err := opts.Cluster.Validate(); err != nil {
		return nil, fmt.Errorf("invalid cluster configuration: %w", err)
	}
	if opts.MaxRounds == 0 {
		opts.MaxRounds = 50
	}
	res := &Result{Problems: append([]Problem(nil), in.Problems...), Warnings: append([]Problem(nil), in.Warnings...)}
	var warnMu sync.Mutex
	warn := func(p Problem) {
		warnMu.Lock()
		res.Warnings = append(res.Warnings, p)
		warnMu.Unlock()
	}
	var next logr.LogSink = quietSink{}
	if opts.Log.GetSink() != nil {
		next = opts.Log.GetSink()
	}
	logger := logr.New(&errorSink{next: next, warn: warn})
	ctx = log.IntoContext(ctx, logger)

	// Pods come last, as they would be applied: a primary network must exist
	// before the pods of its namespace.
	var objs, pods []client.Object
	for _, o := range in.Objects {
		o = o.DeepCopyObject().(client.Object)
		if _, ok := o.(*corev1.Pod); ok {
			pods = append(pods, o)
		} else {
			objs = append(objs, o)
		}
	}
	sortObjects(pods)
	objs = append(objs, assumeNodes(objs, pods, opts.Nodes, warn)...)
	sortObjects(objs)
	assumeNodeAgent(objs, warn)
	assumeReady(objs, warn)
	if err := layer2Version(objs, opts.Layer2TopologyVersion); err != nil {
		return nil, err
	}

	scheme := clustermanager.Scheme()
	// The plain tracker: no managed fields (no controller applies), which
	// the field-managed one spends most of a small render computing.
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(testing.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())).
		WithObjects(objs...).
		WithStatusSubresource(&v1.UserDefinedNetwork{}, &v1.ClusterUserDefinedNetwork{}, &v1.ClusterNetworkConnect{}, &v1.EgressIP{}, &v1.EgressFirewall{}, &v1.EgressQoS{}, &v1.EgressService{})
	for _, i := range indexes() {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	e := &engine{c: newCachedClient(b.Build()), events: &recorder{}, warn: warn, zones: map[string]*zone.Reconciler{}, zoneOf: map[string]string{}, everywhere: opts.RenderEverywhere, gateway: opts.Gateway,
		seen: map[string]map[types.NamespacedName]bool{}, observed: map[types.NamespacedName]*nadv1.NetworkAttachmentDefinition{}}
	e.build(opts.Cluster, logger)

	if err := e.converge(ctx, opts.MaxRounds); err != nil {
		return nil, err
	}
	for _, p := range pods {
		if err := e.c.Create(ctx, p); err != nil {
			return nil, fmt.Errorf("pod %s: %w", key(p.GetNamespace(), p.GetName()), err)
		}
	}
	if err := e.converge(ctx, opts.MaxRounds); err != nil {
		return nil, err
	}
	if err := e.collect(ctx, res, opts.Zones); err != nil {
		return nil, err
	}
	res.Events = e.events.list()
	// Reported in a fixed order, whatever order the documents came in.
	sortProblems(res.Problems)
	sortProblems(res.Warnings)
	return res, nil
}

// where is a document's position: its file and its number in the file.
type where struct {
	file string
	doc  int
}

// splitWhere parses "file#n" (manifest.Document.Where).
func splitWhere(s string) where {
	i := strings.LastIndex(s, "#")
	if i < 0 {
		return where{file: s}
	}
	doc, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return where{file: s}
	}
	return where{file: s[:i], doc: doc}
}

// sortProblems orders problems by file position, kind, object and reason.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if fa, fb := splitWhere(a.Where), splitWhere(b.Where); fa != fb {
			if fa.file != fb.file {
				return fa.file < fb.file
			}
			return fa.doc < fb.doc
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if ka, kb := key(a.Namespace, a.Name), key(b.Namespace, b.Name); ka != kb {
			return ka < kb
		}
		return a.Reason < b.Reason
	})
}

// converge runs rounds until one changes nothing.
func (e *engine) converge(ctx context.Context, maxRounds int) error {
	for round := 0; round < maxRounds; round++ {
		before, err := e.versions(ctx)
		if err != nil {
			return err
		}
		if err := e.round(ctx); err != nil {
			return err
		}
		after, err := e.versions(ctx)
		if err != nil {
			return err
		}
		if before == after {
			return nil
		}
	}
	return fmt.Errorf("the controllers did not settle after %d passes (a bug: please report it with the input)", maxRounds)
}

// build wires the cluster-manager's controllers as the cluster-manager
// does (clustermanager.NewControllers), on the in-memory client.
func (e *engine) build(cfg config.Cluster, logger logr.Logger) {
	c := clustermanager.NewControllers(e.c, e.c, e.events, cfg, logger)
	if !e.everywhere {
		// Slices only where used, as cluster-manager; render is a snapshot:
		// a slice its node no longer uses is released at once.
		view := func(ctx context.Context) activity.NodeView {
			return &whereused.View{Ctx: ctx, Reader: e.c, Pods: e.c}
		}
		c.Nodes.Usage = &whereused.Usage{Cache: view, Live: view} // no watches here: Connects does not apply
	}
	e.udns, e.cudns = &udncontroller.UDNReconciler{Controller: c.Networks}, &udncontroller.CUDNReconciler{Controller: c.Networks}
	e.nads, e.nodes, e.pods, e.connects, e.eips, e.esvcs = c.NADs, c.Nodes, c.Pods, c.Connects, c.EgressIPs, c.EgressServices
}

// round passes every object once to each controller, in the order their
// results feed each other: networks, their allocation, nodes, connects,
// pods.
func (e *engine) round(ctx context.Context) error {
	steps := []struct {
		kind string
		list client.ObjectList
		do   func(context.Context, reconcile.Request) error
	}{
		{"UserDefinedNetwork", &v1.UserDefinedNetworkList{}, e.reconciler(e.udns)},
		{"ClusterUserDefinedNetwork", &v1.ClusterUserDefinedNetworkList{}, e.reconciler(e.cudns)},
		{"NetworkAttachmentDefinition", &nadv1.NetworkAttachmentDefinitionList{}, e.reconciler(e.nads)},
		{"Node", &corev1.NodeList{}, e.reconcileNode},
		{"ClusterNetworkConnect", &v1.ClusterNetworkConnectList{}, e.reconciler(e.connects)},
		{"Pod", &corev1.PodList{}, e.reconcilePod},
		{"EgressIP", &v1.EgressIPList{}, e.assignEgressIPs},
		{"EgressService", &v1.EgressServiceList{}, func(ctx context.Context, _ reconcile.Request) error { return e.esvcs.ReconcileAll(ctx) }},
	}
	for _, s := range steps {
		if s.kind == "Node" {
			if err := e.observeNADs(ctx); err != nil {
				return err
			}
		}
		keys, err := e.keys(ctx, s.kind, s.list)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := s.do(ctx, reconcile.Request{NamespacedName: k}); err != nil {
				return fmt.Errorf("%s %s: %w", s.kind, key(k.Namespace, k.Name), err)
			}
		}
	}
	return nil
}

func (e *engine) reconciler(r reconcile.Reconciler) func(context.Context, reconcile.Request) error {
	return func(ctx context.Context, req reconcile.Request) error {
		_, err := r.Reconcile(ctx, req)
		return err
	}
}

// assignEgressIPs runs cluster-manager's EgressIP assignment, which is one
// pass over every object (the first key does it, the others find nothing
// to change).
func (e *engine) assignEgressIPs(ctx context.Context, _ reconcile.Request) error {
	return e.eips.ReconcileAll(ctx)
}

// reconcileNode gives a node its ID and subnets, and (re)creates its zone's
// reconciler when the node is new.
func (e *engine) reconcileNode(ctx context.Context, req reconcile.Request) error {
	if _, err := e.nodes.Reconcile(ctx, req); err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := e.c.Get(ctx, req.NamespacedName, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	z := node.Annotations[nodeinfo.ZoneAnnotation]
	if z == "" {
		z = node.Name
	}
	e.zoneOf[node.Name] = z
	if e.zones[z] == nil {
		e.zones[z] = &zone.Reconciler{Zone: z, Cluster: e.nodes.Config, Client: e.c, Recorder: e.events, RenderEverywhere: e.everywhere, Gateway: e.gateway}
	}
	return nil
}

// reconcilePod runs cluster-manager's pod addressing (Layer2, Localnet) and
// the pod's zone's (the default network and Layer3).
func (e *engine) reconcilePod(ctx context.Context, req reconcile.Request) error {
	if _, err := e.pods.ReconcilePod(ctx, req); err != nil {
		return err
	}
	pod := &corev1.Pod{}
	if err := e.c.Get(ctx, req.NamespacedName, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if z := e.zones[e.zoneOf[pod.Spec.NodeName]]; z != nil {
		_, err := z.Reconcile(ctx, feature.PodKey(pod.Namespace, pod.Name))
		return err
	}
	return nil
}

// observeNADs tells the node controller about NADs created, changed or
// deleted since last time, as its NAD watch would.
func (e *engine) observeNADs(ctx context.Context) error {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := e.c.List(ctx, &list); err != nil {
		return err
	}
	now := map[types.NamespacedName]bool{}
	for i := range list.Items {
		nad := &list.Items[i]
		k := types.NamespacedName{Namespace: nad.Namespace, Name: nad.Name}
		now[k] = true
		e.nodes.ObserveNAD(nad, false)
		e.observed[k] = nad
	}
	for k, nad := range e.observed {
		if !now[k] {
			e.nodes.ObserveNAD(nad, true)
			delete(e.observed, k)
		}
	}
	return nil
}

// keys returns the keys of every object of a kind that exists or ever
// existed (a deleted object's key is reconciled too, as a delete event would).
func (e *engine) keys(ctx context.Context, kind string, list client.ObjectList) ([]types.NamespacedName, error) {
	if err := e.c.List(ctx, list); err != nil {
		return nil, err
	}
	seen := e.seen[kind]
	if seen == nil {
		seen = map[types.NamespacedName]bool{}
		e.seen[kind] = seen
	}
	items, err := metaItems(list)
	if err != nil {
		return nil, err
	}
	for _, o := range items {
		seen[types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}] = true
	}
	out := make([]types.NamespacedName, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// versions fingerprints every object's resource version: a pass that
// leaves it unchanged wrote nothing.
func (e *engine) versions(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, l := range []client.ObjectList{&corev1.NamespaceList{}, &corev1.NodeList{}, &corev1.PodList{},
		&nadv1.NetworkAttachmentDefinitionList{}, &v1.UserDefinedNetworkList{}, &v1.ClusterUserDefinedNetworkList{}} {
		if err := e.c.List(ctx, l); err != nil {
			return "", err
		}
		items, err := metaItems(l)
		if err != nil {
			return "", err
		}
		for _, o := range items {
			fmt.Fprintf(&b, "%T %s/%s %s\n", o, o.GetNamespace(), o.GetName(), o.GetResourceVersion())
		}
	}
	return b.String(), nil
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not an object", o)
		}
		out = append(out, co)
	}
	return out, nil
}

// zoneRows renders every network of a zone; defs are the networks'
// definitions by name.
func zoneRows(ctx context.Context, r *zone.Reconciler, defs map[string]topology.Network) ([]NetworkRows, error) {
	names, err := r.Networks(ctx)
	if err != nil {
		return nil, err
	}
	var out []NetworkRows
	for _, name := range names {
		rows, err := r.Desired(ctx, name)
		var held *feature.NotRendered
		if errors.As(err, &held) {
			out = append(out, NetworkRows{Network: name, NotRendered: held.Reason, Definition: defs[name]})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("zone %s, network %s: %w", r.Zone, name, err)
		}
		own, err := r.DesiredNetwork(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("zone %s, network %s: %w", r.Zone, name, err)
		}
		out = append(out, NetworkRows{Network: name, Models: rows, Own: own, Rows: toRows(rows), Definition: defs[name]})
	}
	return out, nil
}

// podRows returns the rows each pod writes in a zone (its ports).
func podRows(ctx context.Context, c client.Client, r *zone.Reconciler) ([]PodRows, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return nil, err
	}
	var out []PodRows
	for _, p := range pods.Items {
		key := p.Namespace + "/" + p.Name
		rows, contribs, err := r.DesiredPod(ctx, key)
		var held *feature.NotRendered
		switch {
		case errors.As(err, &held):
			out = append(out, PodRows{Pod: key, NotRendered: held.Reason})
		case err != nil:
			return nil, fmt.Errorf("zone %s, pod %s: %w", r.Zone, key, err)
		case len(rows) > 0:
			out = append(out, PodRows{Pod: key, Models: rows, Contributions: contribs})
		}
	}
	return out, nil
}

// assumeNodes returns the Nodes named by extra or by pods' spec.nodeName
// that the input lacks.
func assumeNodes(objs, pods []client.Object, extra []string, warn func(Problem)) []client.Object {
	have := map[string]bool{}
	for _, o := range objs {
		if _, ok := o.(*corev1.Node); ok {
			have[o.GetName()] = true
		}
	}
	var out []client.Object
	add := func(name, why string) {
		if name == "" || have[name] {
			return
		}
		have[name] = true
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		clean(n)
		out = append(out, n)
		if why != "" {
			warn(Problem{Kind: "Node", Name: name, Reason: why})
		}
	}
	for _, name := range extra {
		add(name, "")
	}
	for _, p := range pods {
		add(p.(*corev1.Pod).Spec.NodeName, "not in the input; assumed, since pods run on it")
	}
	return out
}

// assumeNodeAgent gives nodes that no node agent has annotated (no chassis
// ID) the annotations nodeinfo.Example gives the node's position in name
// order, with a warning: without them no zone can render the node. Nodes a
// node agent has annotated are left as they are, optional annotations absent.
func assumeNodeAgent(objs []client.Object, warn func(Problem)) {
	i := 0
	for _, o := range objs {
		n, ok := o.(*corev1.Node)
		if !ok {
			continue
		}
		info := nodeinfo.Example(n.Name, i)
		i++
		if n.Annotations[nodeinfo.ChassisIDAnnotation] != "" {
			continue
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		for k, v := range info.Annotations() {
			if _, has := n.Annotations[k]; !has {
				n.Annotations[k] = v
			}
		}
		warn(Problem{Kind: "Node", Name: n.Name, Reason: fmt.Sprintf("no node agent annotations; assumed chassis %s, address %s, next hop %s",
			info.ChassisID, info.PrimaryIPs[0], info.Gateway.NextHops[0])})
	}
}

// layer2Version gives nodes whose manifests say no Layer2 topology
// version v ("": none).
func layer2Version(objs []client.Object, v string) error {
	switch v {
	case "":
		return nil
	case nodeinfo.Layer2TopologyV1, nodeinfo.Layer2TopologyV2:
	default:
		return fmt.Errorf("layer2 topology version %q is neither %s nor %s", v, nodeinfo.Layer2TopologyV1, nodeinfo.Layer2TopologyV2)
	}
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			if _, has := n.Annotations[nodeinfo.Layer2TopologyVersionAnnotation]; !has {
				n.Annotations[nodeinfo.Layer2TopologyVersionAnnotation] = v
			}
		}
	}
	return nil
}

// assumeReady gives the nodes of an input with EgressIPs or EgressServices
// a Ready condition when they have none (a manifest rarely has status),
// with a warning: cluster-manager gives egress IPs and EgressService hosts
// to Ready nodes only.
func assumeReady(objs []client.Object, warn func(Problem)) {
	if !slices.ContainsFunc(objs, func(o client.Object) bool {
		switch o.(type) {
		case *v1.EgressIP, *v1.EgressService:
			return true
		}
		return false
	}) {
		return
	}
	for _, o := range objs {
		n, ok := o.(*corev1.Node)
		if !ok || slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady }) {
			continue
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue})
		warn(Problem{Kind: "Node", Name: n.Name, Reason: "no Ready condition; assumed Ready (EgressIPs and EgressService hosts go to Ready nodes)"})
	}
}

// quietSink drops everything.
type quietSink struct{}

func (quietSink) Init(logr.RuntimeInfo)            {}
func (quietSink) Enabled(int) bool                 { return false }
func (quietSink) Info(int, string, ...any)         {}
func (quietSink) Error(error, string, ...any)      {}
func (q quietSink) WithValues(...any) logr.LogSink { return q }
func (q quietSink) WithName(string) logr.LogSink   { return q }

// errorSink passes a logger's messages on and reports its errors as
// warnings (e.g. an allocation in the input that conflicts with another).
type errorSink struct {
	next logr.LogSink
	warn func(Problem)
	name string
	kv   []any
}

func (s *errorSink) Init(info logr.RuntimeInfo) { s.next.Init(info) }
func (s *errorSink) Enabled(level int) bool     { return s.next.Enabled(level) }
func (s *errorSink) Info(level int, msg string, kv ...any) {
	s.next.Info(level, msg, kv...)
}
func (s *errorSink) Error(err error, msg string, kv ...any) {
	s.next.Error(err, msg, kv...)
	s.warn(Problem{Kind: "Controller", Name: s.name, Reason: fmt.Sprintf("%s: %v", msg, err)})
}
func (s *errorSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.next = s.next.WithValues(kv...)
	return &c
}
func (s *errorSink) WithName(name string) logr.LogSink {
	c := *s
	c.next = s.next.WithName(name)
	c.name = strings.TrimPrefix(s.name+"/"+name, "/")
	return &c
}
