package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/rows/connectrouter"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestConnectLayer3Layer2: cluster-manager and two zones with real northd.
// A ClusterNetworkConnect of a Layer3 and a Layer2 UDN is set up in both
// zones (Ready-In-Zone conditions, status Success); ovn-trace follows a
// packet from the Layer3 network through the connect router into the
// Layer2 network, and one from the Layer2 network to the Layer3 network's
// slice on the other node out through the remote port to that node; a
// resync writes nothing; deleting the connect removes its rows and
// contributions and leaves the networks' own rows, isolated again.
func TestConnectLayer3Layer2(t *testing.T) {
	cfg := config.Default()
	c := clustertest.Start(t, env, cfg, "node-a", "node-b")
	ctx := context.Background()
	blue := newUDN(t, c.Admin, "blue", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"103.103.0.0/16/24"}})
	green := newUDN(t, c.Admin, "green", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"104.104.0.0/16"}})
	blueNet, greenNet := netconf.UDNNetworkName(blue.Namespace, blue.Name), netconf.UDNNetworkName(green.Namespace, green.Name)
	label := cmtest.UniqueName("connect")
	for _, ns := range []string{blue.Namespace, green.Namespace} {
		n := &corev1.Namespace{}
		if err := c.Admin.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels["connect-zone-test"] = label
		if err := c.Admin.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"node-a", "node-b"} {
		c.WaitNB(n, "Logical_Router:GR_"+blueNet+"_"+n, "Logical_Router:GR_"+greenNet+"_"+n)
	}

	name := cmtest.UniqueName("cc")
	cnc := &v1.ClusterNetworkConnect{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ClusterNetworkConnectSpec{
		NetworkSelectors: v1.NetworkSelectors{{NetworkSelectionType: v1.PrimaryUserDefinedNetworkSelection,
			PrimaryUserDefinedNetworkSelector: &v1.PrimaryUserDefinedNetworkSelector{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"connect-zone-test": label}}}}},
		ConnectSubnets:      []v1.ConnectSubnet{{CIDR: "192.168.0.0/16", NetworkPrefix: 24}},
		ConnectivityEnabled: []v1.ConnectivityType{v1.PodNetwork}}}
	if err := c.Admin.Create(ctx, cnc); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(cnc), cnc); err != nil {
			return err
		}
		for _, n := range []string{"node-a", "node-b"} {
			if !meta.IsStatusConditionTrue(cnc.Status.Conditions, v1.ConditionReadyInZonePrefix+n) {
				return fmt.Errorf("zone %s not ready: %+v", n, cnc.Status.Conditions)
			}
		}
		if cnc.Status.Status != v1.ConnectSuccess {
			return fmt.Errorf("status %q", cnc.Status.Status)
		}
		return nil
	})
	cr := connectrouter.RouterName(name)
	za := c.Zones["node-a"]
	for _, n := range []string{"node-a", "node-b"} {
		c.WaitNB(n, "Logical_Router:"+cr, "Logical_Router_Port:"+name+"-to-"+greenNet, "Logical_Router_Port:"+name+"-to-"+blueNet+"_node-a",
			"Logical_Router_Port:"+name+"-to-"+blueNet+"_node-b")
	}

	// Blue's management port on node A to green's management port address:
	// blue's cluster router reroutes to the connect router, which routes to
	// green's transit router and switch.
	aMAC, aIP := port(t, za, "Logical_Switch_Port", "k8s-"+blueNet+"_node-a")
	gwMAC, _ := port(t, za, "Logical_Router_Port", "rtos-"+blueNet+"_node-a")
	greenMgmt := mustNth(netip.MustParsePrefix("104.104.0.0/16"), 2).String()
	toGreen := ovntrace.Packet{InPort: "k8s-" + blueNet + "_node-a", EthSrc: aMAC, EthDst: gwMAC, IPSrc: aIP, IPDst: greenMgmt, Proto: "icmp"}
	ovntest.ExpectDelivered(t, za.Trace(blueNet+"_node-a", toGreen), "k8s-"+greenNet+"_node-a")

	// Green's management port to blue's slice on node B: out through the
	// connect router's remote port toward node B.
	gMAC, gIP := port(t, za, "Logical_Switch_Port", "k8s-"+greenNet+"_node-a")
	trMAC, _ := port(t, za, "Logical_Router_Port", "trtos-"+greenNet+"_ovn_layer2_switch")
	bSlice := c.NodeInfo("node-b").Subnets[blueNet][0]
	toBlueB := ovntrace.Packet{InPort: "k8s-" + greenNet + "_node-a", EthSrc: gMAC, EthDst: trMAC, IPSrc: gIP, IPDst: mustNth(bSlice, 5).String(), Proto: "icmp"}
	ovntest.ExpectDelivered(t, za.Trace(greenNet+"_ovn_layer2_switch", toBlueB), name+"-to-"+blueNet+"_node-b")

	// A resync writes nothing.
	for _, n := range []string{"node-a", "node-b"} {
		resyncWritesNothing(t, c.Controller(n))
	}

	// Services only: a service of green (its backend green's management
	// address) is load-balanced on blue's switch too, and reached through
	// the connect; green's addresses themselves are not.
	vip := servicesOnly(t, c, cnc, green.Namespace, greenNet, blueNet, greenMgmt)
	toVIP := toGreen
	toVIP.IPDst, toVIP.Proto, toVIP.SrcPort, toVIP.DstPort = vip, "tcp", 40000, 80
	ovntest.ExpectDelivered(t, za.Trace(blueNet+"_node-a", toVIP, "--ct=new"), "k8s-"+greenNet+"_node-a")
	if v := za.Trace(blueNet+"_node-a", toGreen, "--ct=new"); len(v.Delivered()) > 0 {
		t.Errorf("services only: blue reaches green's address %s:\n%s", greenMgmt, v.Trace)
	}
	for _, n := range []string{"node-a", "node-b"} {
		resyncWritesNothing(t, c.Controller(n))
	}

	// Delete the connect: its rows and contributions go, the networks'
	// own stay; blue's traffic toward green no longer crosses.
	blueCRPorts := za.MustNBCtl("--bare", "--columns=ports", "find", "Logical_Router", "name="+blueNet+"_ovn_cluster_router")
	if err := c.Admin.Delete(ctx, cnc); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b"} {
		z := c.Zones[n]
		cmtest.Eventually(t, time.Minute, func() error {
			if out := z.MustNBCtl("--bare", "--columns=name", "find", "Logical_Router", "name="+cr); out != "" {
				return fmt.Errorf("zone %s still has %s", n, cr)
			}
			if out := z.MustNBCtl("--bare", "--columns=load_balancer,acls", "find", "Logical_Switch", "name="+blueNet+"_"+n); strings.TrimSpace(out) != "" {
				return fmt.Errorf("zone %s: blue's switch keeps load balancers or ACLs %q", n, out)
			}
			if out := z.MustNBCtl("--bare", "--columns=match", "find", "Logical_Router_Policy", "priority=9001"); out != "" {
				return fmt.Errorf("zone %s still has reroutes: %s", n, out)
			}
			return nil
		})
	}
	after := za.MustNBCtl("--bare", "--columns=ports", "find", "Logical_Router", "name="+blueNet+"_ovn_cluster_router")
	if got, want := len(strings.Fields(after)), len(strings.Fields(blueCRPorts))-1; got != want {
		t.Errorf("blue's cluster router has %d ports after the connect went, want %d (its own)", got, want)
	}
	if v := za.Trace(blueNet+"_node-a", toGreen); len(v.Delivered()) == 1 && v.Delivered()[0] == "k8s-"+greenNet+"_node-a" {
		t.Errorf("blue still reaches green after the connect went:\n%s", v.Trace)
	}
}

