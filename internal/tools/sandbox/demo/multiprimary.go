package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// MultiPrimaryNamespace is the namespace of examples/multi-primary.yaml: a
// Layer3 ("trees") and a Layer2 ("rows") primary network, pods on both.
const MultiPrimaryNamespace = "orchard"

// MultiPrimaryPlacements are the networks the example's pods ask for
// (k8s.ovn.org/requested-primary-udn), by pod.
var MultiPrimaryPlacements = map[string]string{
	"orchard/a": "trees", "orchard/b": "rows", "orchard/c": "rows", "orchard/d": "trees", "orchard/e": "trees", "orchard/f": "rows",
}

// MultiPrimaryChecks are the example's connectivity: its pods reach each
// other across the two networks, on one node and across nodes; its policy
// keeps everyone but its peer (d, on the Layer3 network) from the locked
// pods on either network; another tenant reaches neither network.
var MultiPrimaryChecks = []Check{
	{Name: "Layer3 to Layer2 primary, across nodes", From: "orchard/a", To: []string{"orchard/b"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer2 to Layer3 primary, across nodes", From: "orchard/b", To: []string{"orchard/d"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer2 to Layer3 primary, same node", From: "orchard/c", To: []string{"orchard/a"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer3 to Layer3 primary, across nodes", From: "orchard/d", To: []string{"orchard/a"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "policy: locked pod on Layer3, from Layer2", From: "orchard/b", To: []string{"orchard/e"}, On: OnPrimary, Family: 4},
	{Name: "policy: locked pod on Layer2, from Layer3", From: "orchard/a", To: []string{"orchard/f"}, On: OnPrimary, Family: 4},
	{Name: "policy: locked pod on Layer2, from Layer2", From: "orchard/c", To: []string{"orchard/f"}, On: OnPrimary, Family: 4},
	{Name: "policy admits its peer, other network", From: "orchard/d", To: []string{"orchard/f"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "policy admits its peer, same network", From: "orchard/d", To: []string{"orchard/e"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "another tenant to the Layer3 network", From: "l3-blue/a", To: []string{"orchard/a"}, On: OnPrimary, Family: 4},
	{Name: "another tenant to the Layer2 network", From: "l3-blue/a", To: []string{"orchard/b"}, On: OnPrimary, Family: 4},
}

// MultiPrimaryServiceRequests is how many requests each client sends to the
// example's Service.
const MultiPrimaryServiceRequests = 16

// MultiPrimaryDemo prints the tables of the example's namespace with two
// primary networks: where each pod was placed, the connectivity matrix
// (MultiPrimaryChecks), and its Service asked from a pod of each network
// (answered by pods of both). It does nothing when the example is not
// applied; the servers of its pods must be running (Servers). It fails
// when a row is not as expected.
func MultiPrimaryDemo(ctx context.Context, dir, binary string, c client.Client, out io.Writer) error {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: MultiPrimaryNamespace}, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	placed := multiPrimaryPlacements(ctx, c)
	fmt.Fprintf(out, "\nTwo primary networks in one namespace (%s: Layer3 trees, Layer2 rows, linked on every node; docs/pods.md):\n\n", MultiPrimaryNamespace)
	merr := PrintAppChecks(out, placed)
	fmt.Fprintln(out)
	results, err := Matrix(ctx, dir, binary, c, MultiPrimaryChecks)
	if err != nil {
		return errors.Join(merr, err)
	}
	merr = errors.Join(merr, PrintMatrix(out, results))
	svc, err := multiPrimaryService(ctx, dir, binary, c)
	if err != nil {
		return errors.Join(merr, err)
	}
	fmt.Fprintln(out)
	return errors.Join(merr, PrintAppChecks(out, svc))
}

// multiPrimaryPlacements checks each pod's primary attachment is on the
// network it asked for.
func multiPrimaryPlacements(ctx context.Context, c client.Client) []AppCheck {
	refs := make([]string, 0, len(MultiPrimaryPlacements))
	for ref := range MultiPrimaryPlacements {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	var out []AppCheck
	for _, ref := range refs {
		want := MultiPrimaryPlacements[ref]
		net, err := primaryNAD(ctx, c, ref)
		out = append(out, AppCheck{Name: "placed on the requested network", From: "API", Target: ref, Want: want, Got: net, Err: err})
	}
	return out
}

// primaryNAD returns the name of the NAD of a pod's primary attachment.
func primaryNAD(ctx context.Context, c client.Client, ref string) (string, error) {
	ns, name, _ := strings.Cut(ref, "/")
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return "", err
	}
	nets, err := podnet.ParsePod(pod)
	if err != nil {
		return "", err
	}
	for k, a := range nets {
		if k != podnet.DefaultKey && a.Role == podnet.RolePrimary {
			_, nad, _ := strings.Cut(k, "/")
			return nad, nil
		}
	}
	return "", fmt.Errorf("pod %s has no primary user-defined network attachment", ref)
}

// multiPrimaryService asks the example's Service from a pod of each network:
// every answer must come from its pods, and from pods of both networks.
func multiPrimaryService(ctx context.Context, dir, binary string, c client.Client) ([]AppCheck, error) {
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: MultiPrimaryNamespace, Name: "fruit"}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	// Its backends and the network each is on, from the API.
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(svc.Namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return nil, err
	}
	backendNet := map[string]string{}
	for _, p := range pods.Items {
		ref := p.Namespace + "/" + p.Name
		net, err := primaryNAD(ctx, c, ref)
		if err != nil {
			return nil, err
		}
		backendNet[ref] = net
	}
	var out []AppCheck
	for _, from := range []string{"orchard/a", "orchard/b"} {
		a := AppCheck{Name: "Service with pods on both networks", From: from + " (" + MultiPrimaryPlacements[from] + ")",
			Target: fmt.Sprintf("%s/%s %s:80", svc.Namespace, svc.Name, svc.Spec.ClusterIP), Want: "rows and trees pods"}
		netns, err := sandbox.PodNetns(ctx, dir, c, from)
		if err != nil {
			return nil, err
		}
		targets := make([]ReachTarget, MultiPrimaryServiceRequests)
		for i := range targets {
			targets[i] = ReachTarget{Address: svc.Spec.ClusterIP, Protocol: "tcp", Port: 80}
		}
		// The load balancers reach every zone a moment after the pods are
		// Ready: asked again until both networks answer, for a while.
		err = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
			answers, err := ProbeManyIn(ctx, binary, netns, targets, 2*time.Second)
			if err != nil {
				return false, err
			}
			nets := map[string]bool{}
			var strays []string
			for _, ans := range answers {
				if n, ok := backendNet[ans.Answer]; ok {
					nets[n] = true
				} else {
					strays = append(strays, fmt.Sprintf("%q %s", ans.Answer, ans.Error))
				}
			}
			var got []string
			for n := range nets {
				got = append(got, n)
			}
			slices.Sort(got)
			a.Got = strings.Join(got, " and ") + " pods"
			if len(strays) > 0 {
				a.Got += fmt.Sprintf(", %d other answers (%s)", len(strays), strays[0])
			}
			return a.Got == a.Want, nil
		})
		if err != nil && a.Got == "" {
			a.Err = err // else the row shows what was got
		}
		out = append(out, a)
	}
	return out, nil
}
