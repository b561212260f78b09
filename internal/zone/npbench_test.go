package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	libmodel "github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// BenchmarkPolicyAdd measures, with a zone controller on a real API server
// and ovsdb-server, 1,000 pods of a Layer3 UDN on the zone's node (200 apps
// of 5 pods) and 200 NetworkPolicies added one at a time (policy i selects
// app i and allows app i+1 on TCP 80):
//   - policy add → its ACL in the Northbound (p50, p99), and the transactions
//     and rows the 200 policies cost;
//   - pod add → its port in the Northbound, 100 pods selected by no policy,
//     before any policy exists and again with the 200 (the floor is the same
//     run without policies: it must not grow with policies that do not
//     select the pod);
//   - pod add → its port in a policy's port group, 50 pods selected by one.
//
// Run with
//
//	go test -run XXX -bench BenchmarkPolicyAdd -benchtime 1x ./internal/zone/
func BenchmarkPolicyAdd(b *testing.B) {
	for b.Loop() {
		benchPolicyAdd(b, benchExisting(), 200)
	}
}

func benchPolicyAdd(b *testing.B, existing, policies int) {
	// Every policy selects pods (5 per app; a policy that selects none in
	// the zone has no rows there).
	policies = min(policies, existing/5)
	cfg := config.Default()
	cfg.ClusterSubnets = []netconf.Subnet{{CIDR: netip.MustParsePrefix("10.240.0.0/12"), HostPrefix: 20}}
	c := clustertest.Start(b, env, cfg, "node-a")
	ctx := context.Background()
	ns := cmtest.Namespace(b, c.Admin, "npbench", map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/14/20"}}}
	if err := c.Admin.Create(ctx, u); err != nil {
		b.Fatal(err)
	}
	cmtest.WaitNetworkCreated(b, c.Admin, u)
	key := podnet.Key(ns, "net")
	network := netconf.UDNNetworkName(ns, "net")
	dial, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nb, err := ovsdb.ConnectNB(dial, ovsdb.ClientOptions{Endpoint: c.Zones["node-a"].NB,
		Tables: []libmodel.Model{&nbdb.LogicalSwitchPort{}, &nbdb.ACL{}, &nbdb.PortGroup{}, &nbdb.AddressSet{}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nb.Close)
	portUUID := func(name string) string {
		var ports []nbdb.LogicalSwitchPort
		_ = nb.WhereCache(func(p *nbdb.LogicalSwitchPort) bool { return p.Name == name }).List(ctx, &ports)
		if len(ports) == 1 {
			return ports[0].UUID
		}
		return ""
	}
	waitFor := func(what string, ok func() bool) time.Duration {
		start := time.Now()
		for !ok() {
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("%s: not after 2 minutes", what)
			}
			time.Sleep(500 * time.Microsecond)
		}
		return time.Since(start)
	}
	pod := func(name, app string) *corev1.Pod {
		p := newPod(ns, name, "node-a", nil)
		p.Labels = map[string]string{"app": app}
		return p
	}
	for i := 0; i < existing; i++ {
		createPodB(b, c.Admin, pod(fmt.Sprintf("old-%d", i), fmt.Sprintf("app-%d", i%policies)))
	}
	for i := 0; i < existing; i++ {
		name := podnet.PortName(key, ns, fmt.Sprintf("old-%d", i))
		waitFor("port "+name, func() bool { return portUUID(name) != "" })
	}
	addPods := func(prefix, app string, n int) []time.Duration {
		var lat []time.Duration
		for i := 0; i < n; i++ {
			p := pod(fmt.Sprintf("%s-%d", prefix, i), app)
			start := time.Now()
			createPodB(b, c.Admin, p)
			name := podnet.PortName(key, ns, p.Name)
			waitFor("port "+name, func() bool { return portUUID(name) != "" })
			lat = append(lat, time.Since(start))
		}
		return lat
	}
	floor := addPods("floor", "none", 100)

	r := c.Controller("node-a")
	txBefore := r.Transactions()
	var polLat []time.Duration
	for i := 0; i < policies; i++ {
		pol := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p-%d", i)},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{
						MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", (i+1)%policies)}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(80))}},
				}}}}
		owner := ns + "/" + pol.Name
		start := time.Now()
		if err := c.Admin.Create(ctx, pol); err != nil {
			b.Fatal(err)
		}
		waitFor("ACL of "+owner, func() bool {
			var acls []nbdb.ACL
			_ = nb.WhereCache(func(a *nbdb.ACL) bool { return a.ExternalIDs[netpol.NameKey] == owner }).List(ctx, &acls)
			return len(acls) == 1
		})
		polLat = append(polLat, time.Since(start))
	}
	// Every policy's address set filled: the rows are all there.
	waitFor("address sets", func() bool {
		var sets []nbdb.AddressSet
		_ = nb.WhereCache(func(s *nbdb.AddressSet) bool { return len(s.Addresses) == existing/policies }).List(ctx, &sets)
		return len(sets) == policies
	})
	tx := r.Transactions() - txBefore
	var acls []nbdb.ACL
	var pgs []nbdb.PortGroup
	var sets []nbdb.AddressSet
	// Policy rows only (a Service's ACLs carry a kind too).
	policyRow := func(ext map[string]string) bool { return strings.HasPrefix(ext[netpol.KindKey], netpol.KindPolicy) }
	_ = nb.WhereCache(func(a *nbdb.ACL) bool { return policyRow(a.ExternalIDs) }).List(ctx, &acls)
	_ = nb.WhereCache(func(p *nbdb.PortGroup) bool { return policyRow(p.ExternalIDs) }).List(ctx, &pgs)
	_ = nb.WhereCache(func(s *nbdb.AddressSet) bool { return policyRow(s.ExternalIDs) }).List(ctx, &sets)

	unselected := addPods("unselected", "none", 100)
	var selected []time.Duration
	pg := netpol.PortGroupName(network, ns, "p-0")
	for i := 0; i < 50; i++ {
		p := pod(fmt.Sprintf("selected-%d", i), "app-0")
		start := time.Now()
		createPodB(b, c.Admin, p)
		name := podnet.PortName(key, ns, p.Name)
		waitFor("port group member "+name, func() bool {
			u := portUUID(name)
			var groups []nbdb.PortGroup
			_ = nb.WhereCache(func(g *nbdb.PortGroup) bool { return g.Name == pg }).List(ctx, &groups)
			return u != "" && len(groups) == 1 && slices.Contains(groups[0].Ports, u)
		})
		selected = append(selected, time.Since(start))
	}
	ms := func(d time.Duration) float64 { return d.Seconds() * 1000 }
	b.ReportMetric(ms(pct(polLat, 50)), "ms-policy-p50")
	b.ReportMetric(ms(pct(polLat, 99)), "ms-policy-p99")
	b.ReportMetric(float64(tx)/float64(policies), "txn/policy")
	b.ReportMetric(float64(len(acls)+len(pgs)+len(sets)), "rows")
	b.ReportMetric(ms(pct(floor, 50)), "ms-pod-nopolicy-p50")
	b.ReportMetric(ms(pct(floor, 99)), "ms-pod-nopolicy-p99")
	b.ReportMetric(ms(pct(unselected, 50)), "ms-pod-unselected-p50")
	b.ReportMetric(ms(pct(unselected, 99)), "ms-pod-unselected-p99")
	b.ReportMetric(ms(pct(selected, 50)), "ms-pod-selected-p50")
	b.ReportMetric(ms(pct(selected, 99)), "ms-pod-selected-p99")
}
