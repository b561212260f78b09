package udn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
)

// TestShapesRenderTheSameNAD: a network in ovn-kubernetes' shape and the
// same network in the seed's flat shape give the same
// NetworkAttachmentDefinition, pair by pair, for UDNs and CUDNs of every
// topology and option the block shape has.
func TestShapesRenderTheSameNAD(t *testing.T) {
	subnets := func(s ...v1.NetworkSubnet) []v1.NetworkSubnet { return s }
	cidrs := func(s ...v1.CIDR) []v1.CIDR { return s }
	udnPairs := []struct {
		name       string
		flat, ovnk v1.UserDefinedNetworkSpec
	}{
		{"layer3 primary with host prefix",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: subnets("10.20.0.0/16/24")},
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Layer3: &v1.Layer3Config{Role: v1.Primary, Subnets: []v1.Layer3Subnet{{CIDR: "10.20.0.0/16", HostSubnet: 24}}}}},
		{"layer3 dual stack, mtu and join subnets",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, MTU: 1300, Subnets: subnets("10.20.0.0/16/24", "fd00:20::/48/64"), JoinSubnets: cidrs("100.70.0.0/16", "fd9b::/64")},
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Layer3: &v1.Layer3Config{Role: v1.Primary, MTU: 1300, Subnets: []v1.Layer3Subnet{{CIDR: "10.20.0.0/16", HostSubnet: 24}, {CIDR: "fd00:20::/48", HostSubnet: 64}}, JoinSubnets: cidrs("100.70.0.0/16", "fd9b::/64")}}},
		{"layer3 secondary without host prefix",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Secondary, Subnets: subnets("10.21.0.0/16")},
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Layer3: &v1.Layer3Config{Role: v1.Secondary, Subnets: []v1.Layer3Subnet{{CIDR: "10.21.0.0/16"}}}}},
		{"layer2 primary persistent, reserved subnets as exclusions",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: subnets("192.168.1.0/24"), ExcludeSubnets: []v1.ExcludeCIDR{"192.168.1.0/28"}, IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}},
			v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Layer2: &v1.Layer2Config{Role: v1.Primary, Subnets: cidrs("192.168.1.0/24"), ReservedSubnets: cidrs("192.168.1.0/28"), IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}}}},
		{"layer2 secondary without ipam",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, IPAM: &v1.IPAMSpec{Mode: v1.IPAMDisabled}},
			v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Layer2: &v1.Layer2Config{Role: v1.Secondary, IPAM: &v1.IPAMSpec{Mode: v1.IPAMDisabled}}}},
	}
	for _, tc := range udnPairs {
		t.Run("udn "+tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Namespace: "ns", Name: "net", UID: "uid-1"}
			want := nadOf(t, ForUDN(&v1.UserDefinedNetwork{ObjectMeta: meta, Spec: tc.flat}))
			got := nadOf(t, ForUDN(&v1.UserDefinedNetwork{ObjectMeta: meta, Spec: tc.ovnk}))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("NAD (-flat +ovn-kubernetes' shape):\n%s", d)
			}
		})
	}
	cudnPairs := []struct {
		name string
		flat v1.UserDefinedNetworkSpec
		ovnk v1.NetworkSpec
	}{
		{"layer3",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: subnets("10.40.0.0/16/24")},
			v1.NetworkSpec{Topology: v1.Layer3, Layer3: &v1.Layer3Config{Role: v1.Primary, Subnets: []v1.Layer3Subnet{{CIDR: "10.40.0.0/16", HostSubnet: 24}}}}},
		{"layer2 ipv6",
			v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: subnets("2001:db8::/64")},
			v1.NetworkSpec{Topology: v1.Layer2, Layer2: &v1.Layer2Config{Role: v1.Primary, Subnets: cidrs("2001:db8::/64")}}},
		{"localnet with vlan, exclusions and persistent ipam",
			v1.UserDefinedNetworkSpec{Topology: v1.Localnet, Role: v1.Secondary, MTU: 9000, Subnets: subnets("192.168.100.0/24", "2001:dbb::/64"), ExcludeSubnets: []v1.ExcludeCIDR{"192.168.100.1/32", "2001:dbb::1/128"},
				IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}, Localnet: &v1.LocalnetSpec{PhysicalNetworkName: "physnet1", VLANID: 3}},
			v1.NetworkSpec{Topology: v1.Localnet, Localnet: &v1.LocalnetConfig{Role: "Secondary", PhysicalNetworkName: "physnet1", MTU: 9000, Subnets: cidrs("192.168.100.0/24", "2001:dbb::/64"),
				ExcludeSubnets: []v1.ExcludeCIDR{"192.168.100.1/32", "2001:dbb::1/128"}, IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}, VLAN: &v1.VLANConfig{Mode: v1.VLANModeAccess, Access: &v1.AccessVLANConfig{ID: 3}}}}},
		{"localnet without ipam",
			v1.UserDefinedNetworkSpec{Topology: v1.Localnet, Role: v1.Secondary, IPAM: &v1.IPAMSpec{Mode: v1.IPAMDisabled}, Localnet: &v1.LocalnetSpec{PhysicalNetworkName: "test"}},
			v1.NetworkSpec{Topology: v1.Localnet, Localnet: &v1.LocalnetConfig{Role: "Secondary", PhysicalNetworkName: "test", IPAM: &v1.IPAMSpec{Mode: v1.IPAMDisabled}}}},
	}
	for _, tc := range cudnPairs {
		t.Run("cudn "+tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Name: "net", UID: "uid-2"}
			flat := &v1.ClusterUserDefinedNetwork{ObjectMeta: meta, Spec: v1.ClusterUserDefinedNetworkSpec{Template: ptr.To(tc.flat)}}
			ovnk := &v1.ClusterUserDefinedNetwork{ObjectMeta: meta, Spec: v1.ClusterUserDefinedNetworkSpec{Network: ptr.To(tc.ovnk)}}
			want := nadOf(t, ForCUDN(flat, "ns", "net"))
			got := nadOf(t, ForCUDN(ovnk, "ns", "net"))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("NAD (-template +network):\n%s", d)
			}
			if d := cmp.Diff(tc.flat, ovnk.Spec.FlatTemplate()); d != "" {
				t.Errorf("FlatTemplate (-want +got):\n%s", d)
			}
		})
	}
}

// nadOf renders a request with a fixed allocation; the NAD's config is
// compared as text, so the two shapes must agree byte for byte.
func nadOf(t *testing.T, req Request) any {
	t.Helper()
	req.NetworkID, req.TunnelKeys = 9, []int{16715777}
	nad, err := NAD(req, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	return nad
}
