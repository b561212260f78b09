package e2e

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// The networks of TestNetworkConnect: two Layer3, one Layer2 and a fourth
// Layer3 network no connect selects, each a namespace with a primary UDN.
var cnNetworks = []struct{ ns, topology, subnet string }{
	{"cn-a", "Layer3", "10.170.0.0/16/24"},
	{"cn-b", "Layer3", "10.171.0.0/16/24"},
	{"cn-c", "Layer2", "10.172.0.0/16"},
	{"cn-d", "Layer3", "10.173.0.0/16/24"},
}

// cnPods are its pods: one per network on different nodes, and a second
// Layer2 pod on node1 (a Layer2 pod next to a Layer3 one on the same node).
var cnPods = []struct{ ns, name, node string }{
	{"cn-a", "a", "node1"}, {"cn-b", "b", "node2"}, {"cn-c", "c1", "node3"}, {"cn-c", "c2", "node1"}, {"cn-d", "d", "node2"},
}

const (
	cnProbeTimeout = time.Second
	cnDeadline     = 60 * time.Second
)

var cnProbes = []demo.ReachProbe{{Protocol: "tcp", Port: 80}}

// cnConnect is a ClusterNetworkConnect of the primary UDNs of the namespaces
// labelled label=yes.
func cnConnect(name, label, subnet string, types ...v1.ConnectivityType) *v1.ClusterNetworkConnect {
	return &v1.ClusterNetworkConnect{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ClusterNetworkConnectSpec{
		NetworkSelectors: v1.NetworkSelectors{{NetworkSelectionType: v1.PrimaryUserDefinedNetworkSelection,
			PrimaryUserDefinedNetworkSelector: &v1.PrimaryUserDefinedNetworkSelector{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{label: "yes"}}}}},
		ConnectSubnets:      []v1.ConnectSubnet{{CIDR: v1.ConnectCIDR(subnet), NetworkPrefix: 24}},
		ConnectivityEnabled: types}}
}

