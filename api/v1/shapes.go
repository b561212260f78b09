package v1

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// ovn-kubernetes released UserDefinedNetwork and ClusterUserDefinedNetwork
// with the network's settings in a block per topology (spec.layer3,
// spec.layer2; a CUDN's spec.network with localnet too) instead of the
// seed's flat fields. ovn-udn accepts both shapes, never mixed, and maps the
// block shape to the flat one in one place (Flat, FlatTemplate): every
// component reads the flat shape, so equivalent manifests give the same
// NetworkAttachmentDefinition, IDs and OVN rows.

// Layer3Config is a Layer3 network in ovn-kubernetes' shape.
//
// +kubebuilder:validation:XValidation:rule="!has(self.joinSubnets) || has(self.role) && self.role == 'Primary'",message="JoinSubnets is only supported for Primary network"
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.mtu) || !self.subnets.exists(i, isCIDR(i.cidr) && cidr(i.cidr).ip().family() == 6) || self.mtu >= 1280",message="MTU should be greater than or equal to 1280 when IPv6 subnet is used"
type Layer3Config struct {
	// Role is how pods use the network: Primary or Secondary.
	// +required
	Role NetworkRole `json:"role"`

	// MTU of the network; when omitted the cluster-manager's default (1400).
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// Subnets pods get addresses from, each split into per-node slices of
	// hostSubnet bits: one, or two of different IP families.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0].cidr) || !isCIDR(self[1].cidr) || cidr(self[0].cidr).ip().family() != cidr(self[1].cidr).ip().family()",message="When 2 CIDRs are set, they must be from different IP families"
	// +required
	Subnets []Layer3Subnet `json:"subnets"`

	// JoinSubnets are used inside the network's OVN topology between its
	// routers (Primary networks only).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",message="When 2 CIDRs are set, they must be from different IP families"
	// +optional
	JoinSubnets []CIDR `json:"joinSubnets,omitempty"`
}

// Layer3Subnet is a Layer3 subnet and the prefix length of each node's
// slice. ovn-udn's nodes need a gateway, a management port and a pod in a
// slice, so the slice is at most /29 for IPv4 and /126 for IPv6.
//
// +kubebuilder:validation:XValidation:rule="!has(self.hostSubnet) || !isCIDR(self.cidr) || self.hostSubnet > cidr(self.cidr).prefixLength()",message="HostSubnet must be smaller than CIDR subnet"
// +kubebuilder:validation:XValidation:rule="!has(self.hostSubnet) || !isCIDR(self.cidr) || (cidr(self.cidr).ip().family() != 4 || self.hostSubnet < 32)",message="HostSubnet must < 32 for ipv4 CIDR"
// +kubebuilder:validation:XValidation:rule="!has(self.hostSubnet) || !isCIDR(self.cidr) || self.hostSubnet <= (cidr(self.cidr).ip().family() == 4 ? 29 : 126)",message="hostSubnet must be at most 29 for IPv4 or 126 for IPv6 (each node's slice holds a gateway, a management port and pods)"
// +kubebuilder:validation:XValidation:rule="has(self.hostSubnet) || !isCIDR(self.cidr) || cidr(self.cidr).prefixLength() <= (cidr(self.cidr).ip().family() == 4 ? 28 : 125)",message="a Layer3 subnet without hostSubnet must be at most /28 for IPv4 or /125 for IPv6, so that node slices of /29 or /126 hold a gateway, a management port and pods"
type Layer3Subnet struct {
	// CIDR is the subnet.
	// +required
	CIDR CIDR `json:"cidr"`

	// HostSubnet is the prefix length of each node's slice; when omitted
	// the cluster-manager picks one.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=127
	// +optional
	HostSubnet int32 `json:"hostSubnet,omitempty"`
}

