package zone_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/dnsresolve/dnsserve"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// dnsServer serves the records file it returns on a loopback port.
func dnsServer(t *testing.T, records string) (addr, file string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "records")
	if err := os.WriteFile(file, []byte(records), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bound, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- (&dnsserve.Server{Path: file}).ListenAndServe(ctx, "127.0.0.1:0", func(a string) { bound <- a })
	}()
	select {
	case addr = <-bound:
		t.Cleanup(func() { cancel(); <-done })
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	return addr, file
}

// routerMAC is the MAC of the router port a logical switch's router-type
// port peers with: a pod's next hop out of the switch.
func routerMAC(t *testing.T, z *ovntest.Zone, sw string) string {
	t.Helper()
	for _, lsp := range strings.Fields(z.MustNBCtl("--bare", "--columns=ports", "list", "Logical_Switch", sw)) {
		if strings.Trim(z.MustNBCtl("get", "Logical_Switch_Port", lsp, "type"), `"`) != "router" {
			continue
		}
		lrp := strings.Trim(z.MustNBCtl("get", "Logical_Switch_Port", lsp, "options:router-port"), `"`)
		mac, _ := port(t, z, "Logical_Router_Port", lrp)
		return mac
	}
	t.Fatalf("zone %s: switch %s has no router port", z.Name, sw)
	return ""
}

