package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// explainOut runs `ovn-udn explain` against the shared sandbox.
func explainOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"explain", "--sandbox", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ovn-udn explain %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestExplain: `ovn-udn explain` on the examples' pods, whose real
// reachability TestDemoMatrix measures with packets: a same-network pair
// across nodes is delivered through both zones; a Layer3 tenant's pod to a
// default-network pod is dropped by the tenant network's isolation policy;
// the shop's NetworkPolicy admits its frontend (named) and its default deny
// drops the other pod (naming the policy that isolates the echo pod); a pod
// of a same-subnet Layer2 tenant sent to the other tenant's address never
// reaches it; and a Service's address stops at its load balancer with its
// backends. (l3-red is gone by now: TestNetworkDeletion deletes it.)
func TestExplain(t *testing.T) {
	ctx := context.Background()
	var echo corev1.PodList
	if err := admin.List(ctx, &echo, client.InNamespace("shop"), client.MatchingLabels{"app": "echo"}); err != nil || len(echo.Items) == 0 {
		t.Fatalf("shop's echo pods: %v (%d)", err, len(echo.Items))
	}
	used := []string{"l3-blue/a", "l3-blue/c", "plain/a", "shop/a", "shop/b", "l2-red/a", "l2-blue/c", "shop/" + echo.Items[0].Name}
	if err := demo.WaitPodsReady(ctx, dir, admin, used, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	// TestPodRecreatedOnAnotherNode may have moved l3-blue/c.
	c := &corev1.Pod{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "l3-blue", Name: "c"}, c); err != nil {
		t.Fatal(err)
	}
	cNode := c.Spec.NodeName
	if cNode == "node1" {
		t.Fatalf("l3-blue/c is on node1 with l3-blue/a: no pair across nodes")
	}
	echoPod := "shop/" + echo.Items[0].Name
	echoPort := "shop.tenant_shop_" + echo.Items[0].Name
	tests := []struct {
		name     string
		args     []string
		contains []string
	}{
		{
			name: "same network across nodes",
			args: []string{"--from", "l3-blue/a", "--to", "l3-blue/c:8080"},
			contains: []string{
				"zone of node1, entering l3-blue.tenant_node1 at l3-blue.tenant_l3-blue_a:",
				"tstor-l3-blue.tenant_node1 -> tstor-l3-blue.tenant_" + cNode + " (remote: on another node)",
				"zone of " + cNode + ", entering l3-blue.tenant_transit_switch at tstor-l3-blue.tenant_node1:",
				"DELIVERED to l3-blue.tenant_l3-blue_c (pod l3-blue/c on node " + cNode + ")",
			},
		},
		{
			name: "tenant to the default network: isolation",
			args: []string{"--from", "l3-blue/a", "--to", "plain/a:8080"},
			contains: []string{
				"note: plain/a has no attachment on network l3-blue.tenant",
				"DROPPED\nwhy: by network l3-blue.tenant's routing policy: Logical_Router_Policy priority 1200 match \"ip4.dst == 10.244.0.0/16\" action drop, in ingress of l3-blue.tenant_ovn_cluster_router",
			},
		},
		{
			name: "admitted by a NetworkPolicy",
			args: []string{"--from", "shop/a", "--to", echoPod + ":8080"},
			contains: []string{
				"admitted by NetworkPolicy shop/echo-from-frontend (Ingress)",
				"DELIVERED to " + echoPort + " (pod " + echoPod,
			},
		},
		{
			name: "dropped by a namespace's default deny",
			args: []string{"--from", "shop/b", "--to", echoPod + ":8080"},
			contains: []string{
				"DROPPED\nwhy: by the default deny of namespace shop's NetworkPolicies (Ingress)",
				echoPod + " is isolated for Ingress by NetworkPolicy echo-from-frontend, and none of them admits this packet",
			},
		},
		{
			name:     "same subnet, other tenant",
			args:     []string{"--from", "l2-red/a", "--to", "l2-blue/c:8080"},
			contains: []string{"note: l2-blue/c has no attachment on network l2-red.tenant"},
		},
		{
			name:     "a Service's address",
			args:     []string{"--from", "plain/a", "--to", "10.96.0.10:53", "--protocol", "udp"},
			contains: []string{"load balancer: backends ", "LOAD BALANCED to "},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := explainOut(t, tc.args...)
			for _, want := range tc.contains {
				if !strings.Contains(out, want) {
					t.Errorf("explain %v output lacks %q:\n%s", tc.args, want, out)
				}
			}
			if strings.Contains(tc.name, "other tenant") && strings.Contains(out, "\nDELIVERED ") {
				t.Errorf("l2-red's pod reached l2-blue's:\n%s", out)
			}
		})
	}
	// Bad input is refused with the reason.
	out, err := exec.Command(binary, "explain", "--sandbox", dir, "--from", "l3-blue/a", "--to", "l3-blue/nope").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "l3-blue/nope") {
		t.Errorf("explain to a missing pod: %v\n%s", err, out)
	}
}
