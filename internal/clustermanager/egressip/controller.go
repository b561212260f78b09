package egressip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// Event reasons on an EgressIP.
const (
	// EventMoved: an egress IP moved to another node (failover).
	EventMoved = "EgressIPMoved"
)

// key is the controller's one reconcile key: assignment is global (the
// balance and the claims span every object), so every event asks for it.
type key struct{}

// Controller assigns every EgressIP's addresses (Assign) and writes the
// outcome in their status.
type Controller struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Reach probes the egress-assignable nodes (nil: a node counts while
	// it is Ready).
	Reach *Reachability
}

// SetupWithManager registers the controller: EgressIPs, and the changes of
// Nodes that decide where addresses may go (labels, readiness, addresses).
// Without the EgressIP CRD (a cluster whose CRDs were not applied again
// after an upgrade) it registers nothing and says so in the log, rather
// than stop cluster-manager on a watch that never syncs.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if !kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressIP")) {
		mgr.GetLogger().Info("the EgressIP CRD is not installed: EgressIPs are not assigned", "crd", "egressips.k8s.ovn.org")
		return nil
	}
	one := handler.TypedFuncs[client.Object, key]{
		CreateFunc: func(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[key]) {
			q.Add(key{})
		},
		UpdateFunc: func(_ context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[key]) {
			q.Add(key{})
		},
		DeleteFunc: func(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[key]) {
			q.Add(key{})
		},
	}
	b := builder.TypedControllerManagedBy[key](mgr).
		Named("egressip").
		Watches(&v1.EgressIP{}, one).
		Watches(&corev1.Node{}, one, builder.WithPredicates(nodeChanges))
	if c.Reach != nil {
		if err := mgr.Add(c.Reach); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.TypedChannel(c.Reach.Changes(), handler.TypedFuncs[*corev1.Node, key]{
			GenericFunc: func(_ context.Context, _ event.TypedGenericEvent[*corev1.Node], q workqueue.TypedRateLimitingInterface[key]) {
				q.Add(key{})
			},
		}))
	}
	return b.Complete(kubeobj.RetryConflicts(reconcile.TypedReconciler[key](c)))
}

// nodeChanges passes Node events that can move an egress IP: a node coming
// or going, its labels, its Ready condition, its addresses.
var nodeChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		if !equalLabels(o, n) || kubeobj.NodeReady(o) != kubeobj.NodeReady(n) {
			return true
		}
		for _, a := range []string{nodeinfo.PrimaryIfAddrAnnotation, nodeinfo.GatewayAnnotation} {
			if o.Annotations[a] != n.Annotations[a] {
				return true
			}
		}
		return false
	},
}

func equalLabels(a, b *corev1.Node) bool {
	return a.Labels[v1.EgressAssignableLabel] == b.Labels[v1.EgressAssignableLabel] &&
		a.Labels[corev1.LabelTopologyZone] == b.Labels[corev1.LabelTopologyZone] &&
		hasLabel(a) == hasLabel(b)
}

func hasLabel(n *corev1.Node) bool { _, ok := n.Labels[v1.EgressAssignableLabel]; return ok }

// NodeOf reads what assignment needs of a Node: readiness, the label, the
// failure domain, and its external subnets (its primary interface's and
// its uplinks', from the node agent's annotations).
func NodeOf(n *corev1.Node) Node {
	out := Node{Name: n.Name, Ready: kubeobj.NodeReady(n), Assignable: hasLabel(n), FailureDomain: n.Labels[corev1.LabelTopologyZone]}
	info, _ := nodeinfo.Parse(n.Name, n.Annotations) // what parses is enough
	add := func(p netip.Prefix) {
		if !slices.Contains(out.Subnets, p) {
			out.Subnets = append(out.Subnets, p)
		}
	}
	for _, p := range info.PrimaryIPs {
		add(p)
	}
	if info.Gateway != nil {
		for _, u := range info.Gateway.Uplinks() {
			for _, p := range u.IPs {
				add(p)
			}
		}
	}
	return out
}

// probeAddr is the address a node's agent answers probes at: its first
// primary address.
func probeAddr(n *corev1.Node) (netip.Addr, bool) {
	info, _ := nodeinfo.Parse(n.Name, n.Annotations)
	if len(info.PrimaryIPs) == 0 {
		return netip.Addr{}, false
	}
	return info.PrimaryIPs[0].Addr(), true
}

// ObjectOf reads what assignment needs of an EgressIP (addresses that do
// not parse, which the API refuses, are skipped).
func ObjectOf(e *v1.EgressIP) Object {
	o := Object{Name: e.Name, Created: e.CreationTimestamp.Time, Current: map[netip.Addr]string{}, Spelled: map[netip.Addr]string{}}
	for _, s := range e.Spec.EgressIPs {
		if a, err := netip.ParseAddr(s); err == nil {
			o.IPs = append(o.IPs, a)
			o.Spelled[a] = s
		}
	}
	for _, it := range e.Status.Items {
		if a, err := netip.ParseAddr(it.EgressIP); err == nil {
			o.Current[a] = it.Node
		}
	}
	return o
}

