package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestSecondaryNetworkEgress: secondary Layer3 and Layer2 networks with
// egress Gateway (ClusterUserDefinedNetworks: an administrator's) carry the outside traffic of pods that ask for them as
// their default route (Multus' default-route): the pod's route to the
// outside server goes through the secondary network's gateway, the server
// sees the node's address, and the cluster's services stay on the default
// network's interface. A pod of such a network that does not ask keeps the
// default network's default route; a secondary network without egress
// refuses default-route, and a hand-made NAD asking for egress is refused
// (not allocated, an EgressNotAllowed Event, its pods not attached).
func TestSecondaryNetworkEgress(t *testing.T) {
	ctx := context.Background()
	const ns = "sec-egress"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// Egress is an administrator's: the networks with it are
	// ClusterUserDefinedNetworks (cluster-wide, so deleted at the end).
	nsOnly := metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	for _, u := range []client.Object{
		&v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: ns + "-l3"}, Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: nsOnly,
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.160.0.0/16/24"}, Egress: v1.EgressGateway}}},
		&v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: ns + "-l2"}, Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: nsOnly,
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.161.0.0/24"}, Egress: v1.EgressGateway}}},
		&v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "eastwest"}, Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Secondary,
			Subnets: []v1.NetworkSubnet{"10.162.0.0/16/24"}}},
	} {
		if err := admin.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, ok := u.(*v1.ClusterUserDefinedNetwork); ok {
			t.Cleanup(func() {
				_ = admin.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				_ = admin.Delete(context.Background(), u)
			})
		}
		cmtest.WaitNetworkCreated(t, admin, u)
	}
	network := map[string]string{"l3": netconf.CUDNNetworkName(ns + "-l3"), "l2": netconf.CUDNNetworkName(ns + "-l2")}
	defaultRoute := func(network, gw string) map[string]string {
		return map[string]string{netconf.NetworksAnnotation: fmt.Sprintf(`[{"name":%q,"default-route":[%q]}]`, network, gw)}
	}
	type egressPod struct {
		name, node string
		via        string // the route's next hop starts so; "" for the default network's eth0
	}
	pods := []egressPod{{"l3", "node1", "10.160."}, {"l2", "node2", "10.161.0.1"}, {"keep", "node1", ""}}
	for _, p := range pods {
		ann := map[string]string{netconf.NetworksAnnotation: network["l3"]}
		if p.via != "" {
			ann = defaultRoute(network[p.name], "10.0.0.1") // the address is not used: the family is
		}
		if err := admin.Create(ctx, podOn(ns, p.name, p.node, ann)); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, p := range pods {
		names = append(names, ns+"/"+p.name)
	}
	if err := demo.WaitPodsReady(ctx, dir, admin, names, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	for _, p := range pods {
		t.Run(p.name, func(t *testing.T) {
			netns, err := sandbox.PodNetns(ctx, dir, admin, ns+"/"+p.name)
			if err != nil {
				t.Fatal(err)
			}
			route, err := inNetns(ctx, netns, "ip", "-4", "route", "get", sandbox.ExternalServerIP)
			if err != nil {
				t.Fatal(route, err)
			}
			switch {
			case p.via == "" && !strings.Contains(route, "dev eth0"):
				t.Errorf("%s's route to the outside: %q, want the default network's eth0", p.name, route)
			case p.via != "" && (strings.Contains(route, "dev eth0") || !strings.Contains(route, "via "+p.via)):
				t.Errorf("%s's route to the outside: %q, want via its secondary network's gateway %s…", p.name, route, p.via)
			}
			if svc, err := inNetns(ctx, netns, "ip", "-4", "route", "get", "10.96.0.10"); err != nil || !strings.Contains(svc, "dev eth0") {
				t.Errorf("%s's route to the cluster DNS: %q (%v), want the default network's eth0", p.name, svc, err)
			}
			nodeIP := strings.Split(sandbox.NodeIP(map[string]int{"node1": 1, "node2": 2}[p.node]), "/")[0]
			// Its own node's address goes by the default network: the
			// secondary network's gateway router holds that address, and
			// would answer a ping but not TCP. The node agent's egress IP
			// health port listens on every address of the node.
			if r, err := inNetns(ctx, netns, "ip", "-4", "route", "get", nodeIP); err != nil || !strings.Contains(r, "dev eth0") {
				t.Errorf("%s's route to its node %s: %q (%v), want the default network's eth0", p.name, nodeIP, r, err)
			}
			eventually(t, func() error {
				if out, err := inNetns(ctx, netns, "nc", "-z", "-w", "3", nodeIP, strconv.Itoa(egressip.DefaultHealthPort)); err != nil {
					return fmt.Errorf("%s → its node %s:%d over TCP: %v: %s", p.name, nodeIP, egressip.DefaultHealthPort, err, out)
				}
				return nil
			})
			eventually(t, func() error {
				got, err := probeOut(ctx, ns+"/"+p.name, 0)
				if err != nil || got != nodeIP {
					return fmt.Errorf("%s → %s:%d: outside saw %q (%v), want %s", p.name, sandbox.ExternalServerIP, sandbox.ExternalPort, got, err, nodeIP)
				}
				return nil
			})
		})
	}

	t.Run("a hand-made NAD asking for egress is refused", func(t *testing.T) {
		nad := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneaky"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"sneaky",
				"topology":"layer2","role":"secondary","subnets":"10.164.0.0/24","egress":"gateway","netAttachDefName":"` + ns + `/sneaky"}`}}
		if err := admin.Create(ctx, nad); err != nil {
			t.Fatal(err)
		}
		cmtest.WaitEvent(t, admin, nad, "NetworkAttachmentDefinition", v1.ReasonEgressNotAllowed)
		pod := podOn(ns, "sneaky", "node1", defaultRoute("sneaky", "10.0.0.1"))
		if err := admin.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		refusedPod(t, pod, "egress is allowed only on a ClusterUserDefinedNetwork")
		if err := admin.Get(ctx, client.ObjectKeyFromObject(nad), nad); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, _ := netconf.ParseAllocation(nad.Annotations); ok {
			t.Errorf("the refused NAD was allocated: %v", nad.Annotations)
		}
	})

	t.Run("default-route on a network without egress is refused", func(t *testing.T) {
		pod := podOn(ns, "eastwest", "node1", defaultRoute("eastwest", "10.0.0.1"))
		if err := admin.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		refusedPod(t, pod, "no egress gateway")
	})
}
