package zone_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// networkRows returns the names of the rows a network owns in a zone
// (external_ids k8s.ovn.org/owner=net:<network>) in the tables that name
// them, sorted by table.
func networkRows(t *testing.T, z *ovntest.Zone, network string) []string {
	t.Helper()
	var out []string
	for _, table := range []string{"Logical_Switch", "Logical_Router", "Logical_Switch_Port", "Logical_Router_Port"} {
		got := z.MustNBCtl("--bare", "--columns=name", "find", table, `external_ids:"k8s.ovn.org/owner"="`+feature.NetworkKey(network).String()+`"`)
		for _, name := range strings.Fields(got) {
			out = append(out, table+":"+name)
		}
	}
	return out
}

// absent fails unless none of the named rows is in the zone.
func absent(z *ovntest.Zone, table string, names ...string) error {
	for _, name := range names {
		if out := z.MustNBCtl("--bare", "--columns=_uuid", "find", table, "name="+name); out != "" {
			return fmt.Errorf("zone %s still has %s %s", z.Name, table, name)
		}
	}
	return nil
}

// TestRenderWhereUsed: with zone controllers rendering a primary network only
// where it is used (the default of ovn-udn controller), a Layer3 and a
// Layer2 UDN with pods on node-a and node-b have no row in node-c's zone and
// no port or route for node-c elsewhere; the first pod on node-c brings the
// network there and node-c into the other zones, and traffic flows both ways
// (ovn-trace across zones); when the last pod leaves node-c (after a grace
// period) all of that goes again and the other pods are undisturbed.
func TestRenderWhereUsed(t *testing.T) {
	cfg := config.Default()
	c := clustertest.StartWith(t, env, cfg, func(o *zone.Options) { o.InactiveGracePeriod = 3 * time.Second },
		"node-a", "node-b", "node-c")
	ctx := context.Background()
	ns1, net1 := udnIn(t, c.Admin, "dyn-l3", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}})
	ns2, net2 := udnIn(t, c.Admin, "dyn-l2", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"203.203.0.0/24"}})
	k1, k2 := podnet.Key(ns1, "net"), podnet.Key(ns2, "net")
	t.Cleanup(func() { // the next tests' zones would render them
		for _, ns := range []string{ns1, ns2} {
			_ = c.Admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
		}
	})
	port := func(key string, p *corev1.Pod) string { return podnet.PortName(key, p.Namespace, p.Name) }
	za, zb, zc := c.Zones["node-a"], c.Zones["node-b"], c.Zones["node-c"]

	// Another plugin's NAD in the namespace, selected by a pod: the
	// where-used decisions of cluster-manager and zones ignore it (they
	// panicked on it before).
	createMacvlanNAD(t, c.Admin, ns1)
	a1 := createPod(t, c.Admin, newPod(ns1, "a1", "node-a", map[string]string{netconf.NetworksAnnotation: "macvlan"}))
	b1 := createPod(t, c.Admin, newPod(ns1, "b1", "node-b", nil))
	a2 := createPod(t, c.Admin, newPod(ns2, "a2", "node-a", nil))
	b2 := createPod(t, c.Admin, newPod(ns2, "b2", "node-b", nil))
	na1 := waitAnnotated(t, c.Admin, a1, "default", k1)
	nb1 := waitAnnotated(t, c.Admin, b1, "default", k1)
	na2 := waitAnnotated(t, c.Admin, a2, "default", k2)
	c.WaitNB("node-a", "Logical_Switch_Port:"+port(k1, a1), "Logical_Switch_Port:"+port(k2, a2), "Logical_Switch_Port:"+port(k2, b2),
		"Logical_Switch_Port:tstor-"+net1+"_node-b")
	c.WaitNB("node-b", "Logical_Switch_Port:"+port(k1, b1), "Logical_Switch_Port:"+port(k2, b2), "Logical_Switch_Port:"+port(k2, a2))

	// node-c has no pod of either network: its zone holds nothing of them
	// (planned again here, so this is not a plan that has not run yet),
	// and no other zone holds a port or route for node-c.
	rc := c.Controller("node-c")
	for _, n := range []string{net1, net2} {
		if _, err := rc.Reconcile(ctx, feature.NetworkKey(n)); err != nil {
			t.Fatal(err)
		}
		if rows := networkRows(t, zc, n); len(rows) != 0 {
			t.Errorf("zone node-c holds rows of %s, which no pod uses there: %v", n, rows)
		}
	}
	// Nor does cluster-manager give node-c a slice of the Layer3 network.
	if got := c.NodeInfo("node-c").Subnets[net1]; len(got) != 0 {
		t.Errorf("node-c holds slice %v of %s, which no pod uses there", got, net1)
	}
	sliceC := "" // node-c's slice of net1, once it has one
	nodeC := func(z *ovntest.Zone) error {
		if err := absent(z, "Logical_Switch_Port", "tstor-"+net1+"_node-c"); err != nil {
			return err
		}
		if err := absent(z, "Logical_Router_Port", "trtor-GR_"+net2+"_node-c"); err != nil {
			return err
		}
		routes, err := z.NBCtl("lr-route-list", net1+"_ovn_cluster_router")
		if err != nil {
			return err
		}
		if sliceC != "" && strings.Contains(routes, sliceC) {
			return fmt.Errorf("zone %s routes node-c's slice of %s:\n%s", z.Name, net1, routes)
		}
		return nil
	}
	for _, z := range []*ovntest.Zone{za, zb} {
		if err := nodeC(z); err != nil {
			t.Error(err)
		}
	}
	if rows := networkRows(t, za, net1); len(rows) == 0 {
		t.Fatalf("zone node-a holds no row of %s, which a1 uses", net1)
	}

	// The first pods on node-c: the networks come to its zone, node-c comes
	// to the others', and packets go both ways.
	c1 := createPod(t, c.Admin, newPod(ns1, "c1", "node-c", nil))
	c2 := createPod(t, c.Admin, newPod(ns2, "c2", "node-c", nil))
	nc1 := waitAnnotated(t, c.Admin, c1, "default", k1)
	nc2 := waitAnnotated(t, c.Admin, c2, "default", k2)
	c.WaitNB("node-c", "Logical_Switch:"+net1+"_node-c", "Logical_Switch_Port:"+port(k1, c1), "Logical_Switch_Port:"+port(k2, c2),
		"Logical_Switch_Port:"+port(k2, a2), "Logical_Switch_Port:tstor-"+net1+"_node-a")
	c.WaitNB("node-a", "Logical_Switch_Port:tstor-"+net1+"_node-c", "Logical_Router_Port:trtor-GR_"+net2+"_node-c", "Logical_Switch_Port:"+port(k2, c2))
	c.WaitNB("node-b", "Logical_Switch_Port:tstor-"+net1+"_node-c")
	slicesC := c.NodeInfo("node-c").Subnets[net1]
	if len(slicesC) == 0 {
		t.Fatalf("node-c has no slice of %s with a pod of it", net1)
	}
	sliceC = slicesC[0].String()

	rtos, _ := port2(t, za, "Logical_Router_Port", "rtos-"+net1+"_node-a")
	toC1 := ovntrace.Packet{InPort: port(k1, a1), EthSrc: na1[k1].MAC, EthDst: rtos, IPSrc: addr(t, na1[k1], true).Addr().String(),
		IPDst: addr(t, nc1[k1], true).Addr().String(), Proto: "tcp", DstPort: 80}
	cmtest.Eventually(t, time.Minute, func() error { // the route to node-c's slice comes with its transit port
		if v, err := za.TryTrace(net1+"_node-a", toC1); err != nil {
			return err
		} else if !contains(v.Delivered(), "tstor-"+net1+"_node-c") {
			return fmt.Errorf("a1 → c1 not sent to node-c:\n%s", v.Trace)
		}
		return nil
	})
	aT, _ := port2(t, za, "Logical_Router_Port", "rtots-"+net1+"_node-a")
	cT, _ := port2(t, zc, "Logical_Router_Port", "rtots-"+net1+"_node-c")
	fromA := toC1
	fromA.InPort, fromA.EthSrc, fromA.EthDst, fromA.TTL = "tstor-"+net1+"_node-a", aT, cT, 63
	ovntest.ExpectDelivered(t, zc.Trace(net1+"_transit_switch", fromA), port(k1, c1))
	// and back: c1 → a1 leaves node-c by node-a's transit port.
	rtosC, _ := port2(t, zc, "Logical_Router_Port", "rtos-"+net1+"_node-c")
	toA1 := ovntrace.Packet{InPort: port(k1, c1), EthSrc: nc1[k1].MAC, EthDst: rtosC, IPSrc: addr(t, nc1[k1], true).Addr().String(),
		IPDst: addr(t, na1[k1], true).Addr().String(), Proto: "tcp", DstPort: 80}
	ovntest.ExpectDelivered(t, zc.Trace(net1+"_node-c", toA1), "tstor-"+net1+"_node-a")
	// Layer2: a2 → c2 through c2's remote port in node-a's zone, then to c2.
	toC2 := ovntrace.Packet{InPort: port(k2, a2), EthSrc: na2[k2].MAC, EthDst: nc2[k2].MAC, IPSrc: addr(t, na2[k2], true).Addr().String(),
		IPDst: addr(t, nc2[k2], true).Addr().String(), Proto: "tcp", DstPort: 80}
	ovntest.ExpectDelivered(t, za.Trace(net2+"_ovn_layer2_switch", toC2), port(k2, c2))
	ovntest.ExpectDelivered(t, zc.Trace(net2+"_ovn_layer2_switch", toC2), port(k2, c2))

	// The last pods leave node-c: after the grace period its zone holds
	// nothing of the networks and the other zones nothing for node-c.
	for _, p := range []*corev1.Pod{c1, c2} {
		if err := c.Admin.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	cmtest.Eventually(t, time.Minute, func() error {
		for _, n := range []string{net1, net2} {
			if rows := networkRows(t, zc, n); len(rows) != 0 {
				return fmt.Errorf("zone node-c still holds rows of %s: %v", n, rows)
			}
		}
		if err := absent(zc, "Logical_Switch_Port", port(k2, a2), port(k2, b2)); err != nil {
			return err
		}
		for _, z := range []*ovntest.Zone{za, zb} {
			if err := nodeC(z); err != nil {
				return err
			}
			if err := absent(z, "Logical_Switch_Port", port(k2, c2)); err != nil {
				return err
			}
		}
		// and, a quarter of the grace period later, cluster-manager
		// releases node-c's slice.
		if info, err := c.TryNodeInfo("node-c"); err != nil || len(info.Subnets[net1]) != 0 {
			return fmt.Errorf("node-c still holds its slice of %s (%v)", net1, err)
		}
		return nil
	})
	// The pods elsewhere were not disturbed.
	rtosB, _ := port2(t, za, "Logical_Router_Port", "rtos-"+net1+"_node-a")
	toB1 := toC1
	toB1.EthDst, toB1.IPDst = rtosB, addr(t, nb1[k1], true).Addr().String()
	ovntest.ExpectDelivered(t, za.Trace(net1+"_node-a", toB1), "tstor-"+net1+"_node-b")
	for _, node := range c.Nodes {
		resyncWritesNothing(t, c.Controller(node))
	}

	// node-b is deleted (its pods are still in the API): the other zones
	// drop what they had for it, as for any node that is gone.
	if err := c.Admin.Delete(ctx, c.Node("node-b")); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		return errors.Join(absent(za, "Logical_Switch_Port", "tstor-"+net1+"_node-b", port(k2, b2)),
			absent(za, "Logical_Router_Port", "trtor-GR_"+net2+"_node-b"))
	})
	c.WaitNB("node-a", "Logical_Switch_Port:"+port(k1, a1), "Logical_Switch_Port:"+port(k2, a2), "Logical_Switch:"+net1+"_node-a")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
