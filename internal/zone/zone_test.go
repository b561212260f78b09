package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

// layer3UDN creates a primary Layer3 UDN named "net" in a new namespace and
// returns its network name.
func layer3UDN(t *testing.T, c client.Client, subnet string) (string, *v1.UserDefinedNetwork) {
	t.Helper()
	u := newUDN(t, c, "tenant", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(subnet)}})
	return netconf.UDNNetworkName(u.Namespace, u.Name), u
}

// port reads a logical port's first address entry: MAC and IP.
func port(t *testing.T, z *ovntest.Zone, table, name string) (mac, ip string) {
	t.Helper()
	col := "addresses"
	if table == "Logical_Router_Port" {
		col = "mac"
	}
	out := z.MustNBCtl("--bare", "--columns="+col, "find", table, "name="+name)
	f := strings.Fields(out)
	if len(f) == 0 {
		t.Fatalf("zone %s: %s %s has no %s", z.Name, table, name, col)
	}
	mac = f[0]
	if table == "Logical_Router_Port" {
		nets := strings.Fields(z.MustNBCtl("--bare", "--columns=networks", "find", table, "name="+name))
		ip = strings.Split(nets[0], "/")[0]
		return mac, ip
	}
	return mac, f[1]
}

func networkID(t *testing.T, c client.Client, ns string) int {
	t.Helper()
	var id int
	cmtest.Eventually(t, 0, func() error {
		nad := &nadv1NAD{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "net"}, nad); err != nil {
			return err
		}
		i, _, ok, err := netconf.ParseAllocation(nad.Annotations)
		if !ok {
			return fmt.Errorf("no network ID yet (%v)", err)
		}
		id = i
		return nil
	})
	return id
}

