package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	ipamclaims "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

func newPod(ns, name, node string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
}

// createMacvlanNAD creates another plugin's NAD, "macvlan", in ns, as
// Multus users keep beside ovn-udn's.
func createMacvlanNAD(t *testing.T, c client.Client, ns string) {
	t.Helper()
	nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "macvlan"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","mode":"bridge"}`}}
	if err := c.Create(context.Background(), nad); err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, c client.Client, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	if err := c.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitAnnotated waits until a pod's annotation has exactly the given keys, and
// returns it.
func waitAnnotated(t *testing.T, c client.Client, p *corev1.Pod, keys ...string) podnet.Networks {
	t.Helper()
	var nets podnet.Networks
	slices.Sort(keys)
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		var err error
		if nets, err = podnet.Parse(p.Annotations); err != nil {
			return err
		}
		var got []string
		for k := range nets {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) {
			return fmt.Errorf("pod %s/%s annotated with %v, want %v", p.Namespace, p.Name, got, keys)
		}
		return nil
	})
	return nets
}

func udnIn(t *testing.T, c client.Client, prefix string, spec v1.UserDefinedNetworkSpec) (ns, network string) {
	t.Helper()
	u := newUDN(t, c, prefix, spec)
	return u.Namespace, netconf.UDNNetworkName(u.Namespace, u.Name)
}

// newUDN creates a namespace labelled for a primary network and its UDN
// "net", and waits until the network is created.
func newUDN(t *testing.T, c client.Client, prefix string, spec v1.UserDefinedNetworkSpec) *v1.UserDefinedNetwork {
	t.Helper()
	ns := cmtest.Namespace(t, c, prefix, map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}, Spec: spec}
	if err := c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, c, u)
	return u
}

func addr(t *testing.T, a podnet.Attachment, v4 bool) netip.Prefix {
	t.Helper()
	ps, err := a.Prefixes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Addr().Is4() == v4 {
			return p
		}
	}
	t.Fatalf("attachment %+v has no address of that family", a)
	return netip.Prefix{}
}

