package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	libmodel "github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
)

// BenchmarkEgressFirewalls measures EgressFirewalls at the scale in
// one zone: 100 Layer3 networks (a namespace each) with 2 pods each on
// node-a, and an EgressFirewall of 10 CIDR rules in each namespace (1,000
// rules). It reports
//   - ms-converge: from the first object's creation until node-a's
//     Northbound holds every rule's ACL (ms-created: the last creation
//     returned);
//   - acls-per-rule: node-a's firewall ACLs per rule (one per network the
//     namespace's pods use there);
//   - pod-add latency (creation to the pod's port in the Northbound), p50
//     and p99 over 50 pods added one at a time, before the firewalls exist
//     (ms-port-*-without) and after (ms-port-*-with), in the same run;
//   - ms-enforced-p50/p99: after, from a pod's creation until its port is
//     in its namespace's firewall port group.
//
// Run with
//
//	go test -run XXX -bench BenchmarkEgressFirewalls -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_EF_NAMESPACES and OVN_UDN_BENCH_EF_RULES change 100 and 10.
func BenchmarkEgressFirewalls(b *testing.B) {
	namespaces, rules := envOr("OVN_UDN_BENCH_EF_NAMESPACES", 100), envOr("OVN_UDN_BENCH_EF_RULES", 10)
	for b.Loop() {
		benchEgressFirewalls(b, namespaces, rules, 2, 50)
	}
}

