package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestSeveralPrimaryNetworks: a namespace with a Layer2 primary UDN "l2"
// (green here, a /29, created first) and a Layer3 one "l3" (blue), cluster-manager and two zones with real
// northd (OKEP-5252). Pods fill the Layer2 network and then spill onto the
// Layer3 one; a pod naming the Layer3 network gets it, one naming nothing
// real gets an Event and no annotation. ovn-trace shows a Layer2 pod's
// packet to a Layer3 pod on the other node going from its switch through
// its own gateway router and the link into the Layer3 cluster router on
// the same node, and out through the Layer3 network's transit switch (its
// overlay, never the Layer2 one), unNATed; and the reply the same way in
// the other direction. A resync writes nothing; the Layer3 network, once
// its pods are gone, is deleted with its links.
func TestSeveralPrimaryNetworks(t *testing.T) {
	cfg := config.Default()
	c := clustertest.Start(t, env, cfg, "node-a", "node-b")
	ctx := context.Background()
	ns := cmtest.Namespace(t, c.Admin, "multi", map[string]string{v1.PrimaryNetworkLabel: ""})
	green := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l2"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.132.0.0/29"}}}
	blue := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "l3"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.131.0.0/16/24"}}}
	// green's NAD is the older (or, created in the same second, the first
	// by name: creation times have a 1 s resolution).
	for _, u := range []*v1.UserDefinedNetwork{green, blue} {
		if err := c.Admin.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		cmtest.WaitNetworkCreated(t, c.Admin, u)
	}
	greenNet, blueNet := netconf.UDNNetworkName(ns, "l2"), netconf.UDNNetworkName(ns, "l3")
	greenKey, blueKey := podnet.Key(ns, "l2"), podnet.Key(ns, "l3")
	toBlue, toGreen := "plink_"+greenNet+"_to_"+blueNet, "plink_"+blueNet+"_to_"+greenNet
	for _, n := range []string{"node-a", "node-b"} {
		c.WaitNB(n, "Logical_Router_Port:"+toBlue, "Logical_Router_Port:"+toGreen)
	}

	// Placement: the /29 holds 4 pods (.0, .1 gateway, .2 management, .7
	// broadcast), then pods spill onto blue, the next oldest.
	var onGreen []*corev1.Pod
	for i := 1; i <= 4; i++ {
		p := createPod(t, c.Admin, newPod(ns, fmt.Sprintf("g%d", i), "node-a", nil))
		waitAnnotated(t, c.Admin, p, podnet.DefaultKey, greenKey)
		if got := p.Annotations[podnet.PlacementAnnotation]; got != "l2" {
			t.Errorf("pod %s placement record %q, want l2", p.Name, got)
		}
		onGreen = append(onGreen, p)
	}
	spill := createPod(t, c.Admin, newPod(ns, "spill", "node-a", nil))
	waitAnnotated(t, c.Admin, spill, podnet.DefaultKey, blueKey)
	b1 := createPod(t, c.Admin, newPod(ns, "b1", "node-b", map[string]string{podnet.RequestedPrimaryAnnotation: "l3"}))
	b1nets := waitAnnotated(t, c.Admin, b1, podnet.DefaultKey, blueKey)
	bad := createPod(t, c.Admin, newPod(ns, "bad", "node-b", map[string]string{podnet.RequestedPrimaryAnnotation: "nope"}))
	if msg := cmtest.WaitEvent(t, c.Admin, bad, "Pod", podnet.WaitBadRequestedPrimary); !strings.Contains(msg, "nope") {
		t.Errorf("Event %q does not name the requested network", msg)
	}
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil {
		t.Fatal(err)
	}
	if v := bad.Annotations[podnet.Annotation]; v != "" {
		t.Errorf("a pod requesting a network that is not there was annotated: %s", v)
	}

	// g1 (green, node-a) to b1 (blue, node-b): green's switch, green's
	// transit router, green's gateway router on node-a, the link, blue's
	// cluster router on node-a, out through blue's transit switch to
	// node-b; the source address kept.
	g1 := onGreen[0]
	g1nets, _ := podnet.Parse(g1.Annotations)
	za, zb := c.Zones["node-a"], c.Zones["node-b"]
	gwMAC, _ := port(t, za, "Logical_Router_Port", "trtos-"+greenNet+"_ovn_layer2_switch")
	g1IP, b1IP := addr(t, g1nets[greenKey], true).Addr().String(), addr(t, b1nets[blueKey], true).Addr().String()
	fwd := ovntrace.Packet{InPort: podnet.PortName(greenKey, ns, "g1"), EthSrc: g1nets[greenKey].MAC, EthDst: gwMAC,
		IPSrc: g1IP, IPDst: b1IP, Proto: "tcp", SrcPort: 40000, DstPort: 8080}
	v := za.Trace(greenNet+"_ovn_layer2_switch", fwd, "--ct=new")
	remoteB := "tstor-" + blueNet + "_node-b"
	ovntest.ExpectDelivered(t, v, remoteB)
	if out, _ := v.DeliveredTo(remoteB); out.Fields["ip4.src"] != "" && out.Fields["ip4.src"] != g1IP {
		t.Errorf("the packet left node-a with source %s, want the pod's %s\n%s", out.Fields["ip4.src"], g1IP, v.Trace)
	}
	for _, hop := range []string{"GR_" + greenNet + "_node-a", blueNet + "_ovn_cluster_router"} {
		if !strings.Contains(v.Trace, hop) {
			t.Errorf("the packet did not cross %s\n%s", hop, v.Trace)
		}
	}

	// The reply, b1 to g1, in node-b's zone: blue's cluster router reroutes
	// it over the link to green's gateway router on node-b, and green's
	// switch sends it to g1's remote port (green's overlay).
	rtosMAC, _ := port(t, zb, "Logical_Router_Port", "rtos-"+blueNet+"_node-b")
	back := ovntrace.Packet{InPort: podnet.PortName(blueKey, ns, "b1"), EthSrc: b1nets[blueKey].MAC, EthDst: rtosMAC,
		IPSrc: b1IP, IPDst: g1IP, Proto: "tcp", SrcPort: 8080, DstPort: 40000}
	v = zb.Trace(blueNet+"_node-b", back, "--ct=new")
	g1Port := podnet.PortName(greenKey, ns, "g1")
	ovntest.ExpectDelivered(t, v, g1Port)
	if out, _ := v.DeliveredTo(g1Port); out.Fields["ip4.src"] != "" && out.Fields["ip4.src"] != b1IP {
		t.Errorf("the reply reached g1 from %s, want b1's %s\n%s", out.Fields["ip4.src"], b1IP, v.Trace)
	}
	if !strings.Contains(v.Trace, "GR_"+greenNet+"_node-b") {
		t.Errorf("the reply did not cross green's gateway router on node-b\n%s", v.Trace)
	}

	for _, n := range []string{"node-a", "node-b"} {
		resyncWritesNothing(t, c.Controller(n))
	}

	// Blue is held by the pods placed on it; when they go, it goes, and
	// its link with it, in both zones; green keeps its pods.
	if err := c.Admin.Delete(ctx, blue); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(blue), blue); err != nil {
			return err
		}
		for _, cond := range blue.Status.Conditions {
			if cond.Reason == v1.ReasonNetworkInUse && strings.Contains(cond.Message, "2 pod(s)") {
				return nil
			}
		}
		return fmt.Errorf("blue's conditions %+v do not say 2 pods hold it", blue.Status.Conditions)
	})
	for _, p := range []*corev1.Pod{spill, b1} {
		if err := c.Admin.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(blue), blue); !apierrors.IsNotFound(err) {
			return fmt.Errorf("blue still exists (%v)", err)
		}
		for _, n := range []string{"node-a", "node-b"} {
			z := c.Zones[n]
			for _, lrp := range []string{toBlue, toGreen} {
				if out := z.MustNBCtl("--bare", "--columns=name", "find", "Logical_Router_Port", "name="+lrp); out != "" {
					return fmt.Errorf("zone %s still has %s", n, lrp)
				}
			}
			for _, table := range []string{"Logical_Router_Static_Route", "Logical_Router_Policy"} {
				if out := z.MustNBCtl("--bare", "--columns=external_ids", "list", table); strings.Contains(out, primarylinks.LinkKey) {
					return fmt.Errorf("zone %s still has %s rows of the link", n, table)
				}
			}
		}
		return nil
	})
	waitAnnotated(t, c.Admin, g1, podnet.DefaultKey, greenKey)

	// A second /29 Layer2 network: new pods go there while green is full;
	// when it is full too a pod waits (PrimaryNetworksFull), and takes the
	// address a deleted pod of green frees.
	teal := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "teal"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.133.0.0/29"}}}
	if err := c.Admin.Create(ctx, teal); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, c.Admin, teal)
	tealKey := podnet.Key(ns, "teal")
	for i := 1; i <= 4; i++ {
		p := createPod(t, c.Admin, newPod(ns, fmt.Sprintf("t%d", i), "node-b", nil))
		waitAnnotated(t, c.Admin, p, podnet.DefaultKey, tealKey)
	}
	waiter := createPod(t, c.Admin, newPod(ns, "waiter", "node-a", nil))
	if msg := cmtest.WaitEvent(t, c.Admin, waiter, "Pod", podnet.WaitPrimaryNetworksFull); !strings.Contains(msg, "teal") {
		t.Errorf("Event %q does not list the networks", msg)
	}
	if err := c.Admin.Delete(ctx, onGreen[1], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitAnnotated(t, c.Admin, waiter, podnet.DefaultKey, greenKey)
}

