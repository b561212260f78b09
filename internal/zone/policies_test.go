package zone_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// TestPolicyLifecycle: a NetworkPolicy on a Layer3 UDN gets its port group
// (the selected local pod), an ACL naming its peer's address set (the peer
// pod's address on the UDN), and the namespace's default deny; a resync
// writes nothing; a label change moves the peer's address out; deleting the
// policy removes every row it and its peer and deny held.
func TestPolicyLifecycle(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	ns, network := udnIn(t, c.Admin, "np", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary,
		Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}})
	key := podnet.Key(ns, "net")
	web := newPod(ns, "web", "node-a", nil)
	web.Labels = map[string]string{"app": "web"}
	db := newPod(ns, "db", "node-a", nil)
	db.Labels = map[string]string{"app": "db"}
	createPod(t, c.Admin, web)
	createPod(t, c.Admin, db)
	waitAnnotated(t, c.Admin, web, podnet.DefaultKey, key)
	dbNets := waitAnnotated(t, c.Admin, db, podnet.DefaultKey, key)
	dbIP := addr(t, dbNets[key], true).Addr().String()

	pol := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-to-web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(80))}},
			}}}}
	npTxns := func() float64 { return testutil.ToFloat64(metrics.Transactions.WithLabelValues("node-a", "np", "ok")) }
	txnsBefore := npTxns()
	if err := c.Admin.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	z := c.Zones["node-a"]
	nbctl := func(args ...string) string { return strings.TrimSpace(z.MustNBCtl(args...)) }
	pg := netpol.PortGroupName(network, ns, "db-to-web")
	deny := netpol.DenyPortGroupName(network, ns, "Ingress")
	peer := netpol.Peer{Namespace: ns, Pods: labels.SelectorFromSet(labels.Set{"app": "db"})}
	as := netpol.AddressSetName(network, peer, false)
	webPort := podnet.PortName(key, ns, "web")
	cmtest.Eventually(t, time.Minute, func() error {
		webUUID := nbctl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+webPort)
		if got := nbctl("--bare", "--columns=ports", "find", "Port_Group", "name="+pg); got != webUUID || got == "" {
			return fmt.Errorf("policy port group %s ports %q, want web's port %q", pg, got, webUUID)
		}
		if got := nbctl("--bare", "--columns=ports", "find", "Port_Group", "name="+deny); got != webUUID {
			return fmt.Errorf("default-deny port group ports %q, want %q", got, webUUID)
		}
		if got := nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+as); got != dbIP {
			return fmt.Errorf("address set %s holds %q, want db's %s", as, got, dbIP)
		}
		matches := nbctl("--bare", "--columns=match", "find", "ACL", "external_ids:k8s.ovn.org/name="+ns+"/db-to-web")
		want := fmt.Sprintf("outport == @%s && (ip4.src == {$%s}) && (tcp.dst == 80)", pg, as)
		if matches != want {
			return fmt.Errorf("policy ACL match %q, want %q", matches, want)
		}
		return nil
	})

	// What OVN makes of it (ovn-trace parses the ACLs' matches as
	// ovn-controller does): db reaches web on TCP 80 only; web, not isolated
	// in egress, reaches db. Two conntrack passes: the switch's egress
	// pipeline runs its own.
	webNets := waitAnnotated(t, c.Admin, web, podnet.DefaultKey, key)
	sw := network + "_node-a"
	c.WaitNB("node-a", "Address_Set:"+as)
	pkt := func(from, to podnet.Attachment, fromPort string, dport int) ovntrace.Packet {
		return ovntrace.Packet{InPort: fromPort, EthSrc: from.MAC, EthDst: to.MAC, IPSrc: addr(t, from, true).Addr().String(),
			IPDst: addr(t, to, true).Addr().String(), Proto: "tcp", DstPort: dport}
	}
	dbPort := podnet.PortName(key, ns, "db")
	ct := []string{"--ct=new", "--ct=new"}
	// northd translates the rows after the controller wrote them: poll.
	cmtest.Eventually(t, time.Minute, func() error {
		for _, c := range []struct {
			p    ovntrace.Packet
			want []string
		}{
			{pkt(dbNets[key], webNets[key], dbPort, 80), []string{webPort}},
			{pkt(dbNets[key], webNets[key], dbPort, 81), nil},
			{pkt(webNets[key], dbNets[key], webPort, 5432), []string{dbPort}},
		} {
			if v, err := z.TryTrace(sw, c.p, ct...); err != nil {
				return err
			} else if !slices.Equal(v.Delivered(), c.want) {
				return fmt.Errorf("%s: delivered to %v, want %v\n%s", v.Expr, v.Delivered(), c.want, v.Trace)
			}
		}
		return nil
	})

	// The zone's metrics counted the policy's transaction.
	if got := npTxns() - txnsBefore; got < 1 {
		t.Errorf("ovn_udn_ovsdb_transactions_total{owner_kind=np} grew by %v, want at least 1", got)
	}

	r := c.Controller("node-a")
	resyncWritesNothing(t, r)

	// The peer pod's label changes: its address leaves the set.
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
		t.Fatal(err)
	}
	db.Labels["app"] = "other"
	if err := c.Admin.Update(ctx, db); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if got := nbctl("--bare", "--columns=addresses", "find", "Address_Set", "name="+as); got != "" {
			return fmt.Errorf("address set %s still holds %q after the pod's label changed", as, got)
		}
		return nil
	})

	if err := c.Admin.Delete(ctx, pol); err != nil {
		t.Fatal(err)
	}
	// The policy's and its peer's rows go; the namespace's default-deny
	// group stays, empty, while the namespace has its network (so a policy
	// replaced by another does not churn it).
	cmtest.Eventually(t, time.Minute, func() error {
		for _, table := range []string{"Port_Group", "Address_Set", "ACL"} {
			out := nbctl("--bare", "--columns=external_ids", "find", table)
			for _, line := range strings.Split(out, "\n") {
				for _, prefix := range []string{"np:", "npas:"} {
					if strings.Contains(line, "k8s.ovn.org/owner=\""+prefix) || strings.Contains(line, "k8s.ovn.org/owner="+prefix) {
						return fmt.Errorf("%s row left after the policy was deleted: %s", table, line)
					}
				}
			}
		}
		if got := nbctl("--bare", "--columns=ports", "find", "Port_Group", "name="+deny); got != "" {
			return fmt.Errorf("default-deny group still holds %q with no policy", got)
		}
		return nil
	})
	keys, err := r.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(keys, func(k feature.Key) bool { return k.Kind == feature.KindPolicy || k.Kind == feature.KindPeer }) {
		t.Errorf("keys after the policy was deleted: %v", keys)
	}
}

