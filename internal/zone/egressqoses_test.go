package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressqos"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// TestEgressQoSFeature: the zone feature on a real zone, with a Layer3 and
// a Layer2 tenant of one subnet, pods of both on node-a. The Layer3
// tenant's EgressQoS marks its voice pod's traffic to the outside's /24
// with DSCP 46 and the rest of its traffic with 10: ovn-trace shows the
// marks leaving through the gateway, and none on the Layer2 tenant's
// packet; the status says applied; a relabelled pod changes mark; deleting
// the object takes the rows, and the marks, away.
func TestEgressQoSFeature(t *testing.T) {
	c := clustertest.StartWith(t, env, config.Default(), nil, "node-a")
	ctx := context.Background()
	ns3, net3 := udnIn(t, c.Admin, "qosl3", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}})
	ns2, net2 := udnIn(t, c.Admin, "qosl2", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/24"}})
	t.Cleanup(func() {
		for _, ns := range []string{ns3, ns2} {
			_ = c.Admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
			_ = c.Admin.Delete(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}})
		}
	})
	k3, k2 := podnet.Key(ns3, "net"), podnet.Key(ns2, "net")
	voice, p2 := newPod(ns3, "voice", "node-a", nil), newPod(ns2, "web", "node-a", nil)
	voice.Labels = map[string]string{"app": "voice"}
	createPod(t, c.Admin, voice)
	createPod(t, c.Admin, p2)
	a3 := waitAnnotated(t, c.Admin, voice, "default", k3)[k3]
	a2 := waitAnnotated(t, c.Admin, p2, "default", k2)[k2]
	port3, port2 := podnet.PortName(k3, ns3, "voice"), podnet.PortName(k2, ns2, "web")
	z := c.Zones["node-a"]
	c.WaitNB("node-a", "Logical_Switch_Port:"+port3, "Logical_Switch_Port:"+port2)
	sw3 := strings.Fields(z.MustNBCtl("lsp-get-ls", port3))[0]
	sw2 := strings.Fields(z.MustNBCtl("lsp-get-ls", port2))[0]
	mac3, mac2 := routerMAC(t, z, sw3), routerMAC(t, z, sw2)
	pkt := func(a podnet.Attachment, inPort, gwMAC, dst string) ovntrace.Packet {
		return ovntrace.Packet{InPort: inPort, EthSrc: a.MAC, EthDst: gwMAC, IPSrc: addr(t, a, true).Addr().String(), IPDst: dst, Proto: "udp", DstPort: 9002}
	}
	// dscp is the DS field the packet leaves the network's gateway with
	// ("" unmarked).
	dscp := func(sw string, p ovntrace.Packet, out string) (string, error) {
		v, err := z.TryTrace(sw, p, "--ct=new", "--ct=new", "--ct=new")
		if err != nil {
			return "", err
		}
		o, ok := v.DeliveredTo(out)
		if !ok {
			return "", fmt.Errorf("%s: not delivered to %s (%v)\n%s", p.Expr(), out, v.Delivered(), v.Trace)
		}
		return o.Fields["ip.dscp"], nil
	}
	out3, out2 := net3+"_breth0_node-a", net2+"_breth0_node-a"
	expect := func(want3, wantOther3, want2 string) error {
		for _, c := range []struct {
			what, sw, out, want string
			p                   ovntrace.Packet
		}{
			{"the voice pod to the outside /24", sw3, out3, want3, pkt(a3, port3, mac3, "198.51.100.10")},
			{"the voice pod elsewhere", sw3, out3, wantOther3, pkt(a3, port3, mac3, "203.0.113.1")},
			{"the Layer2 tenant's pod", sw2, out2, want2, pkt(a2, port2, mac2, "198.51.100.10")},
		} {
			got, err := dscp(c.sw, c.p, c.out)
			if err != nil {
				return err
			}
			if got != c.want {
				return fmt.Errorf("%s: ip.dscp %q, want %q", c.what, got, c.want)
			}
		}
		return nil
	}
	cmtest.Eventually(t, time.Minute, func() error { return expect("", "", "") })
	q := &v1.EgressQoS{ObjectMeta: metav1.ObjectMeta{Namespace: ns3, Name: "default"}, Spec: v1.EgressQoSSpec{Egress: []v1.EgressQoSRule{
		{DSCP: 46, DstCIDR: ptr.To("198.51.100.0/24"), PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "voice"}}},
		{DSCP: 10},
	}}}
	if err := c.Admin.Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error { return expect("46", "10", "") })
	cmtest.Eventually(t, time.Minute, func() error {
		var got v1.EgressQoS
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(q), &got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1.EgressQoSReadyInZone+"node-a")
		if got.Status.Status != v1.EgressQoSApplied || cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("status %q, conditions %+v", got.Status.Status, got.Status.Conditions)
		}
		return nil
	})
	resyncWritesNothing(t, c.Controller("node-a"))
	// The pod relabelled: only the catch-all rule marks it.
	var cur corev1.Pod
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(voice), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Labels = map[string]string{"app": "web"}
	if err := c.Admin.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error { return expect("10", "10", "") })
	if err := c.Admin.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if out := z.MustNBCtl("--bare", "--columns=_uuid", "find", "QoS", "external_ids:"+egressqos.NamespaceKey+"="+ns3); out != "" {
			return fmt.Errorf("QoS rows left: %s", out)
		}
		return expect("", "", "")
	})
}