// TestNetworkConnect: real packets across ClusterNetworkConnects. Before any
// connect, the four networks are isolated. A connect of three of them
// (PodNetwork and ClusterIPServiceNetwork): their pods reach each other in
// both directions across nodes and each other's ClusterIP services, the
// fourth still reaches nothing. The same connect with ClusterIPServiceNetwork
// alone: the services still answer, the pods no longer do. Deleted:
// isolated again, services too. Two connects A–B and B–C (PodNetwork only):
// A reaches B, B reaches C, A does not reach C (not transitive), and no
// service crosses.
func TestNetworkConnect(t *testing.T) {
	ctx := context.Background()
	for _, n := range cnNetworks {
		nsNetwork(t, n.ns, n.topology, n.subnet) // with a pod "a" on node1
		t.Cleanup(func() { _ = admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n.ns}}) })
		if n.ns == "cn-a" {
			continue // its pod "a" is cnPods' first
		}
		if err := admin.Delete(ctx, podOn(n.ns, "a", "node1", nil)); err != nil {
			t.Fatal(err)
		}
	}
	var refs []string
	for _, p := range cnPods {
		pod := podOn(p.ns, p.name, p.node, nil)
		pod.Labels = map[string]string{"app": p.ns}
		if p.ns == "cn-a" {
			// nsNetwork made it: label it for its service.
			got := &corev1.Pod{}
			if err := admin.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				t.Fatal(err)
			}
			got.Labels = pod.Labels
			if err := admin.Update(ctx, got); err != nil {
				t.Fatal(err)
			}
		} else if err := admin.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, p.ns+"/"+p.name)
	}
	if err := demo.WaitPodsReady(ctx, dir, admin, refs, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	pods, err := demo.ReachPods(ctx, dir, admin, refs)
	if err != nil {
		t.Fatal(err)
	}
	reachServers(t, pods, cnProbes, cnProbeTimeout, cnDeadline)
	// A service in front of cn-a/a and one in front of cn-b/b.
	vips := map[string]string{}
	for _, ns := range []string{"cn-a", "cn-b"} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": ns}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(80)}}}}
		if err := admin.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
		vips[ns] = svc.Spec.ClusterIP
	}
	all := []string{"cn-a", "cn-b", "cn-c"}
	for _, ns := range all {
		labelNamespace(t, ns, "cn-all")
	}
	for _, ns := range []string{"cn-a", "cn-b"} {
		labelNamespace(t, ns, "cn-ab")
	}
	for _, ns := range []string{"cn-b", "cn-c"} {
		labelNamespace(t, ns, "cn-bc")
	}

	// Phase by phase: which networks reach each other's pods, and which
	// services answer whom.
	cnExpect(t, "no connect", pods, vips, nil, nil)

	abc := cnConnect("cn-abc", "cn-all", "10.180.0.0/16", v1.PodNetwork, v1.ClusterIPServiceNetwork)
	createConnect(t, abc)
	cnExpect(t, "pods and services of a, b, c", pods, vips, [][]string{all}, [][]string{all})

	// NetworkPolicy peers span the connected networks: a policy of cn-a
	// admitting cn-b's namespace lets cn-b's pod in (directly and through
	// cn-a's service), not cn-c's, though both are connected.
	pol := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "cn-a", Name: "from-b"}, Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "cn-b"}}}}}}}}
	if err := admin.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	cnExpect(t, "a policy of a admits b only", pods, vips, [][]string{all}, [][]string{all}, "cn-a", "cn-b")
	if err := admin.Delete(ctx, pol); err != nil {
		t.Fatal(err)
	}

	setConnectivity(t, abc, v1.ClusterIPServiceNetwork)
	cnExpect(t, "services only of a, b, c", pods, vips, nil, [][]string{all})

	deleteConnect(t, abc)
	cnExpect(t, "connect deleted", pods, vips, nil, nil)

	ab := cnConnect("cn-ab", "cn-ab", "10.181.0.0/16", v1.PodNetwork)
	bc := cnConnect("cn-bc", "cn-bc", "10.182.0.0/16", v1.PodNetwork)
	createConnect(t, ab)
	createConnect(t, bc)
	cnExpect(t, "a-b and b-c: not transitive", pods, vips, [][]string{{"cn-a", "cn-b"}, {"cn-b", "cn-c"}}, nil)
	deleteConnect(t, ab)
	deleteConnect(t, bc)
}

// labelNamespace sets label=yes on a namespace.
func labelNamespace(t *testing.T, ns, label string) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := admin.Get(context.Background(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels[label] = "yes"
	if err := admin.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// createConnect creates a connect and waits until every zone reports it set
// up (status Success).
func createConnect(t *testing.T, cnc *v1.ClusterNetworkConnect) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Create(ctx, cnc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.Delete(ctx, &v1.ClusterNetworkConnect{ObjectMeta: metav1.ObjectMeta{Name: cnc.Name}})
	})
	eventually(t, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(cnc), cnc); err != nil {
			return err
		}
		if cnc.Status.Status != v1.ConnectSuccess {
			return fmt.Errorf("connect %s: status %q, conditions %+v", cnc.Name, cnc.Status.Status, cnc.Status.Conditions)
		}
		return nil
	})
}

// setConnectivity changes what a connect lets cross.
func setConnectivity(t *testing.T, cnc *v1.ClusterNetworkConnect, types ...v1.ConnectivityType) {
	t.Helper()
	ctx := context.Background()
	eventually(t, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(cnc), cnc); err != nil {
			return err
		}
		cnc.Spec.ConnectivityEnabled = types
		return admin.Update(ctx, cnc)
	})
}

// deleteConnect deletes a connect and waits until it is gone.
func deleteConnect(t *testing.T, cnc *v1.ClusterNetworkConnect) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Delete(ctx, cnc); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(cnc), &v1.ClusterNetworkConnect{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("connect %s still there (%v)", cnc.Name, err)
		}
		return nil
	})
}