// TestPodsOnUserDefinedNetworks: pods on two nodes in a Layer3 UDN, a Layer2
// UDN, another Layer3 UDN with the same subnet, and the default network.
func TestPodsOnUserDefinedNetworks(t *testing.T) {
	cfg := config.Default()
	c := clustertest.Start(t, env, cfg, "node-a", "node-b")
	l3 := v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}}
	ns1, net1 := udnIn(t, c.Admin, "l3", l3)
	ns2, net2 := udnIn(t, c.Admin, "l2", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"203.203.0.0/24"}})
	ns3, _ := udnIn(t, c.Admin, "l3same", l3)
	ns4 := cmtest.Namespace(t, c.Admin, "plain", nil)
	k1, k2, k3 := podnet.Key(ns1, "net"), podnet.Key(ns2, "net"), podnet.Key(ns3, "net")
	// Another plugin's NAD beside the networks, selected by two pods (as
	// Multus users do): not ovn-udn's to attach, and no reason to fail.
	macvlan := map[string]string{netconf.NetworksAnnotation: "macvlan"}
	createMacvlanNAD(t, c.Admin, ns1)
	createMacvlanNAD(t, c.Admin, ns4)
	a1 := createPod(t, c.Admin, newPod(ns1, "a1", "node-a", macvlan))
	b1 := createPod(t, c.Admin, newPod(ns1, "b1", "node-b", nil))
	a2 := createPod(t, c.Admin, newPod(ns2, "a2", "node-a", nil))
	b2 := createPod(t, c.Admin, newPod(ns2, "b2", "node-b", nil))
	a3 := createPod(t, c.Admin, newPod(ns3, "a3", "node-a", nil))
	d := createPod(t, c.Admin, newPod(ns4, "d", "node-b", macvlan))

	// The annotations, field by field.
	na, nb := c.NodeInfo("node-a"), c.NodeInfo("node-b")
	n1 := waitAnnotated(t, c.Admin, a1, "default", k1)
	def, prim := n1["default"], n1[k1]
	defSlice, netSlice := na.Subnets["default"][0], na.Subnets[net1][0]
	if def.Role != podnet.RoleInfrastructure || len(def.Gateways) != 0 {
		t.Errorf("a1 default attachment %+v: want infrastructure-locked, no gateway", def)
	}
	if p := addr(t, def, true); !defSlice.Contains(p.Addr()) || p.Bits() != defSlice.Bits() {
		t.Errorf("a1 default address %s not in node-a's default slice %s", p, defSlice)
	}
	gw1, _ := allocator.NthAddress(netSlice, 1)
	p1 := addr(t, prim, true)
	wantRoutes := []podnet.Route{{Dest: "10.128.0.0/16", NextHop: gw1.String()}, {Dest: "10.96.0.0/16", NextHop: gw1.String()}, {Dest: "100.65.0.0/16", NextHop: gw1.String()}}
	if prim.Role != podnet.RolePrimary || !netSlice.Contains(p1.Addr()) || p1.Bits() != 24 || prim.MAC != allocator.MAC(p1.Addr()).String() ||
		!slices.Equal(prim.Gateways, []string{gw1.String()}) || !slices.Equal(prim.Routes, wantRoutes) {
		t.Errorf("a1 primary attachment %+v; want an address of %s, MAC from it, gateway %s, routes %v", prim, netSlice, gw1, wantRoutes)
	}
	if p1.Addr() == gw1 || p1.Addr().String() == mustNth(netSlice, 2).String() {
		t.Errorf("a1 got the gateway or management address %s", p1)
	}
	n2 := waitAnnotated(t, c.Admin, a2, "default", k2)
	l2 := n2[k2]
	p2 := addr(t, l2, true)
	if !netip.MustParsePrefix("203.203.0.0/24").Contains(p2.Addr()) || p2.Addr().String() == "203.203.0.1" || p2.Addr().String() == "203.203.0.2" ||
		!slices.Equal(l2.Gateways, []string{"203.203.0.1"}) || l2.TunnelID < 16 {
		t.Errorf("a2 layer2 attachment %+v; want an address of 203.203.0.0/24 (not .1/.2), gateway 203.203.0.1, a tunnel key ≥ 16", l2)
	}
	nd := waitAnnotated(t, c.Admin, d, "default")
	if nd["default"].Role != podnet.RolePrimary || len(nd["default"].Gateways) != 2 {
		t.Errorf("a default-network pod's attachment %+v: want primary with a gateway per family", nd["default"])
	}
	nB1 := waitAnnotated(t, c.Admin, b1, "default", k1)
	nB2 := waitAnnotated(t, c.Admin, b2, "default", k2)
	n3 := waitAnnotated(t, c.Admin, a3, "default", k3)
	if l2b := nB2[k2]; l2b.TunnelID == l2.TunnelID || addr(t, l2b, true) == p2 {
		t.Errorf("two pods of one Layer2 network share a key or address: %+v / %+v", l2, l2b)
	}

	// Ports: local pods on their node's switch, Layer2 pods remote elsewhere.
	port := func(key string, p *corev1.Pod) string { return podnet.PortName(key, p.Namespace, p.Name) }
	c.WaitNB("node-a", "Logical_Switch_Port:"+port(k1, a1), "Logical_Switch_Port:"+port(k2, a2), "Logical_Switch_Port:"+port(k2, b2),
		"Logical_Switch_Port:"+port("default", a1), "Logical_Switch_Port:"+port(k3, a3))
	c.WaitNB("node-b", "Logical_Switch_Port:"+port(k1, b1), "Logical_Switch_Port:"+port(k2, a2), "Logical_Switch_Port:"+port("default", d))
	za, zb := c.Zones["node-a"], c.Zones["node-b"]
	// Each port is its pod's own row (written on its own, not by its
	// network's plan), a Layer2 pod's remote port in the other zone too.
	for _, x := range []struct {
		z           *ovntest.Zone
		port, owner string
	}{{za, port(k1, a1), ns1 + "/a1"}, {za, port("default", a1), ns1 + "/a1"}, {za, port(k2, b2), ns2 + "/b2"}, {zb, port(k2, a2), ns2 + "/a2"}} {
		if got := x.z.MustNBCtl("--bare", "--columns=name", "find", "Logical_Switch_Port", "name="+x.port,
			`external_ids:"k8s.ovn.org/owner"="pod:`+x.owner+`"`); got != x.port {
			t.Errorf("port %s is not owned by pod:%s (%q)", x.port, x.owner, x.z.MustNBCtl("get", "Logical_Switch_Port", x.port, "external_ids"))
		}
	}
	if sec := za.MustNBCtl("get", "Logical_Switch_Port", port(k1, a1), "port_security"); !strings.Contains(sec, p1.Addr().String()) {
		t.Errorf("a1's port security %s lacks its address", sec)
	}

	// Layer3, across nodes: a1 → b1 out through node-b's transit port, then
	// into b1's port in zone B.
	rtos, _ := port2(t, za, "Logical_Router_Port", "rtos-"+net1+"_node-a")
	pb1 := addr(t, nB1[k1], true)
	toB1 := ovntrace.Packet{InPort: port(k1, a1), EthSrc: prim.MAC, EthDst: rtos, IPSrc: p1.Addr().String(), IPDst: pb1.Addr().String(), Proto: "tcp", DstPort: 80}
	ovntest.ExpectDelivered(t, za.Trace(net1+"_node-a", toB1), "tstor-"+net1+"_node-b")
	aT, _ := port2(t, za, "Logical_Router_Port", "rtots-"+net1+"_node-a")
	bT, _ := port2(t, zb, "Logical_Router_Port", "rtots-"+net1+"_node-b")
	fromA := toB1
	fromA.InPort, fromA.EthSrc, fromA.EthDst, fromA.TTL = "tstor-"+net1+"_node-a", aT, bT, 63
	ovntest.ExpectDelivered(t, zb.Trace(net1+"_transit_switch", fromA), port(k1, b1))

	// The other UDN with the same subnet: a3's address (the same as a1's
	// perhaps) is never reached from network 1.
	p3 := addr(t, n3[k3], true)
	toA3 := toB1
	toA3.EthDst, toA3.IPDst = rtos, p3.Addr().String()
	v := za.Trace(net1+"_node-a", toA3)
	if slices.Contains(v.Delivered(), port(k3, a3)) {
		t.Fatalf("network 1 delivered to network 3's pod:\n%s", v.Trace)
	}
	// A default-network pod is not reachable from a UDN pod through the UDN.
	toD := toB1
	toD.IPDst = addr(t, nd["default"], true).Addr().String()
	ovntest.ExpectDropped(t, za.Trace(net1+"_node-a", toD))

	// On the default network, a UDN pod's interface is isolated: nothing to or
	// from other pods, only the node (probes). Default-network pods still talk.
	e := createPod(t, c.Admin, newPod(ns4, "e", "node-a", nil))
	ne := waitAnnotated(t, c.Admin, e, "default")
	c.WaitNB("node-a", "Logical_Switch_Port:"+port("default", e))
	defMAC, _ := port2(t, za, "Logical_Router_Port", "rtos-node-a")
	a1def := ovntrace.Packet{InPort: port("default", a1), EthSrc: def.MAC, EthDst: ne["default"].MAC,
		IPSrc: addr(t, def, true).Addr().String(), IPDst: addr(t, ne["default"], true).Addr().String(), Proto: "tcp", DstPort: 80}
	ovntest.ExpectDropped(t, za.Trace("node-a", a1def))
	toA1 := ovntrace.Packet{InPort: port("default", e), EthSrc: ne["default"].MAC, EthDst: def.MAC,
		IPSrc: addr(t, ne["default"], true).Addr().String(), IPDst: addr(t, def, true).Addr().String(), Proto: "tcp", DstPort: 80}
	ovntest.ExpectDropped(t, za.Trace("node-a", toA1))
	toMgmt := a1def
	toMgmt.EthDst, toMgmt.IPDst = mustMACOf(t, za, "k8s-node-a"), mustNth(defSlice, 2).String()
	ovntest.ExpectDelivered(t, za.Trace("node-a", toMgmt), "k8s-node-a")
	toD2 := toA1
	toD2.EthDst, toD2.IPDst = defMAC, addr(t, nd["default"], true).Addr().String()
	ovntest.ExpectDelivered(t, za.Trace("node-a", toD2), "tstor-node-b")

	// Layer2, across nodes: through b2's remote port, then to b2.
	pb2 := addr(t, nB2[k2], true)
	toB2 := ovntrace.Packet{InPort: port(k2, a2), EthSrc: l2.MAC, EthDst: nB2[k2].MAC, IPSrc: p2.Addr().String(), IPDst: pb2.Addr().String(), Proto: "tcp", DstPort: 80}
	ovntest.ExpectDelivered(t, za.Trace(net2+"_ovn_layer2_switch", toB2), port(k2, b2))
	ovntest.ExpectDelivered(t, zb.Trace(net2+"_ovn_layer2_switch", toB2), port(k2, b2))

	// Deleting pods removes their ports and frees their addresses.
	for _, p := range []*corev1.Pod{a1, a2} {
		if err := c.Admin.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	cmtest.Eventually(t, time.Minute, func() error {
		for _, name := range []string{port(k1, a1), port(k2, a2), port("default", a1)} {
			if out := za.MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+name); out != "" {
				return fmt.Errorf("port %s still exists", name)
			}
		}
		if out := zb.MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+port(k2, a2)); out != "" {
			return fmt.Errorf("remote port of a2 still exists in zone B")
		}
		return nil
	})
	_ = nb
}