// TestLayer3Interconnect: two zones, two Layer3 UDNs with the same subnet and
// the default network. A packet crosses from zone A to zone B within one
// network, never into the other network or the default network, and egress
// leaves through the local gateway router SNATed to the network's masquerade
// address. Then: a resync and a restart write nothing; deleting everything
// leaves nothing the controllers own.
func TestLayer3Interconnect(t *testing.T) {
	cfg := config.Default()
	c := clustertest.Start(t, env, cfg, "node-a", "node-b")
	ctx := context.Background()
	net1, udn1 := layer3UDN(t, c.Admin, "10.128.0.0/16/24")
	net2, udn2 := layer3UDN(t, c.Admin, "10.128.0.0/16/24")
	b := c.NodeInfo("node-b")
	za, zb := c.Zones["node-a"], c.Zones["node-b"]
	for _, n := range []string{"node-a", "node-b"} {
		other := map[string]string{"node-a": "node-b", "node-b": "node-a"}[n]
		c.WaitNB(n,
			"Logical_Switch_Port:tstor-"+net1+"_"+other, "Logical_Switch_Port:tstor-"+net2+"_"+other,
			"Logical_Switch_Port:tstor-"+other, "Logical_Router:GR_"+net1+"_"+n, "Logical_Router:GR_"+n)
	}

	// Zone A: from network 1's management port on node A to network 1's
	// management port address on node B: out through the remote port of B,
	// whose tunnel key is B's node ID, bound (by northd) to B's chassis.
	b1 := c.NodeInfo("node-b").Subnets[net1][0]
	bMgmt := netip.PrefixFrom(mustNth(b1, 2), b1.Bits()).Addr().String()
	aMAC, aIP := port(t, za, "Logical_Switch_Port", "k8s-"+net1+"_node-a")
	gwMAC, _ := port(t, za, "Logical_Router_Port", "rtos-"+net1+"_node-a")
	toB := ovntrace.Packet{InPort: "k8s-" + net1 + "_node-a", EthSrc: aMAC, EthDst: gwMAC, IPSrc: aIP, IPDst: bMgmt, Proto: "icmp"}
	ovntest.ExpectDelivered(t, za.Trace(net1+"_node-a", toB), "tstor-"+net1+"_node-b")
	if got := za.MustNBCtl("get", "Logical_Switch_Port", "tstor-"+net1+"_node-b", "options:requested-tnl-key"); strings.Trim(got, `"`) != fmt.Sprint(b.ID) {
		t.Errorf("remote port tunnel key %s, want node B's ID %d", got, b.ID)
	}
	binding := za.MustSBCtl("--bare", "--columns=tunnel_key,chassis", "find", "Port_Binding", "logical_port=tstor-"+net1+"_node-b")
	chassisB := za.MustSBCtl("--bare", "--columns=_uuid", "find", "Chassis", "name="+b.ChassisID)
	if f := strings.Fields(binding); len(f) != 2 || f[0] != fmt.Sprint(b.ID) || f[1] != chassisB {
		t.Errorf("SB binding of the remote port: %q, want tunnel key %d on chassis %s", binding, b.ID, chassisB)
	}
	if got := za.MustSBCtl("get", "Chassis", b.ChassisID, "other_config:is-remote"); strings.Trim(got, `"`) != "true" {
		t.Errorf("node B's chassis in zone A: is-remote=%s", got)
	}

	// Zone B: the same packet entering from the transit switch reaches node B's
	// management port of network 1, not network 2's.
	aTransitMAC, _ := port(t, za, "Logical_Router_Port", "rtots-"+net1+"_node-a")
	bTransitMAC, _ := port(t, zb, "Logical_Router_Port", "rtots-"+net1+"_node-b")
	fromA := ovntrace.Packet{InPort: "tstor-" + net1 + "_node-a", EthSrc: aTransitMAC, EthDst: bTransitMAC, IPSrc: aIP, IPDst: bMgmt, Proto: "icmp", TTL: 63}
	ovntest.ExpectDelivered(t, zb.Trace(net1+"_transit_switch", fromA), "k8s-"+net1+"_node-b")
	// (Node slices are allocated per network: node B's slice of network 2 may
	// differ from its slice of network 1.)
	b2 := c.NodeInfo("node-b").Subnets[net2][0]
	fromA2 := fromA
	fromA2.InPort, fromA2.IPDst = "tstor-"+net2+"_node-a", mustNth(b2, 2).String()
	ovntest.ExpectDelivered(t, zb.Trace(net2+"_transit_switch", fromA2), "k8s-"+net2+"_node-b")

	// Toward the default network's addresses (node B's management port there):
	// dropped inside network 1.
	bDefault := c.NodeInfo("node-b").Subnets["default"][0]
	toDefault := toB
	toDefault.IPDst = mustNth(bDefault, 2).String()
	ovntest.ExpectDropped(t, za.Trace(net1+"_node-a", toDefault))

	// Egress: through node A's gateway router of network 1, SNATed to network
	// 1's masquerade address.
	id1 := networkID(t, c.Admin, udn1.Namespace)
	masq, _, _ := allocator.MasqueradeIPs(cfg.MasqueradeSubnets[0], id1, config.MasqueradeReserved)
	egress := toB
	egress.IPDst = "8.8.8.8"
	v := ovntest.ExpectDelivered(t, za.Trace(net1+"_node-a", egress), net1+"_breth0_node-a")
	if out, _ := v.DeliveredTo(net1 + "_breth0_node-a"); out.Fields["ip4.src"] != masq.String() {
		t.Errorf("egress source %q, want network 1's masquerade address %s\n%s", out.Fields["ip4.src"], masq, v.Trace)
	}
	id2 := networkID(t, c.Admin, udn2.Namespace)
	if id1 == id2 {
		t.Fatalf("both networks have ID %d", id1)
	}

	// Idempotency: reconciling every key again, on the running controllers and
	// on restarted ones (fresh caches), writes nothing.
	for _, n := range []string{"node-a", "node-b"} {
		resyncWritesNothing(t, c.Controller(n))
		restarted := c.StartZoneController(n)
		reconcileAll(t, restarted)
		if got := restarted.Transactions(); got != 0 {
			t.Errorf("zone %s: a restarted controller wrote %d transactions", n, got)
		}
	}

	// Cleanup: deleting the networks and the nodes leaves nothing owned.
	for _, u := range []*v1.UserDefinedNetwork{udn1, udn2} {
		if err := c.Admin.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node-a", "node-b"} {
		if err := c.Admin.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node-a", "node-b"} {
		z := c.Zones[n]
		cmtest.Eventually(t, time.Minute, func() error {
			for _, table := range append(zone.NBTableNames, "Chassis") {
				db := z.NBCtl
				if table == "Chassis" {
					db = z.SBCtl
				}
				cond := "external_ids:" + ovsdbsync.OwnerKey + "!=\"\""
				if table == nbdb.LoadBalancerGroupTable {
					cond = "name!=\"\"" // no external_ids: held through its network's switches
				}
				out, err := db("--bare", "--columns=_uuid", "find", table, cond)
				if err != nil {
					return err
				}
				if strings.TrimSpace(out) != "" {
					return fmt.Errorf("zone %s: %s still holds owned rows", n, table)
				}
			}
			return nil
		})
	}
}

func mustNth(p netip.Prefix, n uint64) netip.Addr {
	a, err := allocator.NthAddress(p, n)
	if err != nil {
		panic(err)
	}
	return a
}