// cnExpect measures, until it is as expected or cnDeadline passes, the
// pod-to-pod matrix (pods of one network always reach each other, pods of
// networks in one of podGroups too) and the services (a pod reaches the
// service of namespace ns when ns is its own or one of svcGroups holds
// both), and fails with what differs. onlyFrom, as pairs of namespaces
// (target, source), says a NetworkPolicy admits into target's pods only
// source's pods (and target's own).
func cnExpect(t *testing.T, phase string, pods []demo.ReachPod, vips map[string]string, podGroups, svcGroups [][]string, onlyFrom ...string) {
	t.Helper()
	ctx := context.Background()
	nsOf := func(ref string) string { ns, _, _ := strings.Cut(ref, "/"); return ns }
	together := func(groups [][]string, a, b string) bool {
		if a == b {
			return true
		}
		for _, g := range groups {
			if slices.Contains(g, a) && slices.Contains(g, b) {
				return true
			}
		}
		return false
	}
	admits := func(from, to string) bool {
		for i := 0; i+1 < len(onlyFrom); i += 2 {
			if onlyFrom[i] == to && from != to && from != onlyFrom[i+1] {
				return false
			}
		}
		return true
	}
	refs := make([]string, len(pods))
	for i, p := range pods {
		refs[i] = p.Ref
	}
	want := demo.NewReachability(refs, cnProbes)
	for i := range pods {
		for j := range pods {
			if i != j {
				from, to := nsOf(refs[i]), nsOf(refs[j])
				want.Set(i, j, 0, together(podGroups, from, to) && admits(from, to))
			}
		}
	}
	// Services: every pod but the backend itself probes each VIP.
	type svcCell struct {
		from   int
		ns     string
		answer string
	}
	var cells []svcCell
	targets := make([][]demo.ReachTarget, len(pods))
	for i, p := range pods {
		for _, ns := range []string{"cn-a", "cn-b"} {
			if nsOf(p.Ref) == ns {
				continue
			}
			targets[i] = append(targets[i], demo.ReachTarget{Address: vips[ns], Protocol: "tcp", Port: 80})
			cells = append(cells, svcCell{from: i, ns: ns})
		}
	}
	backend := map[string]string{"cn-a": "cn-a/a", "cn-b": "cn-b/b"}
	deadline := time.Now().Add(cnDeadline)
	start := time.Now()
	for {
		got, err := demo.Reach(ctx, binary, [][]demo.ReachPod{pods}, cnProbes, cnProbeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		mismatches, err := want.Mismatches(got[0])
		if err != nil {
			t.Fatal(err)
		}
		var svcWrong []string
		k := 0
		for i, p := range pods {
			answers, err := demo.ProbeManyIn(ctx, binary, p.Netns, targets[i], cnProbeTimeout)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range answers {
				c := cells[k]
				k++
				wantReach := together(svcGroups, nsOf(p.Ref), c.ns) && admits(nsOf(p.Ref), c.ns)
				if (a.Answer == backend[c.ns]) != wantReach {
					svcWrong = append(svcWrong, fmt.Sprintf("%s -> service %s/svc (%s): want reached=%v, answer %q %s", p.Ref, c.ns, a.Address, wantReach, a.Answer, a.Error))
				}
			}
		}
		if len(mismatches) == 0 && len(svcWrong) == 0 {
			t.Logf("%s: as expected after %s", phase, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			var out bytes.Buffer
			fmt.Fprintf(&out, "%s: not as expected after %s\nexpected:\n", phase, cnDeadline)
			_ = want.Print(&out, nil)
			fmt.Fprintln(&out, "measured:")
			_ = got[0].Print(&out, want)
			for _, m := range mismatches {
				fmt.Fprintf(&out, "  %s\n", m)
			}
			for _, s := range svcWrong {
				fmt.Fprintf(&out, "  %s\n", s)
			}
			t.Fatal(out.String())
		}
	}
}