func benchEgressFirewalls(b *testing.B, namespaces, rules, per, added int) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.ClusterSubnets = []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.240.0.0/12"), HostPrefix: 20}}
	c := clustertest.StartWith(b, env, cfg, nil, "node-a")
	ports, enforced := newArrivals(), newArrivals()
	var mu sync.Mutex
	acls := map[string]bool{}
	aclsOf := map[string]int{} // by namespace
	pgPorts := map[string]bool{}
	nsName := func(i int) string { return fmt.Sprintf("efb-%d", i) }
	portOf := func(i int, name string) string {
		return podnet.PortName(podnet.Key(nsName(i), "net"), nsName(i), name)
	}
	complete := newArrivals() // a namespace once all its rules' ACLs are in
	lspNames := map[string]string{}
	onPG := func(pg *nbdb.PortGroup) {
		if pg.ExternalIDs[egressfirewall.NamespaceKey] == "" {
			return
		}
		mu.Lock()
		var arrived []string
		for _, u := range pg.Ports {
			if !pgPorts[u] {
				pgPorts[u] = true
				if n, ok := lspNames[u]; ok {
					arrived = append(arrived, n)
				}
			}
		}
		mu.Unlock()
		for _, n := range arrived {
			enforced.mark(n)
		}
	}
	ctxc, cancel := context.WithTimeout(ctx, 10*time.Second)
	watch, err := ovsdb.ConnectNB(ctxc, ovsdb.ClientOptions{Endpoint: c.Zones["node-a"].NB,
		Tables: []libmodel.Model{&nbdb.LogicalSwitchPort{}, &nbdb.ACL{}, &nbdb.PortGroup{}}})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(watch.Close)
	watch.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc: func(_ string, m libmodel.Model) {
			switch r := m.(type) {
			case *nbdb.LogicalSwitchPort:
				mu.Lock()
				lspNames[r.UUID] = r.Name
				late := pgPorts[r.UUID]
				mu.Unlock()
				ports.mark(r.Name)
				if late {
					enforced.mark(r.Name)
				}
			case *nbdb.ACL:
				ns := r.ExternalIDs[egressfirewall.NamespaceKey]
				if ns == "" {
					return
				}
				mu.Lock()
				acls[r.UUID] = true
				aclsOf[ns]++
				done := aclsOf[ns] == rules
				mu.Unlock()
				if done {
					complete.mark(ns)
				}
			case *nbdb.PortGroup:
				onPG(r)
			}
		},
		UpdateFunc: func(_ string, _, m libmodel.Model) {
			if pg, ok := m.(*nbdb.PortGroup); ok {
				onPG(pg)
			}
		},
	})
	for i := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
		if err := c.Admin.Create(ctx, ns); err != nil {
			b.Fatal(err)
		}
		if err := c.Admin.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1ObjectMeta(ns.Name, "net"),
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/14/24"}}}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range namespaces {
		for j := range per {
			createPodB(b, c.Admin, newPod(nsName(i), fmt.Sprintf("p%d", j), "node-a", nil))
		}
	}
	for i := range namespaces {
		for j := range per {
			if _, ok := ports.wait(portOf(i, fmt.Sprintf("p%d", j)), 5*time.Minute); !ok {
				b.Fatalf("pod %s/p%d got no port", nsName(i), j)
			}
		}
	}
	addPods := func(round string) (port, enf []time.Duration) {
		for k := range added {
			i := k % namespaces
			name := fmt.Sprintf("%s-%d", round, k)
			start := time.Now()
			createPodB(b, c.Admin, newPod(nsName(i), name, "node-a", nil))
			at, ok := ports.wait(portOf(i, name), time.Minute)
			if !ok {
				b.Fatalf("pod %s/%s got no port in a minute", nsName(i), name)
			}
			port = append(port, at.Sub(start))
			if round == "after" {
				at, ok := enforced.wait(portOf(i, name), time.Minute)
				if !ok {
					b.Fatalf("pod %s/%s never joined its firewall's port group", nsName(i), name)
				}
				enf = append(enf, at.Sub(start))
			}
		}
		return port, enf
	}
	without, _ := addPods("before")

	start := time.Now()
	for i := range namespaces {
		ef := &v1.EgressFirewall{ObjectMeta: metav1ObjectMeta(nsName(i), "default")}
		for r := range rules - 1 {
			ef.Spec.Egress = append(ef.Spec.Egress, v1.EgressFirewallRule{Type: v1.EgressFirewallRuleAllow,
				To:    v1.EgressFirewallDestination{CIDRSelector: fmt.Sprintf("203.0.%d.%d/32", r/250, 1+r%250)},
				Ports: []v1.EgressFirewallPort{{Protocol: "TCP", Port: 443}}})
		}
		ef.Spec.Egress = append(ef.Spec.Egress, v1.EgressFirewallRule{Type: v1.EgressFirewallRuleDeny, To: v1.EgressFirewallDestination{CIDRSelector: "0.0.0.0/0"}})
		if err := c.Admin.Create(ctx, ef); err != nil {
			b.Fatal(err)
		}
	}
	created := time.Since(start)
	var last time.Time
	for i := range namespaces {
		at, ok := complete.wait(nsName(i), 5*time.Minute)
		if !ok {
			b.Fatalf("namespace %s: not every rule has its ACL", nsName(i))
		}
		if at.After(last) {
			last = at
		}
	}
	converge := last.Sub(start)
	mu.Lock()
	held := len(acls)
	mu.Unlock()
	with, enf := addPods("after")
	b.ReportMetric(created.Seconds()*1000, "ms-created")
	b.ReportMetric(converge.Seconds()*1000, "ms-converge")
	b.ReportMetric(float64(held)/float64(namespaces*rules), "acls-per-rule")
	b.ReportMetric(pct(without, 50).Seconds()*1000, "ms-port-p50-without")
	b.ReportMetric(pct(without, 99).Seconds()*1000, "ms-port-p99-without")
	b.ReportMetric(pct(with, 50).Seconds()*1000, "ms-port-p50-with")
	b.ReportMetric(pct(with, 99).Seconds()*1000, "ms-port-p99-with")
	b.ReportMetric(pct(enf, 50).Seconds()*1000, "ms-enforced-p50")
	b.ReportMetric(pct(enf, 99).Seconds()*1000, "ms-enforced-p99")
}
