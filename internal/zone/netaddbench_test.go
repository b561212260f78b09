package zone_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// BenchmarkZoneNetworkAdd: what one more network costs a zone that already
// renders N networks in a cluster of M nodes (a real API server and
// cluster-manager, node-a's zone controller running): the UDN is created,
// cluster-manager gives every Node its slice (M Node updates, which the
// zone watches), and the zone renders it. It reports how many reconciles
// the zone controller ran from the creation until its queue stayed empty
// for half a second, and how long that took.
//
//	go test -run XXX -bench BenchmarkZoneNetworkAdd -benchtime 1x ./internal/zone/
//	OVN_UDN_BENCH_SIZE=200x20 (the default)
func BenchmarkZoneNetworkAdd(b *testing.B) {
	for _, size := range benchSizes(b, benchSize{200, 20}) {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchNetworkAdd(b, size.networks, size.nodes)
			}
		})
	}
}

func benchNetworkAdd(b *testing.B, networks, nodes int) {
	ctx := context.Background()
	c := clustertest.Start(b, env, config.Default(), "node-a")
	c.StopZoneController("node-a")
	for i := 1; i < nodes; i++ {
		name := fmt.Sprintf("bench-node-%d", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: clustertest.NodeInfo(name, i).Annotations()}}
		if err := c.Admin.Create(ctx, n); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Admin.Delete(context.Background(), n) })
	}
	udn := func() *v1.UserDefinedNetwork {
		ns := cmtest.Namespace(b, c.Admin, "netadd", map[string]string{v1.PrimaryNetworkLabel: ""})
		u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}}}
		if err := c.Admin.Create(ctx, u); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Admin.Delete(context.Background(), u) })
		return u
	}
	allocated := func(want int) {
		cmtest.Eventually(b, 10*time.Minute, func() error {
			var list corev1.NodeList
			if err := c.Admin.List(ctx, &list); err != nil {
				return err
			}
			for _, n := range list.Items {
				subnets, err := nodeinfo.ParseSubnets(n.Annotations[nodeinfo.NodeSubnetsAnnotation])
				if err != nil {
					return err
				}
				if len(subnets) < want {
					return fmt.Errorf("node %s has %d slices, want %d", n.Name, len(subnets), want)
				}
			}
			return nil
		})
	}
	for range networks {
		udn()
	}
	allocated(networks + 1)
	r := c.StartZoneController("node-a")
	settled(b, r, "zone-node-a")

	base := reconcileTotal(b, "zone-node-a")
	start := time.Now()
	udn()
	allocated(networks + 2)
	var quiet time.Time
	last := -1.0
	if err := proc.WaitFor(5*time.Minute, 20*time.Millisecond, func() (bool, error) {
		done := reconcileTotal(b, "zone-node-a") - base
		if depth := metricValue(b, "workqueue_depth", "name", "zone-node-a"); depth > 0 || done != last {
			last, quiet = done, time.Now()
			return false, nil
		}
		return time.Since(quiet) >= 500*time.Millisecond, nil
	}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(last, "reconciles")
	b.ReportMetric(quiet.Sub(start).Seconds(), "s/settled")
}