// Reconcile implements reconcile.TypedReconciler: every EgressIP is
// assigned again, and the status of each whose outcome changed is written.
func (c *Controller) Reconcile(ctx context.Context, _ key) (ctrl.Result, error) {
	var eips v1.EgressIPList
	if err := c.Client.List(ctx, &eips); err != nil {
		return ctrl.Result{}, err
	}
	var nodeList corev1.NodeList
	if err := c.Client.List(ctx, &nodeList); err != nil {
		return ctrl.Result{}, err
	}
	nodes := make([]Node, 0, len(nodeList.Items))
	probed := map[string]netip.Addr{}
	for i := range nodeList.Items {
		n := NodeOf(&nodeList.Items[i])
		if c.Reach != nil && n.Assignable {
			if a, ok := probeAddr(&nodeList.Items[i]); ok {
				probed[n.Name] = a
			}
		}
		nodes = append(nodes, n)
	}
	if c.Reach != nil {
		// Tracked first: a node whose address changed loses the old
		// address's verdict before it is read.
		c.Reach.Track(probed)
		unreachable := 0
		for i := range nodes {
			if _, ok := probed[nodes[i].Name]; ok && c.Reach.Unreachable(nodes[i].Name) {
				nodes[i].Unreachable = true
				unreachable++
			}
		}
		// Every probed node silent at once says more about
		// cluster-manager's own network than about the nodes: readiness
		// alone decides then, rather than every egress IP leaving.
		if len(probed) > 1 && unreachable == len(probed) {
			log.FromContext(ctx).Info("no egress node answers the probes: assigning by readiness alone", "nodes", len(probed))
			for i := range nodes {
				nodes[i].Unreachable = false
			}
		}
	}
	objs := make([]Object, 0, len(eips.Items))
	for i := range eips.Items {
		objs = append(objs, ObjectOf(&eips.Items[i]))
	}
	results := Assign(objs, nodes)
	var errs []error
	for i := range eips.Items {
		errs = append(errs, c.write(ctx, &eips.Items[i], results[eips.Items[i].Name]))
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// ReconcileAll assigns every EgressIP once, as one event would
// (`ovn-udn render` calls it on its in-memory API).
func (c *Controller) ReconcileAll(ctx context.Context) error {
	_, err := c.Reconcile(ctx, key{})
	return err
}

// write sets e's status to r when it differs, with an Event for each
// address that moved and for a condition that turned False or changed.
func (c *Controller) write(ctx context.Context, e *v1.EgressIP, r Result) error {
	status := e.Status.DeepCopy()
	status.Items = r.Items
	cond := metav1.Condition{Type: v1.ConditionEgressIPsAssigned, Status: metav1.ConditionTrue, Reason: v1.ReasonAssigned,
		Message: fmt.Sprintf("every egress IP has a node (%d)", len(r.Items)), ObservedGeneration: e.Generation}
	if len(r.Problems) > 0 {
		var msgs []string
		for _, p := range r.Problems {
			msgs = append(msgs, p.Message)
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, r.Problems[0].Reason, strings.Join(msgs, "; ")
	}
	before := meta.FindStatusCondition(status.Conditions, cond.Type)
	changedCond := before == nil || before.Status != cond.Status || before.Reason != cond.Reason || before.Message != cond.Message
	meta.SetStatusCondition(&status.Conditions, cond)
	if equality.Semantic.DeepEqual(*status, e.Status) {
		return nil
	}
	old := ObjectOf(e).Current
	e.Status = *status
	if err := c.Client.Status().Update(ctx, e); err != nil {
		return fmt.Errorf("EgressIP %s: %w", e.Name, err)
	}
	logger := log.FromContext(ctx).WithValues("egressIP", e.Name)
	for _, it := range r.Items {
		a, _ := netip.ParseAddr(it.EgressIP)
		if from, ok := old[a]; ok && from != it.Node {
			logger.Info("egress IP moved", "address", it.EgressIP, "from", from, "to", it.Node)
			c.Recorder.Eventf(e, corev1.EventTypeNormal, EventMoved, "%s moved from node %s to node %s", it.EgressIP, from, it.Node)
		}
	}
	if changedCond && cond.Status == metav1.ConditionFalse {
		c.Recorder.Event(e, corev1.EventTypeWarning, cond.Reason, cond.Message)
	}
	logger.Info("egress IPs assigned", "items", len(r.Items), "problems", len(r.Problems))
	return nil
}