// Layer2Config is a Layer2 network in ovn-kubernetes' shape.
//
// +kubebuilder:validation:XValidation:rule="has(self.subnets) && size(self.subnets) > 0 || has(self.ipam) && has(self.ipam.mode) && self.ipam.mode == 'Disabled'",message="Subnets is required with ipam.mode is Enabled or unset"
// +kubebuilder:validation:XValidation:rule="!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || !has(self.subnets)",message="Subnets must be unset when ipam.mode is Disabled"
// +kubebuilder:validation:XValidation:rule="!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || self.role == 'Secondary'",message="Disabled ipam.mode is only supported for Secondary network"
// +kubebuilder:validation:XValidation:rule="!has(self.joinSubnets) || self.role == 'Primary'",message="JoinSubnets is only supported for Primary network"
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.mtu) || !self.subnets.exists(s, isCIDR(s) && cidr(s).ip().family() == 6) || self.mtu >= 1280",message="MTU should be greater than or equal to 1280 when IPv6 subnet is used"
// +kubebuilder:validation:XValidation:rule="!has(self.reservedSubnets) || has(self.subnets)",message="reservedSubnets must be unset when subnets is unset"
// +kubebuilder:validation:XValidation:rule="!has(self.reservedSubnets) || has(self.role) && self.role == 'Primary'",message="reservedSubnets is only supported for Primary network"
// +kubebuilder:validation:XValidation:rule="!has(self.reservedSubnets) || !has(self.subnets) || self.reservedSubnets.all(e, !isCIDR(e) || self.subnets.exists(s, isCIDR(s) && cidr(s).containsCIDR(cidr(e))))",message="reservedSubnets must be subnetworks of the networks specified in the subnets field"
// +kubebuilder:validation:XValidation:rule="!has(self.infrastructureSubnets)",message="infrastructureSubnets is not supported by ovn-udn: a network's gateway and management addresses are the first of each subnet"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultGatewayIPs)",message="defaultGatewayIPs is not supported by ovn-udn: a network's gateway is the first address of each subnet"
type Layer2Config struct {
	// Role is how pods use the network: Primary or Secondary.
	// +required
	Role NetworkRole `json:"role"`

	// MTU of the network; when omitted the cluster-manager's default (1400).
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// Subnets pods get addresses from: one, or two of different IP
	// families. Required unless ipam.mode is Disabled.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",message="When 2 CIDRs are set, they must be from different IP families"
	// +optional
	Subnets []CIDR `json:"subnets,omitempty"`

	// JoinSubnets are used inside the network's OVN topology (Primary
	// networks only).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",message="When 2 CIDRs are set, they must be from different IP families"
	// +optional
	JoinSubnets []CIDR `json:"joinSubnets,omitempty"`

	// IPAM configures address management.
	// +optional
	IPAM *IPAMSpec `json:"ipam,omitempty"`

	// ReservedSubnets are ranges inside Subnets never assigned to pods
	// automatically (Primary networks only): the flat shape's
	// excludeSubnets.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=25
	// +optional
	ReservedSubnets []CIDR `json:"reservedSubnets,omitempty"`

	// InfrastructureSubnets is ovn-kubernetes' field; ovn-udn refuses it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +optional
	InfrastructureSubnets []CIDR `json:"infrastructureSubnets,omitempty"`

	// DefaultGatewayIPs is ovn-kubernetes' field; ovn-udn refuses it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +optional
	DefaultGatewayIPs []string `json:"defaultGatewayIPs,omitempty"`
}

// VLANMode is how a Localnet network meets its VLAN.
// +kubebuilder:validation:Enum=Access
type VLANMode string

// VLANModeAccess tags the network's traffic with one VLAN ID.
const VLANModeAccess VLANMode = "Access"

// VLANConfig is a Localnet network's VLAN in ovn-kubernetes' shape.
// +kubebuilder:validation:XValidation:rule="has(self.mode) && self.mode == 'Access' ? has(self.access): !has(self.access)",message="vlan access config is required when vlan mode is 'Access', and forbidden otherwise"
type VLANConfig struct {
	// Mode is Access.
	// +required
	Mode VLANMode `json:"mode"`

	// Access is the VLAN of Access mode.
	// +optional
	Access *AccessVLANConfig `json:"access,omitempty"`
}

// AccessVLANConfig is an access-mode VLAN.
type AccessVLANConfig struct {
	// ID is the VLAN ID.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4094
	// +required
	ID int32 `json:"id"`
}

// LocalnetRole is a Localnet network's role: Secondary only.
// +kubebuilder:validation:Enum=Secondary
type LocalnetRole string

// LocalnetConfig is a Localnet network in ovn-kubernetes' shape.
//
// +kubebuilder:validation:XValidation:rule="!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode == 'Enabled' ? has(self.subnets) : !has(self.subnets)",message="Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.excludeSubnets) || has(self.subnets)",message="excludeSubnets must be unset when subnets is unset"
// +kubebuilder:validation:XValidation:rule="!has(self.excludeSubnets) || !has(self.subnets) || self.excludeSubnets.all(e, !isCIDR(e) || self.subnets.exists(s, isCIDR(s) && cidr(s).containsCIDR(cidr(e).masked())))",message="excludeSubnets must be subnetworks of the networks specified in the subnets field"
// +kubebuilder:validation:XValidation:rule="!has(self.subnets) || !has(self.mtu) || !self.subnets.exists(s, isCIDR(s) && cidr(s).ip().family() == 6) || self.mtu >= 1280",message="MTU should be greater than or equal to 1280 when an IPv6 subnet is used"
type LocalnetConfig struct {
	// Role must be Secondary: a Localnet network is never a pod's primary
	// network.
	// +required
	Role LocalnetRole `json:"role"`

	// PhysicalNetworkName is the name nodes map to a bridge in their
	// ovn-bridge-mappings.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^,:]+$')",message="physicalNetworkName cannot contain `,` or `:` characters"
	// +required
	PhysicalNetworkName string `json:"physicalNetworkName"`

	// Subnets pods get addresses from. Required unless ipam.mode is
	// Disabled.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",message="When 2 CIDRs are set, they must be from different IP families"
	// +optional
	Subnets []CIDR `json:"subnets,omitempty"`

	// ExcludeSubnets are ranges inside Subnets never assigned to pods.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=25
	// +optional
	ExcludeSubnets []ExcludeCIDR `json:"excludeSubnets,omitempty"`

	// IPAM configures address management.
	// +optional
	IPAM *IPAMSpec `json:"ipam,omitempty"`

	// MTU of the network; when omitted the cluster-manager's default (1400).
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// VLAN tags the network's traffic on the physical network.
	// +optional
	VLAN *VLANConfig `json:"vlan,omitempty"`
}

