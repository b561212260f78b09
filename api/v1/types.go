package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkTopology is the shape of a network in OVN.
// +kubebuilder:validation:Enum=Layer2;Layer3;Localnet
type NetworkTopology string

const (
	// Layer2 is one distributed switch spanning every node.
	Layer2 NetworkTopology = "Layer2"
	// Layer3 is a switch per node, each with its own subnet, routed by a
	// cluster router.
	Layer3 NetworkTopology = "Layer3"
	// Localnet is a switch wired directly to a physical network.
	Localnet NetworkTopology = "Localnet"
)

// NetworkRole is how pods use a network.
// +kubebuilder:validation:Enum=Primary;Secondary
type NetworkRole string

const (
	// Primary networks carry the pod's default route.
	Primary NetworkRole = "Primary"
	// Secondary networks are extra interfaces pods ask for.
	Secondary NetworkRole = "Secondary"
)

// IPAMMode says whether ovn-udn assigns addresses on a network.
// +kubebuilder:validation:Enum=Enabled;Disabled
type IPAMMode string

const (
	// IPAMEnabled: ovn-udn assigns addresses from the subnets (the default).
	IPAMEnabled IPAMMode = "Enabled"
	// IPAMDisabled: pods get MACs only and configure addresses themselves.
	IPAMDisabled IPAMMode = "Disabled"
)

// NetworkIPAMLifecycle controls how long assigned addresses live.
// +kubebuilder:validation:Enum=Persistent
type NetworkIPAMLifecycle string

// IPAMLifecyclePersistent keeps a workload's addresses in IPAMClaims across pod
// restarts and migrations.
const IPAMLifecyclePersistent NetworkIPAMLifecycle = "Persistent"

// CIDR is an IPv4 or IPv6 network address in CIDR notation.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a valid CIDR (e.g. 10.0.0.0/16 or fd00::/64)"
// +kubebuilder:validation:XValidation:rule="!isCIDR(self) || cidr(self) == cidr(self).masked()",message="must be a network address: the bits after the prefix length must be zero"
type CIDR string

// ExcludeCIDR is a CIDR whose host bits may be set, as OVN-Kubernetes accepts
// in excludeSubnets: 10.0.0.100/26 excludes 10.0.0.64/26, and the
// NetworkAttachmentDefinition carries that masked network.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a valid CIDR (e.g. 10.0.0.0/16 or fd00::/64)"
type ExcludeCIDR string

// NetworkSubnet is a CIDR, or for Layer3 networks optionally CIDR/hostPrefix
// (e.g. 10.128.0.0/16/24: every node gets a /24). A node's slice must hold its
// gateway (offset 1), its management port (offset 2) and at least one pod,
// without the network address and, for IPv4, the broadcast address: so the
// host prefix is at most /29 for IPv4 and /126 for IPv6
// (internal/allocator.MaxHostPrefix). The rules after the first one check
// that the value has the shape CIDR/hostPrefix before taking it apart, so a
// malformed value gets only the first rule's message.
// +kubebuilder:validation:MaxLength=47
// +kubebuilder:validation:XValidation:rule="isCIDR(self) || (size(self.split('/')) == 3 && isCIDR(self.substring(0, self.lastIndexOf('/'))))",message="must be a CIDR, or CIDR/hostPrefix for Layer3 (e.g. 10.128.0.0/16/24)"
// +kubebuilder:validation:XValidation:rule="isCIDR(self) ? cidr(self) == cidr(self).masked() : (size(self.split('/')) != 3 || !isCIDR(self.substring(0, self.lastIndexOf('/'))) || cidr(self.substring(0, self.lastIndexOf('/'))) == cidr(self.substring(0, self.lastIndexOf('/'))).masked())",message="must be a network address: the bits after the prefix length must be zero"
// +kubebuilder:validation:XValidation:rule="isCIDR(self) || size(self.split('/')) != 3 || !isCIDR(self.substring(0, self.lastIndexOf('/'))) || (self.substring(self.lastIndexOf('/') + 1).matches('^[0-9]{1,3}$') && int(self.substring(self.lastIndexOf('/') + 1)) > cidr(self.substring(0, self.lastIndexOf('/'))).prefixLength() && int(self.substring(self.lastIndexOf('/') + 1)) <= (ip(self.split('/')[0]).family() == 4 ? 29 : 126))",message="host prefix must be longer than the subnet's prefix length and at most 29 for IPv4 or 126 for IPv6 (each node's slice holds a gateway, a management port and pods)"
type NetworkSubnet string

