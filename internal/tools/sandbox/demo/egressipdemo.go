package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// EgressIPDemo labels two nodes egress-assignable, applies an EgressIP
// with two addresses of the nodes' subnet for l3-blue, and checks where
// cluster-manager puts them: on the two nodes, one each; that l3-blue/a's
// new connections to the outside leave from both; then, one node
// unlabelled, its address is reported as held by no node (the other node
// holds the object's other one) and the connections leave from the other
// address; once the object is deleted, from the pod's node. Then two
// same-subnet Layer2 tenants get an EgressIP each, and the link of one's
// egress node is pulled (egressTenantsAndFailover). It removes the labels
// and the objects.
func EgressIPDemo(ctx context.Context, dir, binary string, c client.Client, nodes int, out io.Writer) error {
	if nodes < 3 {
		return nil
	}
	holders := []string{sandbox.NodeName(2), sandbox.NodeName(3)}
	label := func(name string, on bool) error {
		return proc.WaitFor(10*time.Second, 100*time.Millisecond, func() (bool, error) {
			var n corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
				return false, err
			}
			if on {
				n.Labels[v1.EgressAssignableLabel] = ""
			} else {
				delete(n.Labels, v1.EgressAssignableLabel)
			}
			return c.Update(ctx, &n) == nil, nil
		})
	}
	for _, n := range holders {
		if err := label(n, true); err != nil {
			return err
		}
		defer func() { _ = label(n, false) }()
	}
	addrs := []string{"192.168.100.200", "192.168.100.201"}
	e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "demo-egress"}, Spec: v1.EgressIPSpec{EgressIPs: addrs,
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "l3-blue"}}}}
	if err := c.Create(ctx, e); err != nil {
		return err
	}
	defer func() { _ = c.Delete(context.Background(), e) }()
	where := func(e *v1.EgressIP) string {
		var got []string
		for _, it := range e.Status.Items {
			got = append(got, it.EgressIP+" on "+it.Node)
		}
		slices.Sort(got)
		return strings.Join(got, ", ")
	}
	wait := func(check *AppCheck, done func(*v1.EgressIP) bool) {
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			var cur v1.EgressIP
			if err := c.Get(ctx, client.ObjectKeyFromObject(e), &cur); err != nil {
				return false, err
			}
			check.Got = where(&cur)
			if cond := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionEgressIPsAssigned); cond != nil && cond.Status == metav1.ConditionFalse {
				check.Got += "; " + cond.Reason
			}
			return done(&cur), nil
		})
	}
	spread := AppCheck{Name: "two egress IPs, two assignable nodes", From: "cluster-manager", Target: "EgressIP demo-egress",
		Want: "one on each of " + strings.Join(holders, ", ")}
	wait(&spread, func(e *v1.EgressIP) bool {
		var held []string
		for _, it := range e.Status.Items {
			held = append(held, it.Node)
		}
		slices.Sort(held)
		if !slices.Equal(held, holders) {
			return false
		}
		spread.Got = "one on each of " + strings.Join(held, ", ")
		return true
	})
	// The pod's checks need the examples' l3-blue/a (other manifests may
	// not have it).
	var p corev1.Pod
	withPod := c.Get(ctx, client.ObjectKey{Namespace: "l3-blue", Name: "a"}, &p) == nil && p.Spec.NodeName != ""
	// What the outside sees of the pod's new connections (each its own
	// source port, so ECMP may pick either egress node).
	const from = "l3-blue/a"
	server := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)
	sources := func(check *AppCheck, want []string) {
		check.Err = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
			seen := map[string]bool{}
			for range 12 {
				got, err := run(ctx, dir, from, binary, "sandbox", "probe", server)
				if err != nil {
					check.Got = err.Error()
					return false, nil
				}
				// The node's address on any uplink counts as its address.
				seen[asNodeAddr(p.Spec.NodeName, strings.TrimSpace(got))] = true
			}
			var list []string
			for a := range seen {
				list = append(list, a)
			}
			slices.Sort(list)
			check.Got = strings.Join(list, " and ")
			return slices.Equal(list, want), nil
		})
		if check.Err != nil || check.Got != strings.Join(want, " and ") {
			check.Got += " (" + egressIPRows(dir) + ")"
		}
	}
	both := AppCheck{Name: "12 new connections to the outside", From: from, Target: server, Want: strings.Join(addrs, " and ")}
	if withPod {
		sources(&both, addrs)
	}
	// Unlabel the node holding the first address.
	var cur v1.EgressIP
	if err := c.Get(ctx, client.ObjectKeyFromObject(e), &cur); err != nil {
		return err
	}
	var lost string
	for _, it := range cur.Status.Items {
		if it.EgressIP == addrs[0] {
			lost = it.Node
		}
	}
	gone := AppCheck{Name: "its node unlabelled: the address has no node", From: "cluster-manager", Target: addrs[0],
		Want: "held by no node (NoNodeForIP)"}
	if lost == "" {
		gone.Err = fmt.Errorf("%s has no node to start with", addrs[0])
	} else if err := label(lost, false); err != nil {
		gone.Err = err
	} else {
		wait(&gone, func(e *v1.EgressIP) bool {
			cond := meta.FindStatusCondition(e.Status.Conditions, v1.ConditionEgressIPsAssigned)
			if slices.ContainsFunc(e.Status.Items, func(it v1.EgressIPStatusItem) bool { return it.EgressIP == addrs[0] }) ||
				cond == nil || cond.Reason != v1.ReasonNoNodeForIP || !strings.Contains(cond.Message, addrs[0]) {
				return false
			}
			gone.Got = "held by no node (" + cond.Reason + ")"
			return true
		})
	}
	left := AppCheck{Name: "one address left: its new connections", From: from, Target: server, Want: addrs[1]}
	home := AppCheck{Name: "the EgressIP deleted: its node's address again", From: from, Target: server, Want: sandbox.NodeAddr(p.Spec.NodeName)}
	checks := []AppCheck{spread, gone}
	if withPod {
		sources(&left, addrs[1:])
		_ = c.Delete(ctx, e)
		sources(&home, []string{home.Want})
		checks = []AppCheck{spread, both, gone, left, home}
		if lost != "" && label(lost, true) == nil {
			checks = append(checks, egressTenantsAndFailover(ctx, dir, binary, c)...)
		}
	}
	fmt.Fprintf(out, "\nEgressIP (ovn-kubernetes' shape; cluster-manager gives each address to a node labelled %s whose subnet holds it, the zones reroute the selected pods' traffic to those nodes, which SNAT it to their address; measured by the outside server; docs/egressip.md):\n\n", v1.EgressAssignableLabel)
	return PrintAppChecks(out, checks)
}