func mustMACOf(t *testing.T, z *ovntest.Zone, lsp string) string {
	mac, _ := port(t, z, "Logical_Switch_Port", lsp)
	return mac
}

// port2 reads a router port's MAC and first address.
func port2(t *testing.T, z *ovntest.Zone, table, name string) (string, string) {
	t.Helper()
	return port(t, z, table, name)
}

// TestRecreatedNetworkExclusions: a network deleted and created again under
// its name, now excluding a range, gives its pods addresses outside that
// range (the zone does not reuse the old network's address pool), and its
// time to its first rows is observed again.
func TestRecreatedNetworkExclusions(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	spec := v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.60.0.0/16/24"}}
	u := newUDN(t, c.Admin, "excl", spec)
	ns, key := u.Namespace, podnet.Key(u.Namespace, u.Name)
	router := netconf.UDNNetworkName(ns, u.Name) + "_ovn_cluster_router"
	first := createPod(t, c.Admin, newPod(ns, "first", "node-a", nil))
	before := addr(t, waitAnnotated(t, c.Admin, first, "default", key)[key], true)

	// The pod goes, then the network, until the zone holds none of it.
	if err := c.Admin.Delete(ctx, first, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Admin.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(u), &v1.UserDefinedNetwork{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("UDN not gone yet (%v)", err)
		}
		if out := c.Zones["node-a"].MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Router", "name="+router); out != "" {
			return fmt.Errorf("the zone still holds %s", router)
		}
		return nil
	})

	// Again, excluding the first addresses of every slice.
	readyBefore := networkReadyCount(t, "node-a")
	excluded := netip.PrefixFrom(before.Masked().Addr(), 28)
	spec.ExcludeSubnets = []v1.ExcludeCIDR{v1.ExcludeCIDR(excluded.String())}
	again := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: u.Name}, Spec: spec}
	if err := c.Admin.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, c.Admin, again)
	second := createPod(t, c.Admin, newPod(ns, "second", "node-a", nil))
	got := addr(t, waitAnnotated(t, c.Admin, second, "default", key)[key], true)
	if excluded.Contains(got.Addr()) {
		t.Fatalf("the network created again excludes %s, and its pod got %s (the first network's pod had %s)", excluded, got, before)
	}
	cmtest.Eventually(t, 0, func() error {
		if n := networkReadyCount(t, "node-a"); n < readyBefore+1 {
			return fmt.Errorf("ovn_udn_network_ready_seconds observed %d networks since the network was created again, want 1", n-readyBefore)
		}
		return nil
	})
}