// EgressMode is how a secondary network reaches the outside.
// +kubebuilder:validation:Enum=Gateway
type EgressMode string

// EgressGateway: through a gateway router of the network's own on every
// node, masqueraded to the node's address.
const EgressGateway EgressMode = "Gateway"

// UserDefinedNetworkSpec is the network a tenant asks for. It is also the
// template of a ClusterUserDefinedNetwork.
//
// It has two shapes: the seed's flat fields (role, subnets, mtu, ...), or
// ovn-kubernetes' block for the topology (layer3, layer2), never both. The
// flat shape's rules apply to it alone; a block has its own (shapes.go).
//
// +kubebuilder:validation:XValidation:rule="!(has(self.layer3) || has(self.layer2)) || !(has(self.role) || has(self.subnets) || has(self.mtu) || has(self.excludeSubnets) || has(self.joinSubnets) || has(self.ipam) || has(self.localnet))",message="the flat fields (role, subnets, mtu, excludeSubnets, joinSubnets, ipam, localnet) and ovn-kubernetes' layer3/layer2 block are two shapes of one network: use one, not both"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || has(self.role)",message="role is required (or, in ovn-kubernetes' shape, a layer3 or layer2 block with its role)",fieldPath=".role",reason="FieldValueRequired"
// +kubebuilder:validation:XValidation:rule="!has(self.layer3) || self.topology == 'Layer3'",message="spec.layer3 is required when topology is Layer3 and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="!has(self.layer2) || self.topology == 'Layer2'",message="spec.layer2 is required when topology is Layer2 and forbidden otherwise"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (self.topology != 'Layer3' || (has(self.subnets) && size(self.subnets) > 0))",message="subnets is required for Layer3 topology"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (self.topology != 'Localnet' || (has(self.role) && self.role == 'Secondary'))",message="Localnet topology is not supported for a Primary network"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.ipam) || !has(self.ipam.lifecycle) || self.topology == 'Layer2' || self.topology == 'Localnet')",message="ipam.lifecycle Persistent is supported only for Layer2 and Localnet topologies"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.ipam) || !has(self.ipam.lifecycle) || !has(self.ipam.mode) || self.ipam.mode == 'Enabled')",message="ipam.lifecycle Persistent requires ipam.mode Enabled"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || ((self.topology == 'Layer2' || self.topology == 'Localnet') && (has(self.role) && self.role == 'Secondary')))",message="ipam.mode Disabled is supported only for Secondary Layer2 and Localnet networks"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || !has(self.subnets))",message="subnets must be omitted when ipam.mode is Disabled"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || ((has(self.ipam) && has(self.ipam.mode) && self.ipam.mode == 'Disabled') || (has(self.subnets) && size(self.subnets) > 0))",message="subnets is required when ipam.mode is Enabled (the default)"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.subnets) || self.topology == 'Layer3' || self.subnets.all(s, size(s.split('/')) != 3 || !isCIDR(s.substring(0, s.lastIndexOf('/')))))",message="a host prefix (CIDR/hostPrefix) is supported only for Layer3 subnets"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.excludeSubnets) || (has(self.subnets) && (self.subnets.exists(s, size(s.split('/')) < 2 || !isCIDR(s.split('/')[0] + '/' + s.split('/')[1])) || self.excludeSubnets.all(e, !isCIDR(e) || self.subnets.exists(s, cidr(s.split('/')[0] + '/' + s.split('/')[1]).containsCIDR(cidr(e).masked()))))))",message="every excludeSubnets entry must lie inside one of the subnets"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (self.topology != 'Layer3' || !has(self.subnets) || self.subnets.all(s, !isCIDR(s) || cidr(s).prefixLength() <= (cidr(s).ip().family() == 4 ? 28 : 125)))",message="a Layer3 subnet without a host prefix must be at most /28 for IPv4 or /125 for IPv6, so that node slices of /29 or /126 hold a gateway, a management port and pods"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.joinSubnets) || (has(self.role) && self.role == 'Primary'))",message="joinSubnets is supported only for Primary networks"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.mtu) || self.mtu >= 1280 || !has(self.subnets) || self.subnets.all(s, !s.contains(':')))",message="mtu must be at least 1280 when the network has an IPv6 subnet"
// +kubebuilder:validation:XValidation:rule="has(self.layer3) || has(self.layer2) || (!has(self.localnet) || self.topology == 'Localnet')",message="localnet is supported only for Localnet topology"
// +kubebuilder:validation:XValidation:rule="!has(self.egress) || (has(self.role) && self.role == 'Secondary' && (self.topology == 'Layer3' || self.topology == 'Layer2') && !(has(self.ipam) && has(self.ipam.mode) && self.ipam.mode == 'Disabled'))",message="egress is supported only for Secondary Layer3 and Layer2 networks with IPAM enabled (a Primary network always has its gateway)"
type UserDefinedNetworkSpec struct {
	// Topology is the shape of the network: Layer2, Layer3 or Localnet.
	// +required
	Topology NetworkTopology `json:"topology"`

	// Role is how pods use the network: Primary (the pod's default route; one
	// per namespace) or Secondary (an extra interface pods ask for).
	// Required in the flat shape.
	// +optional
	Role NetworkRole `json:"role,omitempty"`

	// MTU of the network; when omitted the cluster-manager's default (1400).
	// +kubebuilder:validation:Minimum=576
	// +kubebuilder:validation:Maximum=65536
	// +optional
	MTU int32 `json:"mtu,omitempty"`

	// Subnets pods get addresses from: one, or two of different IP families for
	// dual stack. Layer3 subnets may carry the per-node prefix as
	// CIDR/hostPrefix (10.128.0.0/16/24); when omitted the cluster-manager picks
	// one. Required unless ipam.mode is Disabled.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isIP(self[0].split('/')[0]) || !isIP(self[1].split('/')[0]) || ip(self[0].split('/')[0]).family() != ip(self[1].split('/')[0]).family()",message="two subnets must be of different IP families (one IPv4, one IPv6)"
	// +optional
	Subnets []NetworkSubnet `json:"subnets,omitempty"`

	// ExcludeSubnets are ranges inside Subnets that are never assigned to pods.
	// Host bits may be set (10.0.0.100/26 excludes 10.0.0.64/26).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=25
	// +optional
	ExcludeSubnets []ExcludeCIDR `json:"excludeSubnets,omitempty"`

	// JoinSubnets are used inside the network's OVN topology between the
	// network's routers (Primary networks only): one, or two of different IP
	// families. When omitted: 100.65.0.0/16 and fd99::/64, per the families of
	// Subnets. They must not overlap the default network's join subnet.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",message="two join subnets must be of different IP families (one IPv4, one IPv6)"
	// +optional
	JoinSubnets []CIDR `json:"joinSubnets,omitempty"`

	// IPAM configures address management.
	// +optional
	IPAM *IPAMSpec `json:"ipam,omitempty"`

	// Localnet configures how a Localnet network meets the physical network.
	// +optional
	Localnet *LocalnetSpec `json:"localnet,omitempty"`

	// Egress Gateway gives a Secondary Layer3 or Layer2 network a gateway
	// router of its own on every node, through which it reaches the outside
	// masqueraded to the node's address; a pod takes it as its default
	// route by asking for it in its networks annotation (Multus'
	// "default-route"). Omitted, a secondary network is east-west only.
	// Primary networks always have their gateway. Flat shape only (ovn-kubernetes' blocks have no such field),
	// and in a ClusterUserDefinedNetwork's template only: EgressFirewall,
	// EgressQoS and EgressIP do not apply to this way out.
	// +optional
	Egress EgressMode `json:"egress,omitempty"`

	// Layer3 is the network in ovn-kubernetes' shape when Topology is
	// Layer3 (instead of the flat fields).
	// +optional
	Layer3 *Layer3Config `json:"layer3,omitempty"`

	// Layer2 is the network in ovn-kubernetes' shape when Topology is
	// Layer2 (instead of the flat fields).
	// +optional
	Layer2 *Layer2Config `json:"layer2,omitempty"`
}

