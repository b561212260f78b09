package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

func hasEvent(t *testing.T, c client.Client, object, reason, fragment string) error {
	var events corev1.EventList
	if err := c.List(context.Background(), &events); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason && strings.Contains(e.Message, fragment) {
			return nil
		}
	}
	return fmt.Errorf("no %s event on %s mentioning %q", reason, object, fragment)
}

// TestNodeMissingAnnotations: a node without a chassis is left out (with an
// Event) and added once it publishes one (with an Event); a node left out
// and then deleted gets no such Event.
func TestNodeMissingAnnotations(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	withoutChassis := func(name string, id int) *corev1.Node {
		info := clustertest.NodeInfo(name, id)
		info.ChassisID = ""
		ann := info.Annotations()
		delete(ann, nodeinfo.ChassisIDAnnotation)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
		if err := c.Admin.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Admin.Delete(ctx, n) })
		return n
	}
	// "node-gone" sorts before "node-late": the zone emits the Events of
	// one reconcile in node order, so once node-late's shows, node-gone's
	// would have shown before it.
	gone := withoutChassis("node-gone", 6)
	late := withoutChassis("node-late", 5)
	c.WaitNB("node-a", "Logical_Router:GR_node-a")
	for _, n := range []string{"node-gone", "node-late"} {
		cmtest.Eventually(t, 0, func() error {
			return hasEvent(t, c.Admin, n, zone.ReasonNodeLeftOut, nodeinfo.ChassisIDAnnotation)
		})
	}
	if out := c.Zones["node-a"].MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name=tstor-node-late"); out != "" {
		t.Fatal("a node without a chassis got a remote port")
	}

	// A network deleted and created again under its name reports the node
	// left out of it again (the Event's count grows).
	ns := cmtest.Namespace(t, c.Admin, "again", nil)
	nad := func() *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sec"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"again","topology":"layer3","role":"secondary","subnets":"192.168.0.0/16/24","netAttachDefName":"` + ns + `/sec"}`}}
	}
	leftOutOfAgain := func(count int32) func() error {
		return func() error {
			var events corev1.EventList
			if err := c.Admin.List(ctx, &events); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == "node-late" && e.Reason == zone.ReasonNodeLeftOut && strings.Contains(e.Message, "network again:") && e.Count >= count {
					return nil
				}
			}
			return fmt.Errorf("no %s Event on node-late for network again counted %d times", zone.ReasonNodeLeftOut, count)
		}
	}
	first := nad()
	if err := c.Admin.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, leftOutOfAgain(1))
	c.WaitNB("node-a", "Logical_Router:again_ovn_cluster_router")
	if err := c.Admin.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, func() error {
		if out := c.Zones["node-a"].MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Router", "name=again_ovn_cluster_router"); out != "" {
			return fmt.Errorf("network again still has its router")
		}
		return nil
	})
	second := nad()
	if err := c.Admin.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Admin.Delete(ctx, second) })
	cmtest.Eventually(t, 0, leftOutOfAgain(2))

	if err := c.Admin.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	// cluster-manager writes the node's slices too (network "again").
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(late), late); err != nil {
			return err
		}
		late.Annotations[nodeinfo.ChassisIDAnnotation] = "chassis-late"
		return c.Admin.Update(ctx, late)
	}); err != nil {
		t.Fatal(err)
	}
	c.WaitNB("node-a", "Logical_Switch_Port:tstor-node-late")
	cmtest.Eventually(t, 0, func() error { return hasEvent(t, c.Admin, "node-late", zone.ReasonNodeTakenBackIn, "zone node-a adds") })
	if err := hasEvent(t, c.Admin, "node-gone", zone.ReasonNodeTakenBackIn, ""); err == nil {
		t.Fatal("a deleted node was reported added to a network")
	}
}

