package render_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udn"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// nadConfigInput holds, as a user writes them, the networks whose NAD configs
// are pinned by testdata/nad-configs.golden.
const nadConfigInput = `
apiVersion: v1
kind: Namespace
metadata: {name: l3, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: v1
kind: Namespace
metadata: {name: db-a, labels: {tier: db, k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: v1
kind: Namespace
metadata: {name: db-b, labels: {tier: db, k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: v1
kind: Namespace
metadata: {name: phys}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: ds, namespace: l3}
spec: {topology: Layer3, role: Primary, mtu: 9000, subnets: [10.130.0.0/16/24, "fd00:130::/60/64"]}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata: {name: db-network}
spec:
  vrf: db-vrf
  namespaceSelector: {matchLabels: {tier: db}}
  template:
    topology: Layer2
    role: Primary
    mtu: 1500
    subnets: [10.0.0.0/24]
    excludeSubnets: [10.0.0.100/26]
    ipam: {lifecycle: Persistent}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: vlan, namespace: phys}
spec:
  topology: Localnet
  role: Secondary
  subnets: [192.168.60.0/24]
  localnet: {physicalNetworkName: physnet2, vlanID: 200}
`

// nadConfigNetworks are the same networks as typed objects, as the
// cluster-manager's controllers get them from the API server.
func nadConfigNetworks() ([]*v1.UserDefinedNetwork, *v1.ClusterUserDefinedNetwork) {
	udns := []*v1.UserDefinedNetwork{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "l3", Name: "ds"}, Spec: v1.UserDefinedNetworkSpec{
			Topology: v1.Layer3, Role: v1.Primary, MTU: 9000, Subnets: []v1.NetworkSubnet{"10.130.0.0/16/24", "fd00:130::/60/64"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "phys", Name: "vlan"}, Spec: v1.UserDefinedNetworkSpec{
			Topology: v1.Localnet, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.60.0/24"},
			Localnet: &v1.LocalnetSpec{PhysicalNetworkName: "physnet2", VLANID: 200}}},
	}
	cudn := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "db-network"}, Spec: v1.ClusterUserDefinedNetworkSpec{
		VRF: "db-vrf", NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}},
		Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, MTU: 1500,
			Subnets: []v1.NetworkSubnet{"10.0.0.0/24"}, ExcludeSubnets: []v1.ExcludeCIDR{"10.0.0.100/26"},
			IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}}}}
	return udns, cudn
}

// TestNADConfigGolden pins the spec.config of a dual-stack Layer3 UDN with an
// MTU, a Layer2 CUDN with persistent IPs, a VRF and an exclusion with host
// bits, and a Localnet secondary UDN with a VLAN; and checks that render,
// reading them from YAML, writes byte for byte the config the controllers
// render from the typed objects the API server hands them.
func TestNADConfigGolden(t *testing.T) {
	res := run(t, docsFrom(t, nadConfigInput), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	rendered := map[string]string{}
	var lines []string
	for _, n := range res.NetworkAttachmentDefinitions {
		key := n.Namespace + "/" + n.Name
		rendered[key] = string(n.Config)
		lines = append(lines, key+" "+string(n.Config))
	}
	golden(t, "nad-configs.golden", strings.Join(lines, "\n")+"\n")

	udns, cudn := nadConfigNetworks()
	var reqs []udn.Request
	for _, u := range udns {
		reqs = append(reqs, udn.ForUDN(u))
	}
	for _, ns := range []string{"db-a", "db-b"} {
		reqs = append(reqs, udn.ForCUDN(cudn, ns, udn.VRFName(cudn, 0)))
	}
	for _, req := range reqs {
		key := req.Namespace + "/" + req.Name
		t.Run(key, func(t *testing.T) {
			nad, err := udn.NAD(req, config.Default())
			if err != nil {
				t.Fatal(err)
			}
			got, ok := rendered[key]
			if !ok {
				t.Fatalf("render made no NAD %s; it made %v", key, keys(rendered))
			}
			if d := cmp.Diff(nad.Spec.Config, got); d != "" {
				t.Errorf("config (-controllers +render):\n%s", d)
			}
		})
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