// servicesOnly creates a Service in namespace ns of the Layer2 network svcNet with one
// endpoint (backend, port 8080, a mirrored slice written by hand), switches
// the connect to ClusterIPServiceNetwork alone, and waits until every zone
// has the service's load balancer on the Layer3 peerNet's switch and the connect's
// ACLs on both networks' switches. It returns the service's cluster IP.
func servicesOnly(t *testing.T, c *clustertest.Cluster, cnc *v1.ClusterNetworkConnect, ns, svcNet, peerNet, backend string) string {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if err := c.Admin.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-" + svcNet,
		Labels: map[string]string{mirror.LabelServiceName: "web", mirror.LabelNetwork: svcNet, discoveryv1.LabelManagedBy: "test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{backend}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	if err := c.Admin.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(cnc), cnc); err != nil {
		t.Fatal(err)
	}
	cnc.Spec.ConnectivityEnabled = []v1.ConnectivityType{v1.ClusterIPServiceNetwork}
	if err := c.Admin.Update(ctx, cnc); err != nil {
		t.Fatal(err)
	}
	lbName := svcNet + "_Service_" + ns + "/web_TCP_cluster"
	for n, z := range c.Zones {
		peerSwitch := peerNet + "_" + n
		cmtest.Eventually(t, time.Minute, func() error {
			lb := strings.TrimSpace(z.MustNBCtl("--bare", "--columns=_uuid", "find", "Load_Balancer", "name="+lbName))
			if lb == "" {
				return fmt.Errorf("zone %s: no load balancer %s", n, lbName)
			}
			if got := z.MustNBCtl("--bare", "--columns=load_balancer", "find", "Logical_Switch", "name="+peerSwitch); strings.TrimSpace(got) != lb {
				return fmt.Errorf("zone %s: %s load balancers %q, want %s", n, peerSwitch, got, lb)
			}
			for _, sw := range []string{peerSwitch, svcNet + "_ovn_layer2_switch"} {
				acls := strings.Fields(z.MustNBCtl("--bare", "--columns=acls", "find", "Logical_Switch", "name="+sw))
				if len(acls) != 3 { // pass, drop, node
					return fmt.Errorf("zone %s: %s has ACLs %v, want the connect's 3", n, sw, acls)
				}
			}
			return nil
		})
	}
	return svc.Spec.ClusterIP
}
