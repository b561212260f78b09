package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// The demo's "where networks are rendered" section: zone controllers render
// a primary user-defined network only on the nodes that use it
// (docs/topology.md "Where a network is rendered").
const (
	// WhereUsedNamespace and WhereUsedNode are where the section's extra
	// pod goes: a namespace of examples/shared-cudn.yaml, whose network has
	// no pod on that node.
	WhereUsedNamespace = "shared-b"
	WhereUsedNode      = "node2"
	// WhereUsedPeer is the pod that reaches the extra pod across nodes.
	WhereUsedPeer = "shared-a/a"
	// DemoGracePeriod is the demo's zone controllers' grace period, short
	// so that the section shows a network leaving a node.
	DemoGracePeriod = 5 * time.Second
)

// WhereUsedDemo prints, for each primary user-defined network, the nodes
// whose zone holds its rows next to the nodes internal/activity says use
// it, and for a Layer3 network the nodes cluster-manager gave a slice of
// it; then brings a pod of a network to a node that does not use it and
// checks that the node's zone renders the network and that the pod is
// reached from another node, and a pod of its own Layer3 tenant
// (WhereUsedLayer3Namespace) to the same node, which gets a slice of that
// network; then deletes them and times the node's zone letting the
// network go after the grace period and cluster-manager releasing the
// slice after its delay. It fails when a check is not as expected.
func WhereUsedDemo(ctx context.Context, dir, binary string, c client.Client, grace time.Duration, out io.Writer) error {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return err
	}
	var nodes []string
	for _, n := range st.Nodes {
		nodes = append(nodes, n.Name)
	}
	l3net, removeL3, err := whereUsedLayer3(ctx, dir, c)
	defer removeL3()
	if err != nil {
		return err
	}
	nets, layer3, err := primaryNetworks(ctx, c)
	if err != nil {
		return err
	}
	// A NetworkPolicy on the network the section moves (ingress from
	// WhereUsedPeer's namespace only): its rows follow the network.
	network, err := NamespaceNetwork(ctx, c, WhereUsedNamespace)
	if err != nil {
		return err
	}
	pol := whereUsedPolicy()
	if err := c.Create(ctx, pol); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	defer func() { _ = c.Delete(context.Background(), pol) }()
	if want, err := activity.Of(activity.ClientView{Ctx: ctx, Reader: c}, network); err == nil {
		_ = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
			on, err := policiesOn(dir, network)
			return on == nodeList(want, nodes), err
		}) // the check below says what it found
	}
	var checks []AppCheck
	for _, n := range nets {
		want, err := activity.Of(activity.ClientView{Ctx: ctx, Reader: c}, n)
		if err != nil {
			return err
		}
		got, err := renderedOn(dir, n)
		checks = append(checks, AppCheck{Name: "rendered where used", From: "zones' Northbound", Target: n, Want: nodeList(want, nodes), Got: got, Err: err})
		if layer3[n] {
			// cluster-manager gives only those nodes a slice of it
			// (docs/allocation.md); one released a moment ago may still
			// be in its delay.
			got, err := waitSlices(ctx, c, n, nodeList(want, nodes), 10*time.Second)
			checks = append(checks, AppCheck{Name: "its slices where used", From: "Node annotations", Target: n, Want: nodeList(want, nodes), Got: got, Err: err})
		}
		// Its NetworkPolicies' rows follow it (docs/networkpolicy.md).
		if has, err := hasPolicies(ctx, c, n); err != nil || has {
			got, err2 := policiesOn(dir, n)
			checks = append(checks, AppCheck{Name: "its policies where used", From: "zones' Northbound", Target: n, Want: nodeList(want, nodes), Got: got, Err: errors.Join(err, err2)})
		}
	}
	fmt.Fprintf(out, "\nWhere networks are rendered (a primary UDN only on the nodes that use it: its pods, a connected network's, or a node-port service anywhere; docs/topology.md), and where a Layer3 one has node slices (docs/allocation.md):\n\n")
	merr := PrintAppChecks(out, checks)

	// The first pod of a network on a node, then the last one leaving.
	if network == "" || network == nodeinfo.DefaultNetwork {
		return merr
	}
	if on, err := renderedOn(dir, network); err != nil || slices.Contains(strings.Split(on, ","), WhereUsedNode) {
		return errors.Join(merr, err, fmt.Errorf("network %s is already rendered on %s (%s): the section needs a node that does not use it", network, WhereUsedNode, on))
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: WhereUsedNamespace, Name: "late"},
		Spec: corev1.PodSpec{NodeName: WhereUsedNode, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
	ref := pod.Namespace + "/" + pod.Name
	start := time.Now()
	if err := c.Create(ctx, pod); err != nil {
		return errors.Join(merr, err)
	}
	defer func() { _ = c.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) }()
	// and the Layer3 tenant's first pod on the same node.
	l3pod := whereUsedPod(WhereUsedLayer3Namespace, "late", WhereUsedNode)
	if err := c.Create(ctx, l3pod); err != nil {
		return errors.Join(merr, err)
	}
	if err := WaitPodsReady(ctx, dir, c, []string{ref}, 2*time.Minute); err != nil {
		return errors.Join(merr, err)
	}
	ready := time.Since(start)
	stop, err := Servers(ctx, dir, binary, c, []string{ref})
	if err != nil {
		return errors.Join(merr, err)
	}
	results, err := Matrix(ctx, dir, binary, c, []Check{{Name: "first pod of the network on " + WhereUsedNode, From: WhereUsedPeer, To: []string{ref}, On: OnPrimary, Family: 4, Reachable: true}})
	stop()
	if err != nil {
		return errors.Join(merr, err)
	}
	fmt.Fprintf(out, "\n%s gets its first pod of %s (Ready %s after creation, the network's rows in its zone with it):\n\n", WhereUsedNode, network, ready.Round(100*time.Millisecond))
	merr = errors.Join(merr, PrintMatrix(out, results))

	on, err := renderedOn(dir, network)
	var after []AppCheck
	after = append(after, AppCheck{Name: "first pod on a node", From: "zones' Northbound", Target: network,
		Want: "rendered on " + WhereUsedNode, Got: onNode(on, err), Err: err})
	var pon string
	err = proc.WaitFor(10*time.Second, 100*time.Millisecond, func() (bool, error) { // planned after the network
		var err error
		pon, err = policiesOn(dir, network)
		return err == nil && slices.Contains(strings.Split(pon, ","), WhereUsedNode), err
	})
	after = append(after, AppCheck{Name: "its policies with it", From: "zones' Northbound", Target: pol.Namespace + "/" + pol.Name,
		Want: "rendered on " + WhereUsedNode, Got: onNode(pon, err), Err: err})
	held, err := waitSlices(ctx, c, l3net, "node1,"+WhereUsedNode, 30*time.Second)
	after = append(after, AppCheck{Name: "a Layer3 network's first pod on a node", From: "Node annotations", Target: l3net,
		Want: "slices on node1," + WhereUsedNode, Got: "slices on " + held, Err: err})
	// Timed from before the deletions: neither the zones' nor
	// cluster-manager's period can start earlier.
	gone := time.Now()
	for _, p := range []*corev1.Pod{pod, l3pod} {
		if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			return errors.Join(merr, err)
		}
	}
	err = proc.WaitFor(grace+time.Minute, 200*time.Millisecond, func() (bool, error) {
		on, err := renderedOn(dir, network)
		return err == nil && !slices.Contains(strings.Split(on, ","), WhereUsedNode), err
	})
	took := time.Since(gone)
	want := fmt.Sprintf("gone from %s after the grace period", WhereUsedNode)
	got := want
	switch {
	case err != nil:
		got = "still rendered on " + WhereUsedNode
	case took < grace:
		got = fmt.Sprintf("gone from %s before the grace period", WhereUsedNode)
	}
	after = append(after, AppCheck{Name: fmt.Sprintf("last pod leaves the node (grace %s, gone after %s)", grace, took.Round(100*time.Millisecond)),
		From: "zones' Northbound", Target: network, Want: want, Got: got, Err: err})
	err = proc.WaitFor(10*time.Second, 100*time.Millisecond, func() (bool, error) {
		var err error
		pon, err = policiesOn(dir, network)
		return err == nil && !slices.Contains(strings.Split(pon, ","), WhereUsedNode), err
	})
	pgot := want
	if err != nil {
		pgot = "still rendered on " + WhereUsedNode
	}
	after = append(after, AppCheck{Name: "its policies with it", From: "zones' Northbound", Target: pol.Namespace + "/" + pol.Name,
		Want: want, Got: pgot, Err: err})
	// cluster-manager releases the node's slice of the Layer3 network a
	// quarter of the grace period after the zones let the network go.
	delay := whereused.ReleaseDelay(grace)
	held, err = waitSlices(ctx, c, l3net, "node1", delay+time.Minute)
	took = time.Since(gone)
	swant := fmt.Sprintf("released by %s after %s", WhereUsedNode, delay)
	sgot := swant
	switch {
	case held != "node1":
		sgot = "slices on " + held
	case took < delay:
		sgot = fmt.Sprintf("released by %s before %s", WhereUsedNode, delay)
	}
	after = append(after, AppCheck{Name: fmt.Sprintf("its last pod leaves (slice released after %s)", took.Round(100*time.Millisecond)),
		From: "Node annotations", Target: l3net, Want: swant, Got: sgot, Err: err})
	fmt.Fprintln(out)
	return errors.Join(merr, PrintAppChecks(out, after))
}