// IPAMSpec configures address management on a network.
// +kubebuilder:validation:XValidation:rule="!has(self.lifecycle) || self.lifecycle != 'Persistent' || !has(self.mode) || self.mode == 'Enabled'",message="lifecycle Persistent is only supported when ipam.mode is Enabled"
type IPAMSpec struct {
	// Mode is Enabled (ovn-udn assigns addresses from Subnets; the default) or
	// Disabled (pods get MACs only, and port security checks MACs only).
	// Disabled is allowed only for Secondary Layer2 and Localnet networks.
	// +optional
	Mode IPAMMode `json:"mode,omitempty"`

	// Lifecycle Persistent keeps a workload's addresses in IPAMClaims, so a
	// virtual machine keeps them across restarts and live migration. Layer2 and
	// Localnet only.
	// +optional
	Lifecycle NetworkIPAMLifecycle `json:"lifecycle,omitempty"`
}

// LocalnetSpec ties a Localnet network to a physical network of the nodes.
type LocalnetSpec struct {
	// PhysicalNetworkName is the name nodes map to a bridge in their
	// ovn-bridge-mappings. When omitted, the network's name is used.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`
	// +optional
	PhysicalNetworkName string `json:"physicalNetworkName,omitempty"`

	// VLANID tags the network's traffic on the physical network (access mode).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4094
	// +optional
	VLANID int32 `json:"vlanID,omitempty"`
}

