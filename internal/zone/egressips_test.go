package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// TestEgressIPFeature: the zone feature on real zones. An EgressIP whose
// namespace selector picks a label and whose pod selector picks one of two
// pods on node-a, its address assigned to node-b (Ready, egress-assignable,
// no pod of the network): once the namespace gets the label, node-b renders
// the network for it, node-a reroutes that pod only, node-b SNATs it to the
// egress IP; once the label goes, so do those rows and node-b's rendering
// of the network; deleting the EgressIP (label back) takes the rows away.
func TestEgressIPFeature(t *testing.T) {
	c := clustertest.StartWith(t, env, config.Default(), func(o *zone.Options) { o.InactiveGracePeriod = time.Second }, "node-a", "node-b")
	ctx := context.Background()
	nb := c.Node("node-b")
	nb.Labels = map[string]string{v1.EgressAssignableLabel: ""}
	if err := c.Admin.Update(ctx, nb); err != nil {
		t.Fatal(err)
	}
	nb = c.Node("node-b")
	nb.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := c.Admin.Status().Update(ctx, nb); err != nil {
		t.Fatal(err)
	}
	ns, network := udnIn(t, c.Admin, "eipz", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}})
	key := podnet.Key(ns, "net")
	// The network goes at the end (cluster-manager still runs then): the
	// package's later zones render every network the API server holds,
	// and each is one more Event on their left-out nodes, whose recorder
	// allows 25 per node.
	t.Cleanup(func() {
		_ = c.Admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		_ = c.Admin.Delete(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}})
		cmtest.Eventually(t, time.Minute, func() error {
			var nads nadv1.NetworkAttachmentDefinitionList
			if err := c.Admin.List(ctx, &nads, client.InNamespace(ns)); err != nil {
				return err
			}
			if len(nads.Items) > 0 {
				return fmt.Errorf("%s's NAD is still there", network)
			}
			return nil
		})
	})
	web := newPod(ns, "web", "node-a", nil)
	web.Labels = map[string]string{"app": "web"}
	other := newPod(ns, "other", "node-a", nil)
	createPod(t, c.Admin, web)
	createPod(t, c.Admin, other)
	webIP := addr(t, waitAnnotated(t, c.Admin, web, "default", key)[key], true).Addr().String()
	otherIP := addr(t, waitAnnotated(t, c.Admin, other, "default", key)[key], true).Addr().String()

	e := &v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: "eipz"}, Spec: v1.EgressIPSpec{EgressIPs: []string{"172.18.0.60"},
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"egress": ns}},
		PodSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if err := c.Admin.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	za, zb := c.Zones["node-a"], c.Zones["node-b"]
	label := func(on bool) {
		t.Helper()
		n := &corev1.Namespace{}
		if err := c.Admin.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			t.Fatal(err)
		}
		if on {
			n.Labels["egress"] = ns
		} else {
			delete(n.Labels, "egress")
		}
		if err := c.Admin.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	label(true)
	find := func(z interface {
		NBCtl(...string) (string, error)
	}, table, columns string, cond ...string) string {
		out, err := z.NBCtl(append([]string{"--bare", "--columns=" + columns, "find", table}, cond...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(out), " ")
	}
	reroute := func() string { return find(za, "Logical_Router_Policy", "match", "priority=100", "action=reroute") }
	snat := func() string { return find(zb, "NAT", "logical_ip", "type=snat", "external_ip=172.18.0.60") }
	cmtest.Eventually(t, time.Minute, func() error {
		if got := reroute(); !strings.Contains(got, "ip4.src == "+webIP) {
			return fmt.Errorf("node-a's reroutes %q, want one for %s", got, webIP)
		}
		if got := snat(); !strings.Contains(got, webIP+"/32") {
			return fmt.Errorf("node-b's SNATs to the egress IP %q, want %s/32", got, webIP)
		}
		return nil
	})
	if got := reroute(); strings.Contains(got, otherIP+" ") || strings.HasSuffix(got, otherIP) {
		t.Errorf("the pod the selector leaves out is rerouted: %q", got)
	}
	c.WaitNB("node-b", "Logical_Router:GR_"+network+"_node-b")
	gone := func() error {
		if got := reroute(); got != "" {
			return fmt.Errorf("node-a still reroutes: %q", got)
		}
		if got := snat(); got != "" {
			return fmt.Errorf("node-b still SNATs to the egress IP: %q", got)
		}
		return nil
	}

	// The namespace no longer selected: the rows go, and node-b, which has
	// no pod of the network, stops rendering it after the grace period.
	label(false)
	cmtest.Eventually(t, time.Minute, func() error {
		if err := gone(); err != nil {
			return err
		}
		if out := zb.MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Router", "name=GR_"+network+"_node-b"); out != "" {
			return fmt.Errorf("node-b still renders %s", network)
		}
		return nil
	})
	label(true)
	c.WaitNB("node-b", "Logical_Router:GR_"+network+"_node-b")
	if err := c.Admin.Delete(ctx, e); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, gone)
}