// TestMalformedNAD: a network whose NAD turns malformed keeps its rows as they
// were (never rendered half) and is reported.
func TestMalformedNAD(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	ns := cmtest.Namespace(t, c.Admin, "hand", nil)
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sec"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"handmade","topology":"layer3","role":"secondary","subnets":"192.168.0.0/16/24","netAttachDefName":"` + ns + `/sec"}`}}
	if err := c.Admin.Create(ctx, nad); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Admin.Delete(ctx, nad) })
	c.WaitNB("node-a", "Logical_Router:handmade_ovn_cluster_router", "Logical_Switch:handmade_node-a")
	rows := func() string {
		return c.Zones["node-a"].MustNBCtl("--bare", "--columns=name", "find", "Logical_Router_Port", "external_ids:k8s.ovn.org/network=handmade")
	}
	before := rows()
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(nad), nad); err != nil {
		t.Fatal(err)
	}
	nad.Spec.Config = strings.Replace(nad.Spec.Config, "192.168.0.0/16/24", "192.168.0.1/16/24", 1)
	if err := c.Admin.Update(ctx, nad); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, func() error { return hasEvent(t, c.Admin, "sec", "InvalidConfig", "not a network address") })
	if after := rows(); after != before {
		t.Fatalf("a malformed NAD changed the network's rows:\nbefore %q\nafter  %q", before, after)
	}
}

// TestDatabaseRestarts: the zone controller rides out a Northbound that goes
// away (retrying with backoff) and one that comes back empty (it renders
// everything again), and a Southbound that comes back empty; each return
// is counted in ovn_udn_ovsdb_reconnects_total.
func TestDatabaseRestarts(t *testing.T) {
	if raceDetector {
		// The race detector reports a race inside libovsdb v0.7.0 when a
		// restarting server drops a connection libovsdb's Connect has just
		// made: its disconnect handler goroutine (client.go:308) against
		// the next Connect (client.go:207). Upstream has the reconnect
		// races of that goroutine open (ovn-kubernetes/libovsdb#497,
		// #500). Nothing of ours is in the report.
		t.Skip("a data race inside libovsdb's reconnect path (ovn-kubernetes/libovsdb#497): not run under the race detector")
	}
	c := clustertest.Start(t, env, config.Default(), "node-a", "node-b")
	za := c.Zones["node-a"]
	reconnects := func(db string) float64 { return testutil.ToFloat64(metrics.Reconnects.WithLabelValues("node-a", db)) }
	nbBefore, sbBefore := reconnects("nb"), reconnects("sb")
	c.WaitNB("node-a", "Logical_Router:GR_node-a", "Logical_Switch_Port:tstor-node-b")

	// Down while a network is created: it appears once the NB is back.
	nbProc := za.Processes()["nb"]
	nbProc.Stop(time.Second)
	net, _ := layer3UDN(t, c.Admin, "10.130.0.0/16/24")
	if err := za.RestartDB("nb", false); err != nil {
		t.Fatal(err)
	}
	c.WaitNB("node-a", "Logical_Router:GR_"+net+"_node-a")

	// Back empty (the database file was lost): everything is rendered again.
	if err := za.RestartDB("nb", true); err != nil {
		t.Fatal(err)
	}
	c.WaitNB("node-a", "Logical_Router:GR_"+net+"_node-a", "Logical_Router:GR_node-a", "Logical_Switch_Port:tstor-node-b")

	// The SB back empty: the remote chassis is registered again.
	if err := za.RestartDB("sb", true); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		out, err := za.SBCtl("--bare", "--columns=name", "find", "Chassis", "other_config:is-remote=true")
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "chassis-node-b" {
			return fmt.Errorf("remote chassis in zone A's SB: %q", out)
		}
		return nil
	})
	if nb, sb := reconnects("nb")-nbBefore, reconnects("sb")-sbBefore; nb < 2 || sb < 1 {
		t.Errorf("reconnects counted: nb %v (want at least 2), sb %v (want at least 1)", nb, sb)
	}
}
