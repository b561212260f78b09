package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EgressAssignableLabel marks the nodes that may hold egress IPs (as in
// ovn-kubernetes).
const EgressAssignableLabel = "k8s.ovn.org/egress-assignable"

// EgressIP condition type and reasons.
const (
	// ConditionEgressIPsAssigned is True when every egress IP of the object
	// is held by a node.
	ConditionEgressIPsAssigned = "EgressIPsAssigned"
	// ReasonAssigned: every egress IP has a node.
	ReasonAssigned = "Assigned"
	// ReasonNoNodeForIP: some egress IP has no node that can hold it.
	ReasonNoNodeForIP = "NoNodeForIP"
	// ReasonIPClaimedByOlder: some egress IP belongs to an older EgressIP.
	ReasonIPClaimedByOlder = "IPClaimedByOlderEgressIP"
	// ReasonIPIsNodeAddress: some egress IP is a node's own address.
	ReasonIPIsNodeAddress = "IPIsNodeAddress"
)

// EgressIPSpec is which pods leave the cluster from which addresses.
type EgressIPSpec struct {
	// EgressIPs are the addresses the selected pods' traffic leaves the
	// cluster from, each held by one node whose external subnet contains
	// it; several are spread over distinct nodes and balanced.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=45
	// +kubebuilder:validation:items:XValidation:rule="isIP(self)",message="must be an IPv4 or IPv6 address"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !isIP(a) || self.exists_one(b, isIP(b) && ip(b) == ip(a)))",message="egressIPs must not repeat an address"
	// +required
	EgressIPs []string `json:"egressIPs"`

	// NamespaceSelector picks the namespaces whose pods use the egress IPs.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="a selector's operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="a selector's In and NotIn expressions need values"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="a selector's Exists and DoesNotExist expressions take no values"
	// +required
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// PodSelector narrows the pods of those namespaces; when omitted, all
	// of them.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="a selector's operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="a selector's In and NotIn expressions need values"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="a selector's Exists and DoesNotExist expressions take no values"
	// +optional
	PodSelector metav1.LabelSelector `json:"podSelector,omitempty"`
}

// EgressIPStatusItem is one egress IP and the node holding it.
type EgressIPStatusItem struct {
	// Node holds the egress IP.
	Node string `json:"node"`
	// EgressIP is the address.
	EgressIP string `json:"egressIP"`
}

// EgressIPStatus is where the egress IPs are.
type EgressIPStatus struct {
	// Items are the egress IPs that have a node, one item each.
	// +optional
	Items []EgressIPStatusItem `json:"items,omitempty"`

	// Conditions: EgressIPsAssigned says whether every egress IP has a
	// node, and names those that have none, and why.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EgressIP makes the selected pods' traffic to outside the cluster leave
// from fixed addresses, in ovn-kubernetes' shape: cluster-manager gives
// each address to a node labelled k8s.ovn.org/egress-assignable whose
// external subnet holds it (status.items).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=eip
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="EgressIPs",type=string,JSONPath=`.spec.egressIPs[*]`
// +kubebuilder:printcolumn:name="Assigned Node",type=string,JSONPath=`.status.items[*].node`
// +kubebuilder:printcolumn:name="Assigned EgressIPs",type=string,JSONPath=`.status.items[*].egressIP`
type EgressIP struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EgressIPSpec `json:"spec"`
	// +optional
	Status EgressIPStatus `json:"status,omitempty"`
}

// EgressIPList is a list of EgressIPs.
// +kubebuilder:object:root=true
type EgressIPList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EgressIP `json:"items"`
}
