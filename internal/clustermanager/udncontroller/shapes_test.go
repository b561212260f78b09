package udncontroller_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// TestOVNKubernetesShape: on a real API server, a UDN and a CUDN written in
// ovn-kubernetes' shape get the same status and the same NAD config as
// their flat twins (up to the namespace's name, which the network's name
// and the NAD's hold).
func TestOVNKubernetesShape(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()

	flatNS := namespace(t, c, "flat", primaryLabel)
	ovnkNS := namespace(t, c, "ovnk", primaryLabel)
	flat := udnObj(flatNS, "net", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, MTU: 1300,
		Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24", "2001:db8::/60/64"}})
	ovnk := udnObj(ovnkNS, "net", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Layer3: &v1.Layer3Config{Role: v1.Primary, MTU: 1300,
		Subnets: []v1.Layer3Subnet{{CIDR: "10.128.0.0/16", HostSubnet: 24}, {CIDR: "2001:db8::/60", HostSubnet: 64}}}})
	for _, u := range []*v1.UserDefinedNetwork{flat, ovnk} {
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		cleanupDelete(t, c, u)
	}
	a := waitCondition(t, c, flat, metav1.ConditionTrue, v1.ReasonNADCreated)
	b := waitCondition(t, c, ovnk, metav1.ConditionTrue, v1.ReasonNADCreated)
	if strings.ReplaceAll(a.Message, flatNS, "NS") != strings.ReplaceAll(b.Message, ovnkNS, "NS") {
		t.Errorf("condition messages differ: flat %q, ovn-kubernetes' shape %q", a.Message, b.Message)
	}
	fc := strings.ReplaceAll(getNAD(t, c, flatNS, "net").Spec.Config, flatNS, "NS")
	oc := strings.ReplaceAll(getNAD(t, c, ovnkNS, "net").Spec.Config, ovnkNS, "NS")
	if d := cmp.Diff(fc, oc); d != "" {
		t.Errorf("NAD config (-flat +ovn-kubernetes' shape):\n%s", d)
	}

	sel := map[string]string{"tenant": cmtest.UniqueName("ovnk")}
	labels := map[string]string{v1.PrimaryNetworkLabel: ""}
	for k, v := range sel {
		labels[k] = v
	}
	member := namespace(t, c, "ovnk-cudn", labels)
	cu := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: sel["tenant"]}, Spec: v1.ClusterUserDefinedNetworkSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: sel},
		Network: ptr.To(v1.NetworkSpec{Topology: v1.Layer2, Layer2: &v1.Layer2Config{Role: v1.Primary,
			Subnets: []v1.CIDR{"10.61.0.0/24"}, ReservedSubnets: []v1.CIDR{"10.61.0.0/28"}}}),
	}}
	if err := c.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, cu)
	waitCondition(t, c, cu, metav1.ConditionTrue, v1.ReasonNADCreated)
	if d := cmp.Diff([]string{member}, cu.Status.ActiveNamespaces); d != "" {
		t.Errorf("activeNamespaces (-want +got):\n%s", d)
	}
	conf := getNAD(t, c, member, "cluster.udn."+cu.Name).Spec.Config
	for _, want := range []string{`"topology":"layer2"`, `"subnets":"10.61.0.0/24"`, `"excludeSubnets":"10.61.0.0/28"`, `"role":"primary"`} {
		if !strings.Contains(conf, want) {
			t.Errorf("NAD config %s lacks %s", conf, want)
		}
	}
}
