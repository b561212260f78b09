package zone_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// liveAddresses checks that no address is held twice within one network
// among the pods that exist now (annotation keys are mapped to networks: the
// NADs of a CUDN share one).
func liveAddresses(t *testing.T, c client.Client, networkOf map[string]string) (int, error) {
	var pods corev1.PodList
	if err := c.List(context.Background(), &pods); err != nil {
		return 0, err
	}
	owner := map[string]string{}
	n := 0
	for _, p := range pods.Items {
		nets, err := podnet.Parse(p.Annotations)
		if err != nil {
			return 0, err
		}
		for key, a := range nets {
			network := networkOf[key]
			if network == "" {
				network = key
			}
			for _, ip := range a.IPs {
				id := network + "|" + ip
				if prev, dup := owner[id]; dup {
					return 0, fmt.Errorf("address %s of network %s held by both %s and %s/%s", ip, network, prev, p.Namespace, p.Name)
				}
				owner[id] = p.Namespace + "/" + p.Name
				n++
			}
		}
	}
	return n, nil
}

// TestPodChurn creates and deletes 1000 pods across a Layer3 UDN, a Layer2
// UDN, a secondary Layer2 network and the default network, restarting the
// zone controllers and the cluster-manager now and then; no address is ever
// held twice, and at the end no pod port is left. OVN_UDN_CHURN_SEED replays.
func TestPodChurn(t *testing.T) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("OVN_UDN_CHURN_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	c := clustertest.Start(t, env, config.Default(), "node-a", "node-b")
	ctx := context.Background()
	ns1, _ := udnIn(t, c.Admin, "cl3", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}})
	ns2, _ := udnIn(t, c.Admin, "cl2", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"203.203.0.0/22"}})
	ns3 := cmtest.Namespace(t, c.Admin, "csec", nil)
	if err := c.Admin.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1ObjectMeta(ns3, "sec"),
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.0.0/22"}}}); err != nil {
		t.Fatal(err)
	}
	ns4 := cmtest.Namespace(t, c.Admin, "cdef", nil)
	networkOf := map[string]string{podnet.Key(ns1, "net"): netconf.UDNNetworkName(ns1, "net"),
		podnet.Key(ns2, "net"): netconf.UDNNetworkName(ns2, "net"), podnet.Key(ns3, "sec"): netconf.UDNNetworkName(ns3, "sec")}
	type live struct{ ns, name string }
	var pods []live
	nodes := []string{"node-a", "node-b"}
	for op := 0; op < 1000; op++ {
		switch r := rng.Intn(100); {
		case r < 55 || len(pods) == 0:
			ns := []string{ns1, ns2, ns3, ns4}[rng.Intn(4)]
			var ann map[string]string
			if ns == ns3 {
				ann = map[string]string{netconf.NetworksAnnotation: "sec"}
			}
			name := fmt.Sprintf("p%d", op)
			createPod(t, c.Admin, newPod(ns, name, nodes[rng.Intn(2)], ann))
			pods = append(pods, live{ns, name})
		case r < 97:
			i := rng.Intn(len(pods))
			p := pods[i]
			if err := c.Admin.Delete(ctx, newPod(p.ns, p.name, "", nil), client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			pods = append(pods[:i], pods[i+1:]...)
		case r < 99:
			c.StartZoneController(nodes[rng.Intn(2)])
		default:
			c.RestartClusterManager()
		}
		if op%25 == 0 {
			if _, err := liveAddresses(t, c.Admin, networkOf); err != nil {
				t.Fatalf("op %d: %v", op, err)
			}
		}
	}
	// Everything live gets attached, still without duplicates.
	cmtest.Eventually(t, 2*time.Minute, func() error {
		var list corev1.PodList
		if err := c.Admin.List(ctx, &list); err != nil {
			return err
		}
		for _, p := range list.Items {
			nets, _ := podnet.Parse(p.Annotations)
			want := 1
			if p.Namespace != ns4 {
				want = 2
			}
			if len(nets) != want {
				return fmt.Errorf("pod %s/%s has %d attachments, want %d", p.Namespace, p.Name, len(nets), want)
			}
		}
		_, err := liveAddresses(t, c.Admin, networkOf)
		return err
	})
	n, _ := liveAddresses(t, c.Admin, networkOf)
	t.Logf("%d live pods holding %d addresses", len(pods), n)
	// Then all go, and so do their ports.
	for _, p := range pods {
		if err := c.Admin.Delete(ctx, newPod(p.ns, p.name, "", nil), client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		z := c.Zones[node]
		cmtest.Eventually(t, 2*time.Minute, func() error {
			out, err := z.NBCtl("--bare", "--columns=name", "find", "Logical_Switch_Port", "external_ids:"+zone.PodExternalID+"!=\"\"")
			if err != nil {
				return err
			}
			if out != "" {
				return fmt.Errorf("zone %s still has pod ports: %.200s", node, out)
			}
			return nil
		})
	}
}

func metav1ObjectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