// networkReadyCount is how many networks' time to their first rows zone has
// observed (ovn_udn_network_ready_seconds).
func networkReadyCount(t *testing.T, zone string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.NetworkReadySeconds.WithLabelValues(zone).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestRecoveredAddressConflict: two pods whose annotations claim one
// address (one edited while the controller that gives the addresses was
// down: the zone controller on a Layer3 network, cluster-manager on a
// Layer2 one): at restart the older keeps it and the younger is given
// another, with an Event.
func TestRecoveredAddressConflict(t *testing.T) {
	for _, tc := range []struct {
		topology    v1.NetworkTopology
		subnet      string
		stop, start func(c *clustertest.Cluster)
	}{
		{v1.Layer3, "10.61.0.0/16/24",
			func(c *clustertest.Cluster) { c.StopZoneController("node-a") },
			func(c *clustertest.Cluster) { c.StartZoneController("node-a") }},
		{v1.Layer2, "10.62.0.0/24",
			func(c *clustertest.Cluster) { c.StopClusterManager() },
			func(c *clustertest.Cluster) { c.StartClusterManager() }},
	} {
		t.Run(string(tc.topology), func(t *testing.T) {
			c := clustertest.Start(t, env, config.Default(), "node-a")
			ctx := context.Background()
			u := newUDN(t, c.Admin, "clash", v1.UserDefinedNetworkSpec{Topology: tc.topology, Role: v1.Primary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(tc.subnet)}})
			key := podnet.Key(u.Namespace, u.Name)
			older := createPod(t, c.Admin, newPod(u.Namespace, "older", "node-a", nil))
			kept := addr(t, waitAnnotated(t, c.Admin, older, "default", key)[key], true)
			younger := createPod(t, c.Admin, newPod(u.Namespace, "younger", "node-a", nil))
			own := addr(t, waitAnnotated(t, c.Admin, younger, "default", key)[key], true)

			tc.stop(c)
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(younger), younger); err != nil {
					return err
				}
				younger.Annotations[podnet.Annotation] = strings.ReplaceAll(younger.Annotations[podnet.Annotation], `"`+own.String()+`"`, `"`+kept.String()+`"`)
				return c.Admin.Update(ctx, younger)
			}); err != nil {
				t.Fatal(err)
			}
			if got := addr(t, waitAnnotated(t, c.Admin, younger, "default", key)[key], true); got != kept {
				t.Fatalf("the edit did not take: younger has %s, want %s", got, kept)
			}
			tc.start(c)

			cmtest.Eventually(t, time.Minute, func() error {
				if got := addr(t, waitAnnotated(t, c.Admin, younger, "default", key)[key], true); got == kept {
					return fmt.Errorf("younger still claims %s", got)
				}
				return hasEvent(t, c.Admin, "younger", "AddressReassigned", kept.Addr().String())
			})
			if got := addr(t, waitAnnotated(t, c.Admin, older, "default", key)[key], true); got != kept {
				t.Fatalf("older lost its address: has %s, had %s", got, kept)
			}
		})
	}
}

