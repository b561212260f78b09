package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// BenchmarkEndpointToLoadBalancer measures, with the real cluster-manager
// (EndpointSlice mirror) and a zone controller on a real API server and
// ovsdb-server, the time from a Service's default EndpointSlice marking a
// pod of a primary Layer3 UDN ready (or not ready) to the pod's UDN address
// being in (or out of) the zone's OVN load balancer: 200 changes, p50/p99.
// The default slice is written here as Kubernetes' EndpointSlice controller
// would (its own latency is Kubernetes'). Run with
//
//	go test -run XXX -bench BenchmarkEndpointToLoadBalancer -benchtime 1x ./internal/zone/
func BenchmarkEndpointToLoadBalancer(b *testing.B) {
	for b.Loop() {
		benchEndpointLatency(b, 200)
	}
}

func benchEndpointLatency(b *testing.B, changes int) {
	ctx := context.Background()
	c := clustertest.Start(b, env, config.Default(), "node-a")
	ns := cmtest.Namespace(b, c.Admin, "svc", map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}}}
	if err := c.Admin.Create(ctx, u); err != nil {
		b.Fatal(err)
	}
	cmtest.WaitNetworkCreated(b, c.Admin, u)
	pod := newPod(ns, "p", "node-a", nil)
	pod.Labels = map[string]string{"app": "web"}
	if err := c.Admin.Create(ctx, pod); err != nil {
		b.Fatal(err)
	}
	var udnIP, defIP string
	cmtest.Eventually(b, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		nets, err := podnet.Parse(pod.Annotations)
		if err != nil {
			return err
		}
		for key, a := range nets {
			p, _ := a.Prefixes()
			if len(p) == 0 {
				continue
			}
			if key == podnet.DefaultKey {
				defIP = p[0].Addr().String()
			} else if a.Role == podnet.RolePrimary {
				udnIP = p[0].Addr().String()
			}
		}
		if udnIP == "" || defIP == "" {
			return fmt.Errorf("pod not annotated yet: %v", nets)
		}
		return nil
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if err := c.Admin.Create(ctx, svc); err != nil {
		b.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: mirror.DefaultManager}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{defIP}, NodeName: ptr.To("node-a"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name, UID: pod.UID}}}}
	if err := c.Admin.Create(ctx, slice); err != nil {
		b.Fatal(err)
	}
	nb := c.Controller("node-a").NB
	backend := netip.MustParseAddr(udnIP).String() + ":8080"
	inLB := func() (bool, bool) { // (load balancer exists, backend in it)
		var lbs []nbdb.LoadBalancer
		if err := nb.WhereCache(func(lb *nbdb.LoadBalancer) bool {
			return lb.ExternalIDs["k8s.ovn.org/service"] == ns+"/web"
		}).List(ctx, &lbs); err != nil || len(lbs) == 0 {
			return false, false
		}
		for _, v := range lbs[0].Vips {
			if strings.Contains(v, backend) {
				return true, true
			}
		}
		return true, false
	}
	cmtest.Eventually(b, time.Minute, func() error {
		if ok, _ := inLB(); !ok {
			return fmt.Errorf("no load balancer for %s/web yet", ns)
		}
		return nil
	})
	var lat []time.Duration
	for i := 0; i < changes; i++ {
		ready := i%2 == 0
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(slice), slice); err != nil {
			b.Fatal(err)
		}
		slice.Endpoints[0].Conditions.Ready = ptr.To(ready)
		start := time.Now()
		if err := c.Admin.Update(ctx, slice); err != nil {
			b.Fatal(err)
		}
		deadline := start.Add(30 * time.Second)
		for {
			if _, in := inLB(); in == ready {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("change %d: backend %s in the load balancer is still %v after 30 s", i, backend, !ready)
			}
			time.Sleep(500 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "ms-max")
}
