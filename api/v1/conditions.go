package v1

// Well-known labels, annotations and finalizers of the API.
const (
	// PrimaryNetworkLabel must be on a namespace (set when it is created) for a
	// Primary network to be provided to it.
	PrimaryNetworkLabel = "k8s.ovn.org/primary-user-defined-network"
	// NetworkProtectionFinalizer keeps a network and its
	// NetworkAttachmentDefinitions until no pod uses them.
	NetworkProtectionFinalizer = "k8s.ovn.org/user-defined-network-protection"
)

// ConditionNetworkCreated is the condition type of both kinds: True once the
// network's NetworkAttachmentDefinition(s) exist and match the spec.
const ConditionNetworkCreated = "NetworkCreated"

// ConditionNodeSubnetsAllocated is set on Layer3 networks by cluster-manager's
// node allocator: False when some nodes got no subnet of the network
// (ReasonSubnetsExhausted), or none can (ReasonSubnetTooSmall), True once every
// node has one.
const ConditionNodeSubnetsAllocated = "NodeSubnetsAllocated"

// Reasons of the NodeSubnetsAllocated condition.
const (
	ReasonSubnetsAllocated = "SubnetsAllocated"
	ReasonSubnetsExhausted = "SubnetsExhausted"
	// ReasonSubnetTooSmall: the network's node slices (its host prefix, or
	// the default one for its subnet) cannot hold a gateway, a management port
	// and a pod. The API rejects such networks since ovn-udn checks it; objects
	// stored before still report it.
	ReasonSubnetTooSmall = "SubnetTooSmall"
)

// Reasons of the NetworkCreated condition. They are stable API: tools match on
// them. docs/api.md describes each.
const (
	// ReasonNADCreated: every NetworkAttachmentDefinition exists and matches.
	ReasonNADCreated = "NetworkAttachmentDefinitionCreated"
	// ReasonSyncError: creating or updating a NetworkAttachmentDefinition failed
	// (the API server refused or was unreachable); retried.
	ReasonSyncError = "SyncError"
	// ReasonForeignNAD: a NetworkAttachmentDefinition of the same name exists and
	// is not owned by this network; it is never overwritten.
	ReasonForeignNAD = "ForeignNetworkAttachmentDefinition"
	// ReasonPrimaryConflict: the namespace already has a primary network this
	// one cannot join: one of the other kind (UserDefinedNetworks and
	// ClusterUserDefinedNetworks are never primary together in a namespace)
	// or a hand-made primary NAD.
	ReasonPrimaryConflict = "PrimaryNetworkConflict"
	// ReasonPrimarySelectorMismatch: an additional primary
	// ClusterUserDefinedNetwork of a namespace must have the same
	// namespaceSelector as the one it already has.
	ReasonPrimarySelectorMismatch = "PrimaryNetworkSelectorMismatch"
	// ReasonPrimarySubnetOverlap: the namespace already has a primary network
	// whose subnets overlap this one's.
	ReasonPrimarySubnetOverlap = "PrimaryNetworkSubnetOverlap"
	// ReasonNamespaceNotLabeled: a Primary network needs the namespace label
	// k8s.ovn.org/primary-user-defined-network.
	ReasonNamespaceNotLabeled = "NamespaceNotLabeled"
	// ReasonPodsExist: pods already run in the namespace, so it cannot get a new
	// primary network.
	ReasonPodsExist = "PodsAlreadyExist"
	// ReasonSubnetOverlap: a subnet overlaps a subnet reserved by the cluster
	// (default network, services, join, masquerade or transit).
	ReasonSubnetOverlap = "SubnetOverlap"
	// ReasonEgressNotAllowed: a UserDefinedNetwork (a namespace's own)
	// asks for egress, which only a ClusterUserDefinedNetwork (an
	// administrator's) may give: a tenant's own way out would route around
	// its namespace's EgressFirewall.
	ReasonEgressNotAllowed = "EgressNotAllowed"
	// ReasonInvalidSpec: the spec passed the API server's checks but cannot be
	// rendered (e.g. an invalid namespace selector).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNetworkLimit: the cluster's configured maximum number of networks is
	// reached.
	ReasonNetworkLimit = "NetworkLimitExceeded"
	// ReasonNamespaceNetworkLimit: the namespace already has the configured
	// maximum number of UserDefinedNetworks created
	// (cluster-manager --max-networks-per-namespace); the network waits.
	ReasonNamespaceNetworkLimit = "NamespaceNetworkLimitExceeded"
	// ReasonTunnelKeysExhausted: the interconnect tunnel-key range (shared by
	// Layer2 transit routers and connect routers) is used up; no key is reused.
	ReasonTunnelKeysExhausted = "TunnelKeysExhausted"
	// ReasonVRFConflict: another ClusterUserDefinedNetwork uses the same VRF name.
	ReasonVRFConflict = "VRFConflict"
	// ReasonNetworkInUse: deletion waits until no pod uses the network.
	ReasonNetworkInUse = "NetworkInUse"
	// ReasonNamespaceTerminating: a selected namespace is being deleted.
	ReasonNamespaceTerminating = "NamespaceTerminating"
	// ReasonMultipleFailures: a ClusterUserDefinedNetwork failed in several
	// namespaces for different reasons; the message lists them.
	ReasonMultipleFailures = "MultipleFailures"
)
