package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// TestServiceLifecycle: a Service of a primary UDN namespace gets a load
// balancer in its network's group; a resync writes nothing; when the UDN is
// deleted under the Service (the namespace stays labelled), the load balancer
// goes with the network's rows.
func TestServiceLifecycle(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	ctx := context.Background()
	network, udn := layer3UDN(t, c.Admin, "10.128.0.0/16/24")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: udn.Namespace, Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if err := c.Admin.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	z := c.Zones["node-a"]
	lb := func() string {
		return strings.TrimSpace(z.MustNBCtl("--bare", "--columns=name", "find", "Load_Balancer", "external_ids:k8s.ovn.org/service="+udn.Namespace+"/web"))
	}
	group := network + "_clusterLBGroup"
	cmtest.Eventually(t, time.Minute, func() error {
		if lb() != network+"_Service_"+udn.Namespace+"/web_TCP_cluster" {
			return fmt.Errorf("load balancer %q", lb())
		}
		members := z.MustNBCtl("--bare", "--columns=load_balancer", "find", "Load_Balancer_Group", "name="+group)
		if len(strings.Fields(members)) != 1 {
			return fmt.Errorf("group %s members %q, want the service's", group, members)
		}
		return nil
	})
	resyncWritesNothing(t, c.Controller("node-a"))

	if err := c.Admin.Delete(ctx, udn); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if got := lb(); got != "" {
			return fmt.Errorf("load balancer %q still there after its network was deleted", got)
		}
		if got := z.MustNBCtl("--bare", "--columns=name", "find", "Load_Balancer_Group", "name="+group); strings.TrimSpace(got) != "" {
			return fmt.Errorf("group %q still there", got)
		}
		return nil
	})
}
