package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// TestRemoteNodeJoinsAndLeaves: a node with no zone controller of its own
// here joins a cluster of two zones and leaves it again. Zone A writes each
// network's rows for it (Layer3 UDN, Layer2 primary UDN, the default
// network) apart (owner kind net-part), not by planning
// the networks whole; after each step the network's whole plan in zone A
// is empty (the parts wrote what the whole would have), and a packet from
// node A to the node's slice leaves through its remote port while it is
// there.
func TestRemoteNodeJoinsAndLeaves(t *testing.T) {
	cfg := config.Default()
	c := clustertest.Start(t, env, cfg, "node-a", "node-b")
	ctx := context.Background()
	net, _ := layer3UDN(t, c.Admin, "10.128.0.0/16/24")
	l2u := newUDN(t, c.Admin, "l2", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"203.203.0.0/24"}})
	l2 := netconf.UDNNetworkName(l2u.Namespace, l2u.Name)
	za, ra := c.Zones["node-a"], c.Controller("node-a")
	c.WaitNB("node-a", "Logical_Switch_Port:tstor-"+net+"_node-b", "Logical_Router_Port:trtor-GR_"+l2+"_node-b")
	parts := func() float64 {
		return testutil.ToFloat64(metrics.Transactions.WithLabelValues("node-a", "net-part", "ok"))
	}
	wholePlanEmpty := func() {
		t.Helper()
		cmtest.Eventually(t, time.Minute, func() error {
			for _, n := range []string{net, l2, "default"} {
				rows, err := ra.DesiredNetwork(ctx, n)
				if err != nil {
					return err
				}
				p, err := ra.Syncer.Plan(feature.NetworkKey(n).String(), rows)
				if err != nil {
					return err
				}
				if !p.Empty() {
					return fmt.Errorf("network %s: the whole plan is not empty: %s", n, p)
				}
			}
			return nil
		})
	}
	before := parts()

	// node-c joins: its annotations as the harness's third node; the
	// cluster-manager gives it its slices.
	nodeC := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c", Annotations: clustertest.NodeInfo("node-c", 2).Annotations()}}
	if err := c.Admin.Create(ctx, nodeC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Admin.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}})
	})
	var slice netip.Prefix
	cmtest.Eventually(t, time.Minute, func() error {
		info, err := c.TryNodeInfo("node-c")
		if err != nil || len(info.Subnets[net]) == 0 {
			return fmt.Errorf("node-c has no slice of %s yet (%v)", net, err)
		}
		slice = info.Subnets[net][0]
		return nil
	})
	c.WaitNB("node-a", "Logical_Switch_Port:tstor-"+net+"_node-c", "Logical_Switch_Port:tstor-node-c", "Logical_Router_Port:trtor-GR_"+l2+"_node-c")
	cmtest.Eventually(t, time.Minute, func() error {
		if got := za.MustNBCtl("--bare", "--columns=nexthop", "find", "Logical_Router_Static_Route", "ip_prefix="+slice.String()); strings.TrimSpace(got) == "" {
			return fmt.Errorf("no route to node-c's slice %s", slice)
		}
		return nil
	})
	wholePlanEmpty()
	joined := parts()
	if joined-before < 3 {
		t.Errorf("node-c's join wrote %v part transactions in zone A, want one per network (the Layer3 and Layer2 UDNs', the default network's) at least", joined-before)
	}
	aMAC, aIP := port(t, za, "Logical_Switch_Port", "k8s-"+net+"_node-a")
	gwMAC, _ := port(t, za, "Logical_Router_Port", "rtos-"+net+"_node-a")
	toC := ovntrace.Packet{InPort: "k8s-" + net + "_node-a", EthSrc: aMAC, EthDst: gwMAC, IPSrc: aIP, IPDst: mustNth(slice, 2).String(), Proto: "icmp"}
	ovntest.ExpectDelivered(t, za.Trace(net+"_node-a", toC), "tstor-"+net+"_node-c")

	// node-c leaves: its rows go the same way.
	if err := c.Admin.Delete(ctx, nodeC); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		for _, p := range []string{"Logical_Switch_Port:tstor-" + net + "_node-c", "Logical_Switch_Port:tstor-node-c", "Logical_Router_Port:trtor-GR_" + l2 + "_node-c"} {
			table, name, _ := strings.Cut(p, ":")
			if got := za.MustNBCtl("--bare", "--columns=_uuid", "find", table, "name="+name); strings.TrimSpace(got) != "" {
				return fmt.Errorf("%s is still in zone A", p)
			}
		}
		if got := za.MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Router_Static_Route", "ip_prefix="+slice.String()); strings.TrimSpace(got) != "" {
			return fmt.Errorf("the route to node-c's slice %s is still in zone A", slice)
		}
		return nil
	})
	wholePlanEmpty()
	if left := parts(); left-joined < 3 {
		t.Errorf("node-c's departure wrote %v part transactions in zone A, want one per network at least", left-joined)
	}
	resyncWritesNothing(t, ra)
}
