package egressstatus

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// EventQoSNotApplied is the reason of the Warning Event when an EgressQoS's
// status turns to not applied.
const EventQoSNotApplied = "EgressQoSNotApplied"

// QoSes writes EgressQoSes' status.status from the zones' conditions
// ("Ready-In-Zone-<zone>"): "EgressQoS Rules applied" unless a zone's
// condition is False or a pod selector is malformed, then "EgressQoS Rules
// not correctly applied: " and the first reason, by zone name. The
// conditions of zones whose node is gone are dropped.
type QoSes struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// SetupWithManager registers the controller (nothing without the CRD).
func (c *QoSes) SetupWithManager(mgr ctrl.Manager) error {
	if !kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressQoS")) {
		mgr.GetLogger().Info("the EgressQoS CRD is not installed: no EgressQoS status is written", "crd", "egressqoses.k8s.ovn.org")
		return nil
	}
	return builder.ControllerManagedBy(mgr).Named("egressqos-status").For(&v1.EgressQoS{}).
		Watches(&corev1.Node{}, onNodesComingAndGoing(c.Client, &v1.EgressQoSList{})).Complete(c)
}

// Reconcile writes one object's status.
func (c *QoSes) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var q v1.EgressQoS
	if err := c.Client.Get(ctx, req.NamespacedName, &q); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var nodes corev1.NodeList
	if err := c.Client.List(ctx, &nodes); err != nil {
		return reconcile.Result{}, err
	}
	zones := map[string]bool{}
	for _, n := range nodes.Items {
		zones[n.Name] = true
	}
	status, kept := MergeQoS(&q, zones)
	if status == q.Status.Status && equality.Semantic.DeepEqual(kept, q.Status.Conditions) {
		return reconcile.Result{}, nil
	}
	was := q.Status.Status
	q.Status.Status, q.Status.Conditions = status, kept
	if err := c.Client.Status().Update(ctx, &q); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("EgressQoS %s status: %w", req.NamespacedName, err)
	}
	if strings.HasPrefix(status, v1.EgressQoSNotApplied) && status != was && c.Recorder != nil {
		c.Recorder.Event(&q, corev1.EventTypeWarning, EventQoSNotApplied, status)
	}
	return reconcile.Result{}, nil
}

// MergeQoS is an EgressQoS's status.status, from its spec and the zones'
// conditions, and the conditions kept (those of zones in zones, and any
// other type), in their order.
func MergeQoS(q *v1.EgressQoS, zones map[string]bool) (string, []metav1.Condition) {
	var kept []metav1.Condition
	var problems []string
	for _, c := range q.Status.Conditions {
		zone, ok := strings.CutPrefix(c.Type, v1.EgressQoSReadyInZone)
		if ok && !zones[zone] {
			continue
		}
		kept = append(kept, c)
		if ok && c.Status == metav1.ConditionFalse {
			problems = append(problems, zone+": "+strings.TrimPrefix(c.Message, v1.EgressQoSNotApplied+": "))
		}
	}
	sort.Strings(problems)
	var checks []string
	for i, r := range q.Spec.Egress {
		if _, err := kubeobj.Selector(&r.PodSelector); err != nil {
			checks = append(checks, fmt.Sprintf("rule %d: podSelector: %v", i, err))
		}
	}
	problems = append(checks, problems...)
	if len(problems) > 0 {
		return v1.EgressQoSNotApplied + ": " + problems[0], kept
	}
	return v1.EgressQoSApplied, kept
}