// UserDefinedNetworkStatus is what the controller observed.
type UserDefinedNetworkStatus struct {
	// Conditions: NetworkCreated says whether the network's
	// NetworkAttachmentDefinition exists and matches the spec, and if not why
	// (see docs/api.md for the reasons).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// UserDefinedNetwork is a network a tenant creates for their namespace. The
// controller renders it into a NetworkAttachmentDefinition of the same name in
// the same namespace; its network name is "<namespace>.<name>".
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=udn
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.topology`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Subnets",type=string,JSONPath=`.spec.subnets`
// +kubebuilder:printcolumn:name="Created",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type UserDefinedNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is immutable: delete and recreate the network to change it.
	// egress is for ClusterUserDefinedNetworks only.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	// +kubebuilder:validation:XValidation:rule="!has(self.egress)",message="egress is allowed only in a ClusterUserDefinedNetwork (an administrator's network): a namespace's own network could route around its EgressFirewall"
	// +required
	Spec UserDefinedNetworkSpec `json:"spec"`
	// +optional
	Status UserDefinedNetworkStatus `json:"status,omitempty"`
}

// UserDefinedNetworkList is a list of UserDefinedNetworks.
// +kubebuilder:object:root=true
type UserDefinedNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UserDefinedNetwork `json:"items"`
}

// ClusterUserDefinedNetworkSpec is a network an administrator provides to the
// namespaces a selector picks: as a template in the seed's shape, or as
// ovn-kubernetes' network block, exactly one of them.
// +kubebuilder:validation:XValidation:rule="has(self.vrf) == has(oldSelf.vrf) && (!has(self.vrf) || self.vrf == oldSelf.vrf)",message="vrf is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.template) != has(self.network)",message="exactly one of template (the flat shape) and network (ovn-kubernetes' shape) must be set"
// +kubebuilder:validation:XValidation:rule="has(self.template) == has(oldSelf.template) && has(self.network) == has(oldSelf.network)",message="the network's shape is immutable"
type ClusterUserDefinedNetworkSpec struct {
	// NamespaceSelector picks the namespaces the network is provided to. It may
	// change; namespaces that stop matching lose the network once no pod uses it.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// Template is the network, as a UserDefinedNetwork spec. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="template is immutable"
	// +optional
	Template *UserDefinedNetworkSpec `json:"template,omitempty"`

	// Network is the network in ovn-kubernetes' shape (topology and its
	// block), instead of Template. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Network spec is immutable"
	// +optional
	Network *NetworkSpec `json:"network,omitempty"`

	// VRF names the network's VRF device on the nodes; unique across
	// ClusterUserDefinedNetworks. When omitted: the ClusterUserDefinedNetwork's
	// name if shorter than 16 characters, otherwise udn-<network ID>-vrf.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`
	// +optional
	VRF string `json:"vrf,omitempty"`
}

// ClusterUserDefinedNetworkStatus is what the controller observed.
type ClusterUserDefinedNetworkStatus struct {
	// ActiveNamespaces lists the namespaces where the network's
	// NetworkAttachmentDefinition exists and matches the template.
	// +listType=set
	// +optional
	ActiveNamespaces []string `json:"activeNamespaces,omitempty"`

	// Conditions: NetworkCreated is True when every selected namespace has the
	// network; otherwise its message names each namespace that failed and why.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterUserDefinedNetwork is a network an administrator provides to several
// namespaces. The controller renders a NetworkAttachmentDefinition named
// "cluster.udn.<name>" in each selected namespace, all with the network name
// "cluster.udn.<name>".
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cudn
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Topology",type=string,JSONPath=`.spec.template.topology`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.template.role`
// +kubebuilder:printcolumn:name="Subnets",type=string,JSONPath=`.spec.template.subnets`
// +kubebuilder:printcolumn:name="Created",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="NetworkCreated")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterUserDefinedNetwork struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterUserDefinedNetworkSpec `json:"spec"`
	// +optional
	Status ClusterUserDefinedNetworkStatus `json:"status,omitempty"`
}

// ClusterUserDefinedNetworkList is a list of ClusterUserDefinedNetworks.
// +kubebuilder:object:root=true
type ClusterUserDefinedNetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterUserDefinedNetwork `json:"items"`
}