// primaryNetworks returns the names of the primary user-defined networks
// the NADs define, sorted, and which of them are Layer3.
func primaryNetworks(ctx context.Context, c client.Client) ([]string, map[string]bool, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &nads); err != nil {
		return nil, nil, err
	}
	var out []string
	layer3 := map[string]bool{}
	for i := range nads.Items {
		conf, err := netconf.Parse(&nads.Items[i])
		if err != nil || conf == nil || !conf.IsPrimary() {
			continue
		}
		out = append(out, conf.Name)
		layer3[conf.Name] = conf.Topology == netconf.TopologyLayer3
	}
	slices.Sort(out)
	return slices.Compact(out), layer3, nil
}

// slicesOn returns the nodes whose subnets annotation holds a slice of
// the network, comma-separated, as renderedOn.
func slicesOn(ctx context.Context, c client.Client, network string) (string, error) {
	var list corev1.NodeList
	if err := c.List(ctx, &list); err != nil {
		return "", err
	}
	var on []string
	for _, n := range list.Items {
		s, err := nodeinfo.ParseSubnets(n.Annotations[nodeinfo.NodeSubnetsAnnotation])
		if err != nil {
			return "", fmt.Errorf("node %s: %w", n.Name, err)
		}
		if len(s[network]) > 0 {
			on = append(on, n.Name)
		}
	}
	if len(on) == 0 {
		return "none", nil
	}
	slices.Sort(on)
	return strings.Join(on, ","), nil
}