// TestPodRefusals: a pod of a namespace labelled for a primary network waits
// (an Event, no annotation) until the network exists; a requested address in
// use is refused with an Event; neither blocks other pods.
func TestPodRefusals(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	ns := cmtest.Namespace(t, c.Admin, "early", map[string]string{v1.PrimaryNetworkLabel: ""})
	early := createPod(t, c.Admin, newPod(ns, "early", "node-a", nil))
	cmtest.Eventually(t, 0, func() error { return hasEvent(t, c.Admin, "early", podnet.WaitPrimaryNotReady, "not ready") })
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(early), early); err != nil {
		t.Fatal(err)
	}
	if _, ok := early.Annotations[podnet.Annotation]; ok {
		t.Fatal("a pod waiting for its primary network was annotated")
	}
	// A pod of the same name created again is told again: the zone forgot
	// what it reported of the deleted one.
	if err := c.Admin.Delete(ctx, early, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(early), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod early not gone yet (%v)", err)
		}
		return nil
	})
	early = createPod(t, c.Admin, newPod(ns, "early", "node-a", nil))
	cmtest.Eventually(t, 0, func() error {
		var events corev1.EventList
		if err := c.Admin.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.UID == early.UID && e.Reason == podnet.WaitPrimaryNotReady {
				return nil
			}
		}
		return fmt.Errorf("no %s Event for the pod early created again", podnet.WaitPrimaryNotReady)
	})
	// (The UDN controller refuses a primary network for a namespace with pods;
	// an admin NAD makes the network appear under the pod, as a late network
	// would.)
	nad := &nadv1NAD{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late"},
		Spec: nadv1Spec(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + ns + `.late","topology":"layer2","role":"primary","subnets":"203.203.0.0/24","joinSubnet":"100.65.0.0/16","netAttachDefName":"` + ns + `/late"}`)}
	if err := c.Admin.Create(ctx, nad); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Admin.Delete(ctx, nad) })
	waitAnnotated(t, c.Admin, early, "default", podnet.Key(ns, "late"))

	// A secondary network where two pods ask for the same address.
	sns := cmtest.Namespace(t, c.Admin, "sec", nil)
	if err := c.Admin.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: sns, Name: "sec"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.7.0/24"}}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","ips":["192.168.7.50/24"]}]`}
	first := createPod(t, c.Admin, newPod(sns, "first", "node-a", want))
	n := waitAnnotated(t, c.Admin, first, "default", podnet.Key(sns, "sec"))
	if got := n[podnet.Key(sns, "sec")].IPs; !slices.Equal(got, []string{"192.168.7.50/24"}) {
		t.Fatalf("requested address not honoured: %v", got)
	}
	second := createPod(t, c.Admin, newPod(sns, "second", "node-a", want))
	cmtest.Eventually(t, 0, func() error { return hasEvent(t, c.Admin, "second", "AddressAllocationFailed", "already in use") })
	// Other pods go on.
	third := createPod(t, c.Admin, newPod(sns, "third", "node-a", map[string]string{netconf.NetworksAnnotation: "sec"}))
	waitAnnotated(t, c.Admin, third, "default", podnet.Key(sns, "sec"))
	_ = second
}

// TestPersistentIPs: a pod referencing an IPAMClaim keeps the claim's
// addresses across deletion and re-creation; deleting the claim frees them.
func TestPersistentIPs(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a", "node-b")
	ctx := context.Background()
	// A /29: four assignable addresses (.3 to .6), so freed ones must come back.
	ns, network := udnIn(t, c.Admin, "vm", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary,
		Subnets: []v1.NetworkSubnet{"203.203.0.0/29"}, IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}})
	key := podnet.Key(ns, "net")
	claim := newClaim(ns, "vm1", network)
	if err := c.Admin.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	withClaim := map[string]string{podnet.PrimaryIPAMClaimAnnotation: "vm1"}
	first := createPod(t, c.Admin, newPod(ns, "virt-launcher-1", "node-a", withClaim))
	ip := waitAnnotated(t, c.Admin, first, "default", key)[key].IPs
	cmtest.Eventually(t, 0, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(claim), claim); err != nil {
			return err
		}
		if !slices.Equal(claim.Status.IPs, ip) {
			return fmt.Errorf("claim status %v, want %v", claim.Status.IPs, ip)
		}
		return nil
	})
	// The VM restarts elsewhere: a new pod, the same claim, the same addresses.
	if err := c.Admin.Delete(ctx, first, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	second := createPod(t, c.Admin, newPod(ns, "virt-launcher-2", "node-b", withClaim))
	if got := waitAnnotated(t, c.Admin, second, "default", key)[key].IPs; !slices.Equal(got, ip) {
		t.Fatalf("the re-created pod got %v, want the claim's %v", got, ip)
	}
	// Releasing: delete the pod and the claim; then four pods take all four
	// addresses, the claim's included.
	if err := c.Admin.Delete(ctx, second, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.Admin.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, 0, func() error {
		err := c.Admin.Get(ctx, client.ObjectKeyFromObject(second), second)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod still there")
		}
		return nil
	})
	var got []string
	for i := 0; i < 4; i++ {
		p := createPod(t, c.Admin, newPod(ns, fmt.Sprintf("fill-%d", i), "node-a", nil))
		got = append(got, waitAnnotated(t, c.Admin, p, "default", key)[key].IPs...)
	}
	if !slices.Contains(got, ip[0]) {
		t.Fatalf("after the claim was deleted, its address %s never came back: %v", ip[0], got)
	}
}

func nadv1Spec(config string) nadv1.NetworkAttachmentDefinitionSpec {
	return nadv1.NetworkAttachmentDefinitionSpec{Config: config}
}

func newClaim(ns, name, network string) *ipamclaims.IPAMClaim {
	return &ipamclaims.IPAMClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: ipamclaims.IPAMClaimSpec{Network: network, Interface: "ovn-udn1"}}
}
