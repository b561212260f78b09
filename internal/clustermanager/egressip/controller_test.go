package egressip_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

// node creates a Ready node on 172.18.0.0/16 with the given labels.
func node(t *testing.T, c client.Client, name string, i int, labels map[string]string) *corev1.Node {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels,
		Annotations: map[string]string{nodeinfo.PrimaryIfAddrAnnotation: fmt.Sprintf(`{"ipv4":"172.18.0.%d/16"}`, i)}}}
	if err := c.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, n)
	setReady(t, c, n, corev1.ConditionTrue)
	return n
}

func setReady(t *testing.T, c client.Client, n *corev1.Node, status corev1.ConditionStatus) {
	t.Helper()
	change(t, c, n, func(n *corev1.Node) error {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		return c.Status().Update(context.Background(), n)
	})
}

// change applies f to the node as it is now, again after a write
// conflict (cluster-manager annotates nodes too).
func change(t *testing.T, c client.Client, n *corev1.Node, f func(*corev1.Node) error) {
	t.Helper()
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		return f(n)
	})
}

// waitStatus waits until check accepts the EgressIP's status.
func waitStatus(t *testing.T, c client.Client, name string, check func(*v1.EgressIP) error) *v1.EgressIP {
	t.Helper()
	e := &v1.EgressIP{}
	cmtest.Eventually(t, 0, func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, e); err != nil {
			return err
		}
		return check(e)
	})
	return e
}

func nodeOf(e *v1.EgressIP, addr string) string {
	for _, it := range e.Status.Items {
		if it.EgressIP == addr {
			return it.Node
		}
	}
	return ""
}

func condition(e *v1.EgressIP, status metav1.ConditionStatus, reason string) error {
	cond := meta.FindStatusCondition(e.Status.Conditions, v1.ConditionEgressIPsAssigned)
	if cond == nil || cond.Status != status || cond.Reason != reason {
		return fmt.Errorf("condition %+v, want %s %s", cond, status, reason)
	}
	return nil
}

// TestAssignment runs cluster-manager (under its own RBAC) on a real API
// server: an EgressIP's two addresses go to two assignable nodes in two
// failure domains; an address moves when its node stops being Ready or
// loses the label, with an Event; an address no node can hold and an
// address an older object holds are reported in the condition and in a
// Warning Event.
func TestAssignment(t *testing.T) {
	c := cmtest.Admin(t, env)
	cmtest.Start(t, env, config.Default())
	ctx := context.Background()
	zone := func(z string) map[string]string {
		return map[string]string{v1.EgressAssignableLabel: "", corev1.LabelTopologyZone: z}
	}
	a := node(t, c, "eip-a", 11, zone("z1"))
	b := node(t, c, "eip-b", 12, zone("z1"))
	node(t, c, "eip-c", 13, zone("z2"))
	node(t, c, "eip-plain", 14, nil)

	e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "eip-prod"}, Spec: v1.EgressIPSpec{
		EgressIPs: []string{"172.18.0.33", "172.18.0.44"}, NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}}
	if err := c.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, e)
	e = waitStatus(t, c, e.Name, func(e *v1.EgressIP) error {
		if len(e.Status.Items) != 2 {
			return fmt.Errorf("items %v", e.Status.Items)
		}
		return condition(e, metav1.ConditionTrue, v1.ReasonAssigned)
	})
	first, second := nodeOf(e, "172.18.0.33"), nodeOf(e, "172.18.0.44")
	if first != "eip-a" || second != "eip-c" {
		t.Fatalf("assigned to %s and %s, want eip-a (z1) and eip-c (z2): distinct nodes, distinct failure domains", first, second)
	}

	// Failover: eip-a stops being Ready.
	start := time.Now()
	setReady(t, c, a, corev1.ConditionFalse)
	e = waitStatus(t, c, e.Name, func(e *v1.EgressIP) error {
		if n := nodeOf(e, "172.18.0.33"); n != "eip-b" {
			return fmt.Errorf("172.18.0.33 on %q, want eip-b", n)
		}
		return nil
	})
	t.Logf("reassigned %s after its node became NotReady", time.Since(start).Round(time.Millisecond))
	if msg := cmtest.WaitEvent(t, c, e, "EgressIP", egressip.EventMoved); msg != "172.18.0.33 moved from node eip-a to node eip-b" {
		t.Errorf("event %q", msg)
	}
	// eip-b loses the label: no other node of the subnet is free for this
	// object (eip-c holds its other address).
	change(t, c, b, func(n *corev1.Node) error {
		delete(n.Labels, v1.EgressAssignableLabel)
		return c.Update(ctx, n)
	})
	waitStatus(t, c, e.Name, func(e *v1.EgressIP) error {
		if len(e.Status.Items) != 1 || nodeOf(e, "172.18.0.44") != "eip-c" {
			return fmt.Errorf("items %v, want 172.18.0.44 on eip-c only", e.Status.Items)
		}
		return condition(e, metav1.ConditionFalse, v1.ReasonNoNodeForIP)
	})

	// A younger object claiming an address, and an address no node holds.
	young := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "eip-young"}, Spec: v1.EgressIPSpec{
		EgressIPs: []string{"172.18.0.44", "10.99.0.1"}, NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}}}
	if err := c.Create(ctx, young); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, c, young)
	young = waitStatus(t, c, young.Name, func(e *v1.EgressIP) error {
		cond := meta.FindStatusCondition(e.Status.Conditions, v1.ConditionEgressIPsAssigned)
		want := "172.18.0.44 is already EgressIP eip-prod's, which is older; no Ready, reachable node labelled k8s.ovn.org/egress-assignable has 10.99.0.1 in its subnets"
		if cond == nil || cond.Message != want || len(e.Status.Items) != 0 {
			return fmt.Errorf("condition %+v, items %v; want message %q and no item", cond, e.Status.Items, want)
		}
		return condition(e, metav1.ConditionFalse, v1.ReasonIPClaimedByOlder)
	})
	cmtest.WaitEvent(t, c, young, "EgressIP", v1.ReasonIPClaimedByOlder)
}

// TestWithoutCRD: on a cluster without the EgressIP CRD, cluster-manager
// runs without the controller: its other controllers still work (a UDN
// gets its NAD), and it stops without error.
func TestWithoutCRD(t *testing.T) {
	dir := t.TempDir()
	crds, err := filepath.Glob(filepath.Join(kubetest.ProjectCRDDir(), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range crds {
		if strings.Contains(f, "egressips") || strings.HasSuffix(f, "kustomization.yaml") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bare := kubetest.New(t, kubetest.Options{CRDDirs: []string{dir}})
	c := cmtest.Admin(t, bare)
	stop := cmtest.Start(t, bare, config.Default())
	ns := cmtest.Namespace(t, c, "no-eip", map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.70.0.0/24"}}}
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, c, u)
	stop()
}