// TestEgressFirewallFeature: the zone feature on real zones, with a Layer3
// and a Layer2 tenant of one subnet, pods of both on node-a. The Layer3
// tenant's EgressFirewall allows one outside address and port, a DNS name
// and denies the rest (and a labelled node): ovn-trace on node-a drops its
// pod's other egress, never its traffic within its subnet, and never the
// Layer2 tenant's; node-b, with no pod of it, renders nothing and says
// nothing. The status says applied; a DNS name whose records change is
// followed within its TTL; one that does not resolve is named in the status;
// deleting the object takes the rows away.
func TestEgressFirewallFeature(t *testing.T) {
	dns, records := dnsServer(t, "allowed.test. 1 198.51.100.20\n")
	c := clustertest.StartWith(t, env, config.Default(), func(o *zone.Options) { o.DNSServer = dns }, "node-a", "node-b")
	ctx := context.Background()
	nb := c.Node("node-b")
	nb.Labels = map[string]string{"role": "infra"}
	if err := c.Admin.Update(ctx, nb); err != nil {
		t.Fatal(err)
	}
	ns3, net3 := udnIn(t, c.Admin, "efl3", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}})
	ns2, _ := udnIn(t, c.Admin, "efl2", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/24"}})
	t.Cleanup(func() {
		for _, ns := range []string{ns3, ns2} {
			_ = c.Admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
			_ = c.Admin.Delete(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}})
		}
	})
	k3, k2 := podnet.Key(ns3, "net"), podnet.Key(ns2, "net")
	p3, p2 := newPod(ns3, "web", "node-a", nil), newPod(ns2, "web", "node-a", nil)
	createPod(t, c.Admin, p3)
	createPod(t, c.Admin, p2)
	a3 := waitAnnotated(t, c.Admin, p3, "default", k3)[k3]
	a2 := waitAnnotated(t, c.Admin, p2, "default", k2)[k2]
	port3, port2 := podnet.PortName(k3, ns3, "web"), podnet.PortName(k2, ns2, "web")
	za, zb := c.Zones["node-a"], c.Zones["node-b"]
	c.WaitNB("node-a", "Logical_Switch_Port:"+port3, "Logical_Switch_Port:"+port2)
	sw3 := strings.Fields(za.MustNBCtl("lsp-get-ls", port3))[0]
	sw2 := strings.Fields(za.MustNBCtl("lsp-get-ls", port2))[0]
	mac3, mac2 := routerMAC(t, za, sw3), routerMAC(t, za, sw2)
	pkt := func(a podnet.Attachment, inPort, gwMAC, dst string, dport int) ovntrace.Packet {
		return ovntrace.Packet{InPort: inPort, EthSrc: a.MAC, EthDst: gwMAC, IPSrc: addr(t, a, true).Addr().String(), IPDst: dst, Proto: "tcp", DstPort: dport}
	}
	nodeB := c.NodeInfo("node-b").PrimaryIPs[0].Addr().String()
	type flow struct {
		name    string
		sw      string
		p       ovntrace.Packet
		dropped bool
	}
	expect := func(flows []flow) error {
		for _, f := range flows {
			v, err := za.TryTrace(f.sw, f.p, "--ct=new", "--ct=new", "--ct=new")
			if err != nil {
				return err
			}
			if v.Dropped() != f.dropped {
				return fmt.Errorf("%s: dropped=%v, want %v (delivered to %v)\n%s", f.name, v.Dropped(), f.dropped, v.Delivered(), v.Trace)
			}
		}
		return nil
	}
	before := []flow{
		{"layer3 to an outside port before the firewall", sw3, pkt(a3, port3, mac3, "198.51.100.10", 9001), false},
		{"layer2 to an outside port", sw2, pkt(a2, port2, mac2, "198.51.100.10", 9001), false},
	}
	cmtest.Eventually(t, time.Minute, func() error { return expect(before) })

	ef := &v1.EgressFirewall{ObjectMeta: metav1.ObjectMeta{Namespace: ns3, Name: "default"}, Spec: v1.EgressFirewallSpec{Egress: []v1.EgressFirewallRule{
		{Type: v1.EgressFirewallRuleAllow, To: v1.EgressFirewallDestination{CIDRSelector: "198.51.100.10/32"}, Ports: []v1.EgressFirewallPort{{Protocol: "TCP", Port: 9000}}},
		{Type: v1.EgressFirewallRuleAllow, To: v1.EgressFirewallDestination{DNSName: "allowed.test"}},
		{Type: v1.EgressFirewallRuleDeny, To: v1.EgressFirewallDestination{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "infra"}}}},
		{Type: v1.EgressFirewallRuleDeny, To: v1.EgressFirewallDestination{CIDRSelector: "0.0.0.0/0"}},
	}}}
	if err := c.Admin.Create(ctx, ef); err != nil {
		t.Fatal(err)
	}
	after := []flow{
		{"the allowed address and port", sw3, pkt(a3, port3, mac3, "198.51.100.10", 9000), false},
		{"the allowed address, another port", sw3, pkt(a3, port3, mac3, "198.51.100.10", 9001), true},
		{"another address", sw3, pkt(a3, port3, mac3, "203.0.113.1", 9000), true},
		{"the DNS name's address", sw3, pkt(a3, port3, mac3, "198.51.100.20", 443), false},
		{"the labelled node", sw3, pkt(a3, port3, mac3, nodeB, 22), true},
		{"the Layer2 tenant of the same subnet", sw2, pkt(a2, port2, mac2, "198.51.100.10", 9001), false},
	}
	cmtest.Eventually(t, time.Minute, func() error { return expect(after) })
	// Within the tenant's subnet, nothing is judged: the deny's match
	// leaves the subnet out.
	pg := egressfirewall.PortGroupName(net3, ns3)
	acls := za.MustNBCtl("--bare", "--columns=match", "find", "ACL", "external_ids:"+egressfirewall.NamespaceKey+"="+ns3)
	if !strings.Contains(acls, "ip4.dst == 0.0.0.0/0 && ip4.dst != 10.128.0.0/16") || !strings.Contains(acls, "inport == @"+pg) {
		t.Errorf("node-a's firewall ACLs do not leave the tenant's subnet out:\n%s", acls)
	}
	if got := za.MustNBCtl("--bare", "--columns=_uuid", "find", "ACL", "external_ids:"+egressfirewall.NamespaceKey+"="+ns2); got != "" {
		t.Errorf("the Layer2 tenant got firewall ACLs: %s", got)
	}
	if got := zb.MustNBCtl("--bare", "--columns=_uuid", "find", "ACL", "external_ids:"+egressfirewall.NamespaceKey+"="+ns3); got != "" {
		t.Errorf("node-b, with no pod of the namespace, holds firewall ACLs: %s", got)
	}
	status := func(want string) {
		t.Helper()
		cmtest.Eventually(t, time.Minute, func() error {
			var got v1.EgressFirewall
			if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(ef), &got); err != nil {
				return err
			}
			if !strings.HasPrefix(got.Status.Status, want) {
				return fmt.Errorf("status %q (messages %q), want %q", got.Status.Status, got.Status.Messages, want)
			}
			if len(got.Status.Messages) != 1 || !strings.HasPrefix(got.Status.Messages[0], "node-a: ") {
				return fmt.Errorf("messages %q, want node-a's alone", got.Status.Messages)
			}
			return nil
		})
	}
	status(v1.EgressFirewallApplied)
	// A resync with nothing changed writes nothing (status included: the
	// zone's message is already there).
	resyncWritesNothing(t, c.Controller("node-a"))

	// The DNS name moves: followed within its 1 s TTL (the resolver's floor
	// is 5 s).
	if err := os.WriteFile(records, []byte("allowed.test. 1 198.51.100.30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		return expect([]flow{
			{"the DNS name's new address", sw3, pkt(a3, port3, mac3, "198.51.100.30", 443), false},
			{"the DNS name's old address", sw3, pkt(a3, port3, mac3, "198.51.100.20", 443), true},
		})
	})

	// A name that does not resolve: the status names the rule.
	var cur v1.EgressFirewall
	if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(ef), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Egress[1].To.DNSName = "nowhere.test"
	if err := c.Admin.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	status(v1.EgressFirewallNotApplied + ": node-a: rule 1: dnsName nowhere.test: ")

	// Deleted: no rows left, on either zone.
	if err := c.Admin.Delete(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		for _, z := range []*ovntest.Zone{za, zb} {
			for _, table := range []string{"ACL", "Port_Group"} {
				if out := z.MustNBCtl("--bare", "--columns=_uuid", "find", table, "external_ids:"+egressfirewall.NamespaceKey+"="+ns3); out != "" {
					return fmt.Errorf("zone %s still holds %s rows of the firewall", z.Name, table)
				}
			}
		}
		return expect(before)
	})
}
