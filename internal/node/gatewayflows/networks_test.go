package gatewayflows

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// TestNetworksAdmitted: the node's gateway routers are those of the
// networks the zones render: a NAD the zones refuse (here a namespace's
// own network asking for egress, which is a ClusterUserDefinedNetwork's
// alone) has none, and neither has a network without a gateway.
func TestNetworksAdmitted(t *testing.T) {
	yes := true
	nad := func(ns, name, conf string, owner string, keys string) *nadv1.NetworkAttachmentDefinition {
		n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{netconf.NetworkIDAnnotation: "5", netconf.TunnelKeysAnnotation: keys}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf}}
		if owner != "" {
			kind, ownerName := netconf.KindUDN, name
			if owner == netconf.KindCUDN {
				kind, ownerName = netconf.KindCUDN, name[len(netconf.CUDNPrefix):]
			}
			n.Labels = map[string]string{netconf.ManagedByLabel: ""}
			n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "k8s.ovn.org/v1", Kind: kind, Name: ownerName, UID: "u", Controller: &yes}}
		}
		return n
	}
	conf := func(network, nad, extra string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network + `","topology":"layer2","subnets":"10.163.0.0/24","netAttachDefName":"` + nad + `",` + extra + `}`
	}
	c := fake.NewClientBuilder().WithScheme(kubeobj.NewScheme(nadv1.AddToScheme)).WithObjects(
		nad("a", "cluster.udn.out", conf("cluster.udn.out", "a/cluster.udn.out", `"role":"secondary","egress":"gateway"`), netconf.KindCUDN, "[16711800]"),
		nad("a", "own", conf("a.own", "a/own", `"role":"secondary","egress":"gateway"`), netconf.KindUDN, "[16711801]"),
		nad("a", "hand", conf("hand", "a/hand", `"role":"secondary","egress":"gateway"`), "", "[16711802]"),
		nad("b", "tenant", conf("b.tenant", "b/tenant", `"role":"primary"`), netconf.KindUDN, "[16711803]"),
		nad("b", "eastwest", conf("b.eastwest", "b/eastwest", `"role":"secondary"`), netconf.KindUDN, "[]"),
	).Build()
	r := &GatewayReconciler{Client: c, Opts: node.Options{Cluster: config.Default()}}
	nets, err := r.networks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range nets {
		got = append(got, n.Name)
	}
	slices.Sort(got)
	if d := cmp.Diff([]string{"b.tenant", "cluster.udn.out", "default"}, got); d != "" {
		t.Errorf("networks with a gateway router here (-want +got):\n%s", d)
	}
}
