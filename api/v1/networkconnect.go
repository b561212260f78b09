package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkSelectionType names a kind of network a selector picks. The API
// knows every kind OVN-Kubernetes' selectors name, so that a
// ClusterNetworkConnect naming one it cannot connect is refused with a
// message saying so, rather than an unknown-value error.
// +kubebuilder:validation:Enum=DefaultNetwork;ClusterUserDefinedNetworks;PrimaryUserDefinedNetworks;SecondaryUserDefinedNetworks;NetworkAttachmentDefinitions
type NetworkSelectionType string

const (
	// DefaultNetworkSelection is the cluster default network.
	DefaultNetworkSelection NetworkSelectionType = "DefaultNetwork"
	// ClusterUserDefinedNetworkSelection selects ClusterUserDefinedNetworks
	// by their labels.
	ClusterUserDefinedNetworkSelection NetworkSelectionType = "ClusterUserDefinedNetworks"
	// PrimaryUserDefinedNetworkSelection selects the primary
	// UserDefinedNetworks of the namespaces a namespace selector picks.
	PrimaryUserDefinedNetworkSelection NetworkSelectionType = "PrimaryUserDefinedNetworks"
	// SecondaryUserDefinedNetworkSelection selects secondary
	// UserDefinedNetworks (not connectable).
	SecondaryUserDefinedNetworkSelection NetworkSelectionType = "SecondaryUserDefinedNetworks"
	// NetworkAttachmentDefinitionSelection selects NADs (not connectable).
	NetworkAttachmentDefinitionSelection NetworkSelectionType = "NetworkAttachmentDefinitions"
)

// NetworkSelectors is a list of selectors, at most one per selection type;
// a network is selected when any of them picks it.
// +kubebuilder:validation:MinItems=1
// +kubebuilder:validation:MaxItems=5
// +listType=map
// +listMapKey=networkSelectionType
type NetworkSelectors []NetworkSelector

// NetworkSelector picks networks of one kind. The selector field matching
// networkSelectionType must be set, and no other.
// +kubebuilder:validation:XValidation:rule="self.networkSelectionType == 'ClusterUserDefinedNetworks' ? has(self.clusterUserDefinedNetworkSelector) : !has(self.clusterUserDefinedNetworkSelector)",message="clusterUserDefinedNetworkSelector must be set when, and only when, networkSelectionType is ClusterUserDefinedNetworks"
// +kubebuilder:validation:XValidation:rule="self.networkSelectionType == 'PrimaryUserDefinedNetworks' ? has(self.primaryUserDefinedNetworkSelector) : !has(self.primaryUserDefinedNetworkSelector)",message="primaryUserDefinedNetworkSelector must be set when, and only when, networkSelectionType is PrimaryUserDefinedNetworks"
type NetworkSelector struct {
	// NetworkSelectionType is the kind of network this selector picks.
	// +required
	NetworkSelectionType NetworkSelectionType `json:"networkSelectionType"`

	// ClusterUserDefinedNetworkSelector picks ClusterUserDefinedNetworks by
	// their labels.
	// +optional
	ClusterUserDefinedNetworkSelector *ClusterUserDefinedNetworkSelector `json:"clusterUserDefinedNetworkSelector,omitempty"`

	// PrimaryUserDefinedNetworkSelector picks the primary UserDefinedNetwork of
	// every namespace its namespace selector matches.
	// +optional
	PrimaryUserDefinedNetworkSelector *PrimaryUserDefinedNetworkSelector `json:"primaryUserDefinedNetworkSelector,omitempty"`
}

// ClusterUserDefinedNetworkSelector picks ClusterUserDefinedNetworks.
type ClusterUserDefinedNetworkSelector struct {
	// NetworkSelector matches the labels of ClusterUserDefinedNetworks
	// (kubernetes.io/metadata.name is not set on them by Kubernetes: use
	// labels the administrator sets).
	// +required
	NetworkSelector metav1.LabelSelector `json:"networkSelector"`
}

