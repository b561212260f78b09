// Package egressstatus is cluster-manager's controllers of the status of
// EgressFirewalls and EgressQoSes, whose zones each write their own word.
//
// Firewalls merges the messages the zones write (each its own, "<zone>:
// EgressFirewall Rules applied" or "... not correctly applied: <why>") into
// status.status, as ovn-kubernetes does, drops the messages of zones whose
// node is gone, and checks what needs no zone (a malformed node selector, a
// wildcard DNS name).
//
// status.status is "EgressFirewall Rules applied" when no zone and no
// check reports a problem (also while no node has pods of the namespace:
// there is nothing to enforce yet), else "EgressFirewall Rules not
// correctly applied: " and the first problem, by zone name. A change to
// not applied is also a Warning Event on the object.
package egressstatus

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// EventNotApplied is the reason of the Warning Event when an object's
// status turns to not applied.
const EventNotApplied = "EgressFirewallNotApplied"

// Firewalls writes EgressFirewalls' status.status.
type Firewalls struct {
	Client   client.Client
	Recorder record.EventRecorder
}

// SetupWithManager registers the controller: EgressFirewalls (their spec
// and the zones' messages), and nodes that come and go (a gone zone's
// message is dropped). Without the CRD it registers nothing.
func (c *Firewalls) SetupWithManager(mgr ctrl.Manager) error {
	if !kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressFirewall")) {
		mgr.GetLogger().Info("the EgressFirewall CRD is not installed: no EgressFirewall status is written", "crd", "egressfirewalls.k8s.ovn.org")
		return nil
	}
	return builder.ControllerManagedBy(mgr).
		Named("egressfirewall-status").
		For(&v1.EgressFirewall{}).
		Watches(&corev1.Node{}, onNodesComingAndGoing(c.Client, &v1.EgressFirewallList{})).
		Complete(c)
}

// Reconcile writes one object's status.
func (c *Firewalls) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var ef v1.EgressFirewall
	if err := c.Client.Get(ctx, req.NamespacedName, &ef); err != nil {
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
	status, kept := Merge(&ef, zones)
	if status == ef.Status.Status && slices.Equal(kept, ef.Status.Messages) {
		return reconcile.Result{}, nil
	}
	was := ef.Status.Status
	ef.Status.Status, ef.Status.Messages = status, kept
	if err := c.Client.Status().Update(ctx, &ef); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("EgressFirewall %s status: %w", req.NamespacedName, err)
	}
	log.FromContext(ctx).Info("EgressFirewall status", "status", status)
	if strings.HasPrefix(status, v1.EgressFirewallNotApplied) && status != was && c.Recorder != nil {
		c.Recorder.Event(&ef, corev1.EventTypeWarning, EventNotApplied, status)
	}
	return reconcile.Result{}, nil
}

// Merge is an object's status.status, from its spec and the zones'
// messages, and the messages kept: those of zones in zones, in their
// order.
func Merge(ef *v1.EgressFirewall, zones map[string]bool) (string, []string) {
	var kept []string
	var problems []string
	for _, m := range ef.Status.Messages {
		zone, rest, ok := strings.Cut(m, ": ")
		if !ok || !zones[zone] {
			continue
		}
		kept = append(kept, m)
		if why, bad := strings.CutPrefix(rest, v1.EgressFirewallNotApplied+": "); bad {
			problems = append(problems, zone+": "+why)
		}
	}
	sort.Strings(problems)
	problems = append(Check(ef), problems...)
	if len(problems) > 0 {
		return v1.EgressFirewallNotApplied + ": " + problems[0], kept
	}
	return v1.EgressFirewallApplied, kept
}

// Check is what is wrong with an object's rules without any zone: node
// selectors that do not parse, wildcard DNS names (which have no address
// of their own).
func Check(ef *v1.EgressFirewall) []string {
	var out []string
	for i, r := range ef.Spec.Egress {
		if r.To.NodeSelector != nil {
			if _, err := kubeobj.Selector(r.To.NodeSelector); err != nil {
				out = append(out, fmt.Sprintf("rule %d: nodeSelector: malformed selector: %v", i, err))
			}
		}
		if strings.HasPrefix(r.To.DNSName, "*.") {
			out = append(out, fmt.Sprintf("rule %d: dnsName %s: a wildcard name is not resolved", i, r.To.DNSName))
		}
	}
	return out
}