// TestPolicyRowsLeaveWithTheNetwork: a Layer2 UDN's policy rows; when its
// pod goes, the policy's port group goes (the namespace's default deny stays,
// empty, and the peer's address set); when the UDN is deleted under
// the policy (the namespace stays labelled, the policy stays), that goes too.
// createFromDB creates the NetworkPolicy "from-db" in ns: pods app=web
// admit ingress from pods app=db of the namespace only.
func createFromDB(t *testing.T, c client.Client, ns string) {
	t.Helper()
	pol := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-db"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
			}}}}
	if err := c.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyRowsLeaveWithTheNetwork(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	ns, _ := udnIn(t, c.Admin, "npnet", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary,
		Subnets: []v1.NetworkSubnet{"10.100.0.0/24"}})
	web := newPod(ns, "web", "node-a", nil)
	web.Labels = map[string]string{"app": "web"}
	createPod(t, c.Admin, web)
	waitAnnotated(t, c.Admin, web, podnet.DefaultKey, podnet.Key(ns, "net"))
	createFromDB(t, c.Admin, ns)
	z := c.Zones["node-a"]
	owned := func() []string { return policyRows(z) }
	cmtest.Eventually(t, time.Minute, func() error {
		// Port group, its ACL, the default deny's port group and 4 ACLs
		// (drop, ARP/ND, node, hairpin), the peer's address set.
		if got := owned(); len(got) != 8 {
			return fmt.Errorf("policy rows %v, want 8", got)
		}
		return nil
	})
	// The pod goes (a network with pods is not deleted): the policy selects
	// nothing here any more, its peer's address set stays while the policy
	// names it on the network.
	if err := c.Admin.Delete(ctx, web, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	pg := netpol.PortGroupName(netconf.UDNNetworkName(ns, "net"), ns, "from-db")
	cmtest.Eventually(t, time.Minute, func() error {
		if got := strings.TrimSpace(z.MustNBCtl("--bare", "--columns=name", "find", "Port_Group", "name="+pg)); got != "" {
			return fmt.Errorf("the policy's port group is still there with no pod it selects")
		}
		if got := owned(); len(got) != 6 { // the empty default deny and its 4 ACLs, the address set
			return fmt.Errorf("policy rows %v once the pod is gone, want 6", got)
		}
		return nil
	})
	udn := &v1.UserDefinedNetwork{}
	if err := c.Admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net"}, udn); err != nil {
		t.Fatal(err)
	}
	if err := c.Admin.Delete(ctx, udn); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if got := owned(); len(got) != 0 {
			return fmt.Errorf("policy rows left after the network was deleted: %v", got)
		}
		return nil
	})
}