// resyncWritesNothing checks that a resync of every key writes nothing.
// The zone also renders networks that earlier tests left in the shared API
// server, and its own workers may still be writing those when the test's
// feature has converged: a pass that met such a write is repeated (for at
// most a minute), so a resync that always writes still fails.
func resyncWritesNothing(t *testing.T, r *zone.Reconciler) {
	t.Helper()
	var wrote int64
	err := proc.WaitFor(time.Minute, 200*time.Millisecond, func() (bool, error) {
		before := r.Transactions()
		if err := tryReconcileAll(r); err != nil {
			// A transaction that met the zone's own workers' writes: the
			// pass is repeated (and the error reported if every pass ends
			// so).
			return false, err
		}
		wrote = r.Transactions() - before
		return wrote == 0, fmt.Errorf("the pass wrote %d transactions", wrote)
	})
	if err != nil {
		t.Errorf("%s: a resync with nothing changed did not come through a pass without writing for a minute: %v", r.Zone, err)
	}
}

// reconcileAll runs the reconciler on every key it knows, synchronously.
func reconcileAll(t *testing.T, r *zone.Reconciler) {
	t.Helper()
	if err := tryReconcileAll(r); err != nil {
		t.Fatal(err)
	}
}

// tryReconcileAll is reconcileAll that returns the first error.
func tryReconcileAll(r *zone.Reconciler) error {
	ctx := context.Background()
	var keys []feature.Key
	err := proc.WaitFor(30*time.Second, 50*time.Millisecond, func() (bool, error) {
		var err error
		keys, err = r.Keys(ctx)
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("listing the reconciler's keys: %w", err)
	}
	for _, k := range keys {
		if _, err := r.Reconcile(ctx, k); err != nil {
			return fmt.Errorf("reconcile %s: %w", k, err)
		}
	}
	return nil
}

type nadv1NAD = nadv1.NetworkAttachmentDefinition

// TestLayer2AndLocalnetThroughController: a Layer2 primary UDN and a Localnet
// CUDN rendered by the zone controllers from their NADs: the transit router
// takes the NAD's tunnel key, each zone has a remote transit-router port for
// the other node, and the Localnet switch carries the physical network and VLAN.
func TestLayer2AndLocalnetThroughController(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a", "node-b")
	ctx := context.Background()
	ns := cmtest.Namespace(t, c.Admin, "l2", map[string]string{v1.PrimaryNetworkLabel: "", "phys": "yes"})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"203.203.0.0/24", "2010:100:200::/60"}}}
	if err := c.Admin.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cu := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: cmtest.UniqueName("phys")},
		Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"phys": "yes"}},
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Localnet, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.50.0/24"},
				Localnet: &v1.LocalnetSpec{PhysicalNetworkName: "physnet-tenant", VLANID: 100}}}}
	if err := c.Admin.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	net := netconf.UDNNetworkName(ns, "vm")
	phys := netconf.CUDNNetworkName(cu.Name)
	c.WaitNB("node-a", "Logical_Router:"+net+"_transit_router", "Logical_Router_Port:trtor-GR_"+net+"_node-b",
		"Logical_Router:GR_"+net+"_node-a", "Logical_Switch:"+phys+"_ovn_localnet_switch")
	c.WaitNB("node-b", "Logical_Router_Port:trtor-GR_"+net+"_node-a")
	nad := &nadv1NAD{}
	if err := c.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vm"}, nad); err != nil {
		t.Fatal(err)
	}
	_, keys, _, _ := netconf.ParseAllocation(nad.Annotations)
	za := c.Zones["node-a"]
	if got := strings.Trim(za.MustNBCtl("get", "Logical_Router", net+"_transit_router", "options:requested-tnl-key"), `"`); len(keys) != 1 || got != fmt.Sprint(keys[0]) {
		t.Fatalf("transit router tunnel key %s, NAD keys %v", got, keys)
	}
	// Both zones' SB agree on the transit router's datapath key.
	for _, n := range []string{"node-a", "node-b"} {
		key := c.Zones[n].MustSBCtl("--bare", "--columns=tunnel_key", "find", "Datapath_Binding", "external_ids:name="+net+"_transit_router")
		if key != fmt.Sprint(keys[0]) {
			t.Errorf("zone %s: transit router datapath key %q, want %d", n, key, keys[0])
		}
	}
	if got := za.MustNBCtl("get", "Logical_Switch_Port", phys+"_ovn_localnet_port", "tag_request"); got != "100" {
		t.Errorf("localnet VLAN %s, want 100", got)
	}
}
