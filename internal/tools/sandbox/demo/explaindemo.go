package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/tools/explain"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// ExplainCheck is one pair the demo asks `ovn-udn explain` about, with the
// answer the measured matrix implies.
type ExplainCheck struct {
	From, To string
	// ToApp, when set, picks the destination as the first pod with label
	// app=ToApp in From's namespace (Deployments' pods have generated
	// names); To then is the port suffix, e.g. ":8080".
	ToApp string
	// Want is the outcome, with what dropped it: "delivered",
	// "dropped (<Row.Describe>)".
	Want string
}

// DemoExplainChecks are the demo's questions over examples/: a pair the
// matrix shows connected, the shop's policy drop, and a tenant's isolation
// from the default network.
var DemoExplainChecks = []ExplainCheck{
	{From: "l3-blue/a", To: "l3-blue/c:8080", Want: "delivered"},
	{From: "shop/a", ToApp: "echo", To: ":8080", Want: "delivered"},
	{From: "shop/b", ToApp: "echo", To: ":8080", Want: "dropped (the default deny of namespace shop's NetworkPolicies (Ingress))"},
	{From: "l3-blue/a", To: "plain/a:8080", Want: "dropped (network l3-blue.tenant's routing policy)"},
}

// ExplainChecks answers checks with explain against the sandbox in dir,
// skipping those whose pods are not among pods.
func ExplainChecks(ctx context.Context, dir string, c client.Client, pods []string, checks []ExplainCheck) ([]AppCheck, error) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return nil, err
	}
	e := &explain.Explainer{Kube: c, Zones: map[string]explain.Zone{}, Command: deps.OVNCommand}
	for _, n := range st.Nodes {
		e.Zones[n.Name] = explain.Zone{NB: n.NB, SB: n.SB}
	}
	defer e.Close()
	var out []AppCheck
	for _, ch := range checks {
		toPod, _, _ := strings.Cut(ch.To, ":")
		if !slices.Contains(pods, ch.From) || (ch.ToApp == "" && !slices.Contains(pods, toPod)) {
			continue
		}
		to := ch.To
		if ch.ToApp != "" {
			ns, _, _ := strings.Cut(ch.From, "/")
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": ch.ToApp}); err != nil {
				return nil, err
			}
			if len(pods.Items) == 0 {
				continue
			}
			to = ns + "/" + pods.Items[0].Name + ch.To
		}
		a := AppCheck{Name: "explain", From: ch.From, Target: to, Want: ch.Want}
		r, err := e.Explain(ctx, explain.Query{From: ch.From, To: to})
		switch {
		case err != nil:
			a.Err = err
		case r.Outcome == explain.Dropped:
			a.Got = fmt.Sprintf("%s (%s)", r.Outcome, r.DroppedBy)
		default:
			a.Got = string(r.Outcome)
		}
		out = append(out, a)
	}
	return out, nil
}

// PrintExplainDemo prints the demo's explain table.
func PrintExplainDemo(ctx context.Context, dir string, c client.Client, pods []string, out io.Writer) error {
	checks, err := ExplainChecks(ctx, dir, c, pods, DemoExplainChecks)
	if err != nil || len(checks) == 0 {
		return err
	}
	fmt.Fprintf(out, "\nWhy (ovn-udn explain: ovn-trace in the source's zone, followed into the destination's; the row that decided, named by its owner):\n\n")
	return PrintAppChecks(out, checks)
}