// renderedOn returns the nodes whose zone holds a switch or router of the
// network (owned by its zone controller's network key), comma-separated.
func renderedOn(dir, network string) (string, error) {
	return zonesWith(dir, []string{"Logical_Switch", "Logical_Router"}, `external_ids:"k8s.ovn.org/owner"="net:`+network+`"`,
		func(out string) bool { return strings.TrimSpace(out) != "" })
}

// zonesWith returns the nodes whose zone has, in one of the tables, rows
// matching the ovn-nbctl find condition whose external_ids held accepts,
// comma-separated ("none" when no zone has).
func zonesWith(dir string, tables []string, condition string, held func(externalIDs string) bool) (string, error) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return "", err
	}
	var on []string
	for _, n := range st.Nodes {
		has := false
		for _, table := range tables {
			out, err := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--bare", "--columns=external_ids", "find", table, condition).CombinedOutput()
			if err != nil {
				return "", fmt.Errorf("zone %s: %v: %s", n.Name, err, out)
			}
			has = has || held(string(out))
		}
		if has {
			on = append(on, n.Name)
		}
	}
	if len(on) == 0 {
		return "none", nil
	}
	return strings.Join(on, ","), nil
}

// whereUsedPolicy is the section's NetworkPolicy: WhereUsedNamespace's pods
// take ingress from WhereUsedPeer's namespace only.
func whereUsedPolicy() *networkingv1.NetworkPolicy {
	peerNS, _, _ := strings.Cut(WhereUsedPeer, "/")
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: WhereUsedNamespace, Name: "from-" + peerNS},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": peerNS}},
			}}}},
		}}
}

// hasPolicies reports whether a namespace of the network has a
// NetworkPolicy.
func hasPolicies(ctx context.Context, c client.Client, network string) (bool, error) {
	namespaces, err := activity.ClientView{Ctx: ctx, Reader: c}.NetworkNamespaces(network)
	if err != nil {
		return false, err
	}
	for _, ns := range namespaces {
		var list networkingv1.NetworkPolicyList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// policiesOn returns the nodes whose zone holds a port group or address set
// of the network's NetworkPolicies (external_ids k8s.ovn.org/network and
// k8s.ovn.org/kind NetworkPolicy...), comma-separated, as renderedOn.
func policiesOn(dir, network string) (string, error) {
	return zonesWith(dir, []string{"Port_Group", "Address_Set"}, `external_ids:"k8s.ovn.org/network"="`+network+`"`,
		func(out string) bool { return strings.Contains(out, "k8s.ovn.org/kind=NetworkPolicy") })
}

// nodeList says a set of nodes as renderedOn does, among nodes.
func nodeList(s activity.Nodes, nodes []string) string {
	var on []string
	for _, n := range nodes {
		if s.Has(n) {
			on = append(on, n)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}

// onNode says whether a renderedOn answer holds WhereUsedNode.
func onNode(on string, err error) string {
	if err == nil && slices.Contains(strings.Split(on, ","), WhereUsedNode) {
		return "rendered on " + WhereUsedNode
	}
	return "rendered on " + on
}
