package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestSeveralPrimaryNetworks is `make demo`'s section on examples/
// multi-primary.yaml (OKEP-5252): a namespace with a Layer3 and a Layer2
// primary network, each pod placed on the one it asked for; real packets
// between the networks on one node and across nodes, a NetworkPolicy
// keeping everyone from the locked pods on either network, another tenant
// isolated from both, and the namespace's Service answered by pods of both
// networks from a pod of each. explain follows a Layer2 pod's packet to a
// Layer3 pod on another node: it leaves its node through the Layer3
// network's transit switch (that network's overlay) after the link, never
// through the Layer2 network's. A third primary network overlapping one of
// them is refused with its reason.
func TestSeveralPrimaryNetworks(t *testing.T) {
	ctx := context.Background()
	refs := []string{"l3-blue/a"}
	for ref := range demo.MultiPrimaryPlacements {
		refs = append(refs, ref)
	}
	serve(t, refs...)
	var out bytes.Buffer
	if err := demo.MultiPrimaryDemo(ctx, dir, binary, admin, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())

	// b (rows, node2) to d (trees, node3): through rows' gateway router and
	// the link on node2, out by trees' transit switch, into node3's zone.
	trees, rows := netconf.UDNNetworkName(demo.MultiPrimaryNamespace, "trees"), netconf.UDNNetworkName(demo.MultiPrimaryNamespace, "rows")
	got := explainOut(t, "--from", "orchard/b", "--to", "orchard/d:8080")
	for _, want := range []string{
		"zone of node2, entering " + rows + "_ovn_layer2_switch",
		"GR_" + rows + "_node2 ", "rtotr-GR_" + rows + "_node2 -> plink_" + rows + "_to_" + trees,
		"the link between primary networks",
		trees + "_ovn_cluster_router  plink_" + trees + "_to_" + rows,
		"zone of node3, entering " + trees + "_transit_switch",
		"DELIVERED to " + trees + "_orchard_d",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain orchard/b -> orchard/d does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "zone of node3, entering "+rows) {
		t.Errorf("the packet crossed rows' overlay to node3:\n%s", got)
	}

	overlap := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: demo.MultiPrimaryNamespace, Name: "overlap"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.137.0.128/25"}}}
	if err := admin.Create(ctx, overlap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), overlap) })
	cmtest.Eventually(t, time.Minute, func() error {
		cond, err := cmtest.NetworkCondition(ctx, admin, overlap)
		if err != nil {
			return err
		}
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1.ReasonPrimarySubnetOverlap || !strings.Contains(cond.Message, "10.137.0.0/24") {
			return fmt.Errorf("condition %+v, want False %s naming rows' subnet", cond, v1.ReasonPrimarySubnetOverlap)
		}
		return nil
	})
}
