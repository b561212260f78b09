package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// policyRows returns the tables of the rows NetworkPolicies own in a zone
// (external_ids k8s.ovn.org/kind=NetworkPolicy), one entry per row.
func policyRows(z *ovntest.Zone) []string {
	var out []string
	for _, table := range []string{"Port_Group", "Address_Set", "ACL"} {
		for _, line := range strings.Split(z.MustNBCtl("--bare", "--columns=external_ids", "find", table), "\n") {
			if strings.Contains(line, "k8s.ovn.org/kind=NetworkPolicy") {
				out = append(out, table)
			}
		}
	}
	return out
}

// TestPoliciesWhereUsed: a NetworkPolicy of a primary network rendered only
// where it is used is rendered only there too: node-b's zone holds none of
// its rows (port groups, ACLs, the peer's address set) while no pod of the
// network runs on node-b; the first pod there brings them, enforcing at
// once (ovn-trace across zones: the allowed peer on node-a reaches it,
// another pod does not); when the last pod leaves node-b they go with the
// network after the grace period, and node-a keeps its own.
func TestPoliciesWhereUsed(t *testing.T) {
	c := clustertest.StartWith(t, env, config.Default(), func(o *zone.Options) { o.InactiveGracePeriod = 2 * time.Second },
		"node-a", "node-b")
	ctx := context.Background()
	ns, net := udnIn(t, c.Admin, "dyn-np", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary,
		Subnets: []v1.NetworkSubnet{"10.129.0.0/16/24"}})
	key := podnet.Key(ns, "net")
	t.Cleanup(func() {
		_ = c.Admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	za, zb := c.Zones["node-a"], c.Zones["node-b"]
	port := func(p *corev1.Pod) string { return podnet.PortName(key, p.Namespace, p.Name) }
	labelled := func(name, node, app string) *corev1.Pod {
		p := newPod(ns, name, node, nil)
		if app != "" {
			p.Labels = map[string]string{"app": app}
		}
		return createPod(t, c.Admin, p)
	}
	webA, dbA, otherA := labelled("web-a", "node-a", "web"), labelled("db-a", "node-a", "db"), labelled("other-a", "node-a", "")
	createFromDB(t, c.Admin, ns)
	nDB := waitAnnotated(t, c.Admin, dbA, podnet.DefaultKey, key)
	nOther := waitAnnotated(t, c.Admin, otherA, podnet.DefaultKey, key)
	waitAnnotated(t, c.Admin, webA, podnet.DefaultKey, key)
	// Port group and its ACL, the default deny's port group and 4 ACLs
	// (drop, ARP/ND, node, hairpin), the peer's address set.
	const all = 8
	cmtest.Eventually(t, time.Minute, func() error {
		if got := policyRows(za); len(got) != all {
			return fmt.Errorf("zone node-a: policy rows %v, want %d", got, all)
		}
		return nil
	})
	// Every key planned again in node-b's zone (so this is not a plan that
	// has not run yet): nothing of the policy there.
	reconcileAll(t, c.Controller("node-b"))
	if got := policyRows(zb); len(got) != 0 {
		t.Fatalf("zone node-b holds policy rows %v of a network no pod uses there", got)
	}

	// The first pod of the network on node-b: the policy comes with it and
	// holds at once.
	webB := labelled("web-b", "node-b", "web")
	nWebB := waitAnnotated(t, c.Admin, webB, podnet.DefaultKey, key)
	pg := netpol.PortGroupName(net, ns, "from-db")
	cmtest.Eventually(t, time.Minute, func() error {
		if got := policyRows(zb); len(got) != all {
			return fmt.Errorf("zone node-b: policy rows %v, want %d", got, all)
		}
		if ports := zb.MustNBCtl("--bare", "--columns=ports", "find", "Port_Group", "name="+pg); strings.TrimSpace(ports) == "" {
			return fmt.Errorf("zone node-b: port group %s has no port", pg)
		}
		return nil
	})
	c.WaitNB("node-b", "Logical_Router_Port:rtots-"+net+"_node-b", "Logical_Switch_Port:tstor-"+net+"_node-a")
	aT, _ := port2(t, za, "Logical_Router_Port", "rtots-"+net+"_node-a")
	bT, _ := port2(t, zb, "Logical_Router_Port", "rtots-"+net+"_node-b")
	from := func(src podnet.Networks) ovntrace.Packet {
		return ovntrace.Packet{InPort: "tstor-" + net + "_node-a", EthSrc: aT, EthDst: bT, TTL: 63, Proto: "tcp", DstPort: 80,
			IPSrc: addr(t, src[key], true).Addr().String(), IPDst: addr(t, nWebB[key], true).Addr().String()}
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if v, err := zb.TryTrace(net+"_transit_switch", from(nDB)); err != nil {
			return err
		} else if !contains(v.Delivered(), port(webB)) {
			return fmt.Errorf("db-a → web-b not delivered:\n%s", v.Trace)
		}
		return nil
	})
	ovntest.ExpectDropped(t, zb.Trace(net+"_transit_switch", from(nOther)))

	// The last pod leaves node-b: after the grace period the policy's rows
	// leave its zone with the network; node-a's stay.
	if err := c.Admin.Delete(ctx, webB, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if rows := networkRows(t, zb, net); len(rows) != 0 {
			return fmt.Errorf("zone node-b still holds rows of %s: %v", net, rows)
		}
		if got := policyRows(zb); len(got) != 0 {
			return fmt.Errorf("zone node-b still holds policy rows %v", got)
		}
		return nil
	})
	if got := policyRows(za); len(got) != all {
		t.Errorf("zone node-a: policy rows %v after node-b's pod left, want %d", got, all)
	}
	for _, node := range c.Nodes {
		resyncWritesNothing(t, c.Controller(node))
	}
}