// TestPrimaryLinkPairs: the other two kinds of links, Layer3–Layer3 (cluster
// router to cluster router) and Layer2–Layer2 (gateway router to gateway
// router), traced with real northd across two zones: each network's pod on
// its own node reaches the other's through the link on the source's node and
// the destination network's overlay, both ways, with its own address.
func TestPrimaryLinkPairs(t *testing.T) {
	cfg := config.Default()
	c := clustertest.Start(t, env, cfg, "node-a", "node-b")
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		topology v1.NetworkTopology
		subnets  [2]v1.NetworkSubnet
	}{
		{"layer3-layer3", v1.Layer3, [2]v1.NetworkSubnet{"10.141.0.0/16/24", "10.142.0.0/16/24"}},
		{"layer2-layer2", v1.Layer2, [2]v1.NetworkSubnet{"10.143.0.0/24", "10.144.0.0/24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cmtest.Namespace(t, c.Admin, tc.name, map[string]string{v1.PrimaryNetworkLabel: ""})
			names := [2]string{"x", "y"}
			var nets, keys [2]string
			for i, name := range names {
				u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: v1.UserDefinedNetworkSpec{Topology: tc.topology, Role: v1.Primary, Subnets: []v1.NetworkSubnet{tc.subnets[i]}}}
				if err := c.Admin.Create(ctx, u); err != nil {
					t.Fatal(err)
				}
				cmtest.WaitNetworkCreated(t, c.Admin, u)
				nets[i], keys[i] = netconf.UDNNetworkName(ns, name), podnet.Key(ns, name)
			}
			for _, n := range []string{"node-a", "node-b"} {
				c.WaitNB(n, "Logical_Router_Port:plink_"+nets[0]+"_to_"+nets[1], "Logical_Router_Port:plink_"+nets[1]+"_to_"+nets[0])
			}
			nodes := [2]string{"node-a", "node-b"}
			var attach [2]podnet.Attachment
			for i := range names {
				p := createPod(t, c.Admin, newPod(ns, "p"+names[i], nodes[i], map[string]string{podnet.RequestedPrimaryAnnotation: names[i]}))
				attach[i] = waitAnnotated(t, c.Admin, p, podnet.DefaultKey, keys[i])[keys[i]]
			}
			// entry returns where pod i's packet enters OVN: its switch and
			// its gateway's MAC; exit where a packet for it leaves the zone of
			// the other node: its network's overlay.
			entry := func(i int) (datapath, gwMAC string) {
				z := c.Zones[nodes[i]]
				if tc.topology == v1.Layer3 {
					mac, _ := port(t, z, "Logical_Router_Port", "rtos-"+nets[i]+"_"+nodes[i])
					return nets[i] + "_" + nodes[i], mac
				}
				mac, _ := port(t, z, "Logical_Router_Port", "trtos-"+nets[i]+"_ovn_layer2_switch")
				return nets[i] + "_ovn_layer2_switch", mac
			}
			exit := func(i int) string {
				if tc.topology == v1.Layer3 {
					return "tstor-" + nets[i] + "_" + nodes[i]
				}
				return podnet.PortName(keys[i], ns, "p"+names[i])
			}
			for from := range names {
				to := 1 - from
				dp, gw := entry(from)
				src, dst := addr(t, attach[from], true).Addr().String(), addr(t, attach[to], true).Addr().String()
				pkt := ovntrace.Packet{InPort: podnet.PortName(keys[from], ns, "p"+names[from]), EthSrc: attach[from].MAC, EthDst: gw,
					IPSrc: src, IPDst: dst, Proto: "tcp", SrcPort: 40000, DstPort: 8080}
				// The other pod's rows reach this zone, and northd, a moment
				// after its annotation: trace until delivered or a deadline.
				var v ovntrace.Verdict
				_ = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
					v = c.Zones[nodes[from]].Trace(dp, pkt, "--ct=new")
					_, ok := v.DeliveredTo(exit(to))
					return ok, nil
				})
				ovntest.ExpectDelivered(t, v, exit(to))
				if out, _ := v.DeliveredTo(exit(to)); out.Fields["ip4.src"] != "" && out.Fields["ip4.src"] != src {
					t.Errorf("%s -> %s left with source %s\n%s", names[from], names[to], out.Fields["ip4.src"], v.Trace)
				}
				if !strings.Contains(v.Trace, "plink_"+nets[from]+"_to_"+nets[to]) {
					t.Errorf("%s -> %s did not take the link\n%s", names[from], names[to], v.Trace)
				}
			}
		})
	}
}