// PrimaryUserDefinedNetworkSelector picks namespaces' primary
// UserDefinedNetworks.
type PrimaryUserDefinedNetworkSelector struct {
	// NamespaceSelector matches namespaces by their labels.
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`
}

// ConnectCIDR is the network address of a connect subnet.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="CIDR must be a valid network address"
type ConnectCIDR string

// ConnectSubnet is an address range the connected networks' links are
// carved from: a /networkPrefix block per Layer3 network (one /31 or /127
// per node inside it, at twice the node ID), and /31 or /127 slices for
// Layer2 networks packed into shared /networkPrefix blocks.
// +kubebuilder:validation:XValidation:rule="!has(self.networkPrefix) || !isCIDR(self.cidr) || self.networkPrefix > cidr(self.cidr).prefixLength()",message="networkPrefix must be smaller than CIDR subnet"
// +kubebuilder:validation:XValidation:rule="!has(self.networkPrefix) || !isCIDR(self.cidr) || (cidr(self.cidr).ip().family() != 4 || self.networkPrefix < 32)",message="networkPrefix must < 32 for ipv4 CIDR"
type ConnectSubnet struct {
	// CIDR is the range, e.g. 192.168.0.0/16. It holds at most
	// 2^(networkPrefix-prefix) blocks: one per connected Layer3 network, and
	// one per 2^(31-networkPrefix) Layer2 networks (IPv4).
	// +required
	CIDR ConnectCIDR `json:"cidr"`

	// NetworkPrefix is the prefix length of each Layer3 network's block. The
	// block holds a /31 (/127) per node at offset 2×node ID, so it bounds
	// the node IDs that can be connected: a /24 serves node IDs up to 127.
	// Pick it with room for the node IDs the cluster will ever use (node IDs
	// of deleted nodes are not reused at once).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=127
	// +required
	NetworkPrefix int32 `json:"networkPrefix"`
}

// ConnectivityType is what crosses between connected networks.
// +kubebuilder:validation:Enum=PodNetwork;ClusterIPServiceNetwork
type ConnectivityType string

const (
	// PodNetwork lets pods of connected networks reach each other directly.
	PodNetwork ConnectivityType = "PodNetwork"
	// ClusterIPServiceNetwork lets pods of connected networks reach each
	// other's ClusterIP services (alone: only services, not pods).
	ClusterIPServiceNetwork ConnectivityType = "ClusterIPServiceNetwork"
)

// ClusterNetworkConnectSpec says which networks to connect, with which
// addresses, and what may cross.
// +kubebuilder:validation:XValidation:rule="!self.networkSelectors.exists(i, i.networkSelectionType != 'ClusterUserDefinedNetworks' && i.networkSelectionType != 'PrimaryUserDefinedNetworks')",message="Only ClusterUserDefinedNetworks or PrimaryUserDefinedNetworks can be selected"
type ClusterNetworkConnectSpec struct {
	// NetworkSelectors pick the networks to connect: ClusterUserDefinedNetworks
	// by label, and the primary UserDefinedNetworks of namespaces. Only
	// primary Layer3 and Layer2 networks can be connected; a selected network
	// of another kind makes the connect fail (status).
	// +required
	NetworkSelectors NetworkSelectors `json:"networkSelectors"`

	// ConnectSubnets are the ranges the links between the networks are
	// numbered from: at most one per IP family, covering every family of the
	// connected networks. They must not overlap the networks' pod, join or
	// transit subnets, the service or masquerade ranges, the nodes' own
	// addresses (not checked), nor the connect subnets of another
	// ClusterNetworkConnect selecting one of the same networks. Immutable.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="connectSubnets is immutable"
	// +kubebuilder:validation:XValidation:rule="size(self) != 2 || !isCIDR(self[0].cidr) || !isCIDR(self[1].cidr) || cidr(self[0].cidr).ip().family() != cidr(self[1].cidr).ip().family()",message="When 2 CIDRs are set, they must be from different IP families"
	// +required
	ConnectSubnets []ConnectSubnet `json:"connectSubnets"`

	// ConnectivityEnabled is what crosses: PodNetwork (pods reach pods),
	// ClusterIPServiceNetwork (pods reach ClusterIP services), or both.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, x == y))",message="connectivityEnabled cannot contain duplicate values"
	// +required
	ConnectivityEnabled []ConnectivityType `json:"connectivityEnabled"`
}

// ConnectStatusType is the summary of a ClusterNetworkConnect's state.
// +kubebuilder:validation:Enum=Success;Failure
type ConnectStatusType string

const (
	// ConnectSuccess: accepted and set up in every zone.
	ConnectSuccess ConnectStatusType = "Success"
	// ConnectFailure: refused, or failed in some zone (conditions say why).
	ConnectFailure ConnectStatusType = "Failure"
)

// ClusterNetworkConnectStatus is what the controllers observed.
type ClusterNetworkConnectStatus struct {
	// Status is Success when the connect is accepted and every zone has set
	// it up, Failure when it is refused or some zone failed; empty before.
	// +optional
	Status ConnectStatusType `json:"status,omitempty"`

	// Conditions: Accepted (cluster-manager's validation) and
	// Ready-In-Zone-<node> (each zone's setup).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterNetworkConnect connects primary user-defined networks: pods of
// every pair of selected networks reach each other (PodNetwork) and/or each
// other's ClusterIP services (ClusterIPServiceNetwork). Connectivity is
// symmetric and not transitive: two connects A–B and B–C do not connect A
// and C.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=clusternetworkconnects,scope=Cluster,shortName=cnc,singular=clusternetworkconnect
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=".status.status"
type ClusterNetworkConnect struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterNetworkConnectSpec `json:"spec"`
	// +optional
	Status ClusterNetworkConnectStatus `json:"status,omitempty"`
}

// ClusterNetworkConnectList is a list of ClusterNetworkConnects.
// +kubebuilder:object:root=true
type ClusterNetworkConnectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterNetworkConnect `json:"items"`
}

// Annotations cluster-manager writes on a ClusterNetworkConnect for the
// zones (the seed's names and formats; internal/contract/connect parses them).
const (
	// ConnectSubnetsAnnotation maps each connected network
	// ("layer3_<network ID>", "layer2_<network ID>") to its slice of the
	// connect subnets: {"ipv4": "192.168.0.0/24", "ipv6": "fd01::/64"}.
	ConnectSubnetsAnnotation = "k8s.ovn.org/network-subnets"
	// ConnectRouterTunnelKeyAnnotation is the connect router's interconnect
	// tunnel key (decimal).
	ConnectRouterTunnelKeyAnnotation = "k8s.ovn.org/connect-router-tunnel-key"
)

// Condition types and reasons of a ClusterNetworkConnect (docs/api.md).
const (
	// ConditionAccepted is cluster-manager's verdict on the selection.
	ConditionAccepted = "Accepted"
	// ConditionReadyInZonePrefix + node name is a zone's setup condition.
	ConditionReadyInZonePrefix = "Ready-In-Zone-"

	ReasonValidationSucceeded       = "ValidationSucceeded"
	ReasonConnectSubnetExhausted    = "ConnectSubnetExhausted"
	ReasonOverlappingNetworkSubnets = "OverlappingNetworkSubnets"
	ReasonConnectSubnetConflict     = "ConnectSubnetConflict"
	ReasonConnectSubnetOverlap      = "ConnectSubnetOverlap"
	ReasonIPFamilyMismatch          = "IPFamilyMismatch"
	ReasonInsufficientNetworks      = "InsufficientNetworks"
	ReasonUnsupportedNetworkType    = "UnsupportedNetworkType"
	// ReasonConnectTunnelKeysExhausted: no interconnect tunnel key is left
	// for the connect router.
	ReasonConnectTunnelKeysExhausted = "TunnelKeysExhausted"

	ReasonOVNSetupSucceeded = "OVNSetupSucceeded"
	ReasonOVNSetupFailed    = "OVNSetupFailed"
)