// NetworkSpec is a ClusterUserDefinedNetwork's network in ovn-kubernetes'
// shape: the topology and its block.
//
// +kubebuilder:validation:XValidation:rule="has(self.topology) && self.topology == 'Layer3' ? has(self.layer3) : !has(self.layer3)",message="spec.layer3 is required when topology is Layer3 and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="has(self.topology) && self.topology == 'Layer2' ? has(self.layer2) : !has(self.layer2)",message="spec.layer2 is required when topology is Layer2 and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="has(self.topology) && self.topology == 'Localnet' ? has(self.localnet) : !has(self.localnet)",message="spec.localnet is required when topology is Localnet and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.transport) && !has(self.noOverlay) && !has(self.evpn)",message="transport, noOverlay and evpn are not supported by ovn-udn: every network uses the Geneve overlay"
type NetworkSpec struct {
	// Topology is the shape of the network: Layer2, Layer3 or Localnet.
	// +required
	Topology NetworkTopology `json:"topology"`

	// Layer3 is the network when Topology is Layer3.
	// +optional
	Layer3 *Layer3Config `json:"layer3,omitempty"`

	// Layer2 is the network when Topology is Layer2.
	// +optional
	Layer2 *Layer2Config `json:"layer2,omitempty"`

	// Localnet is the network when Topology is Localnet.
	// +optional
	Localnet *LocalnetConfig `json:"localnet,omitempty"`

	// Transport is ovn-kubernetes' field (NoOverlay, EVPN); ovn-udn refuses
	// it rather than drop it.
	// +kubebuilder:validation:Enum=NoOverlay;EVPN
	// +optional
	Transport string `json:"transport,omitempty"`

	// NoOverlay is ovn-kubernetes' field; ovn-udn refuses it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	NoOverlay *apiextensionsv1.JSON `json:"noOverlay,omitempty"`

	// EVPN is ovn-kubernetes' field; ovn-udn refuses it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	EVPN *apiextensionsv1.JSON `json:"evpn,omitempty"`
}

// Flat returns the spec in the flat shape: itself when it is flat, else
// what its layer3 or layer2 block says (a block's subnet cidr/hostSubnet
// becomes the flat CIDR/hostPrefix).
func (s UserDefinedNetworkSpec) Flat() UserDefinedNetworkSpec {
	switch {
	case s.Layer3 != nil:
		return NetworkSpec{Topology: s.Topology, Layer3: s.Layer3}.Flat()
	case s.Layer2 != nil:
		return NetworkSpec{Topology: s.Topology, Layer2: s.Layer2}.Flat()
	}
	return s
}

// Flat returns the network in the flat shape.
func (n NetworkSpec) Flat() UserDefinedNetworkSpec {
	out := UserDefinedNetworkSpec{Topology: n.Topology}
	switch {
	case n.Layer3 != nil:
		c := n.Layer3
		out.Role, out.MTU, out.JoinSubnets = c.Role, c.MTU, c.JoinSubnets
		for _, s := range c.Subnets {
			sub := NetworkSubnet(s.CIDR)
			if s.HostSubnet != 0 {
				sub = NetworkSubnet(fmt.Sprintf("%s/%d", s.CIDR, s.HostSubnet))
			}
			out.Subnets = append(out.Subnets, sub)
		}
	case n.Layer2 != nil:
		c := n.Layer2
		out.Role, out.MTU, out.JoinSubnets, out.IPAM = c.Role, c.MTU, c.JoinSubnets, c.IPAM
		out.Subnets = flatSubnets(c.Subnets)
		for _, r := range c.ReservedSubnets {
			out.ExcludeSubnets = append(out.ExcludeSubnets, ExcludeCIDR(r))
		}
	case n.Localnet != nil:
		c := n.Localnet
		out.Role, out.MTU, out.IPAM, out.ExcludeSubnets = NetworkRole(c.Role), c.MTU, c.IPAM, c.ExcludeSubnets
		out.Subnets = flatSubnets(c.Subnets)
		out.Localnet = &LocalnetSpec{PhysicalNetworkName: c.PhysicalNetworkName}
		if c.VLAN != nil && c.VLAN.Access != nil {
			out.Localnet.VLANID = c.VLAN.Access.ID
		}
	}
	return out
}

// FlatTemplate returns the ClusterUserDefinedNetwork's network in the flat
// shape: its template, or its network block.
func (s ClusterUserDefinedNetworkSpec) FlatTemplate() UserDefinedNetworkSpec {
	switch {
	case s.Network != nil:
		return s.Network.Flat()
	case s.Template != nil:
		return s.Template.Flat()
	}
	return UserDefinedNetworkSpec{}
}

func flatSubnets(in []CIDR) []NetworkSubnet {
	var out []NetworkSubnet
	for _, c := range in {
		out = append(out, NetworkSubnet(c))
	}
	return out
}
