package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EgressQoS statuses and its zones' condition, as ovn-kubernetes spells
// them.
const (
	// EgressQoSApplied: every zone with pods of the namespace marks their
	// traffic as the rules say.
	EgressQoSApplied = "EgressQoS Rules applied"
	// EgressQoSNotApplied: some zone could not (its condition says why).
	EgressQoSNotApplied = "EgressQoS Rules not correctly applied"
	// EgressQoSReadyInZone begins the type of each zone's condition
	// ("Ready-In-Zone-node1").
	EgressQoSReadyInZone = "Ready-In-Zone-"
	// EgressQoSMaxRules is how many rules an object may have (priorities
	// 1000 down to 1).
	EgressQoSMaxRules = 1000
)

// EgressQoSRule marks the traffic of some of the namespace's pods to a
// destination with a DSCP value.
type EgressQoSRule struct {
	// DSCP is the value written in the IP header's DS field (0-63).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=63
	// +required
	DSCP int `json:"dscp"`
	// DstCIDR limits the rule to traffic to this CIDR; when omitted, all
	// traffic leaving the namespace's pods.
	// +kubebuilder:validation:MaxLength=49
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="dstCIDR must be an IPv4 or IPv6 CIDR, such as 203.0.113.0/24"
	// +optional
	DstCIDR *string `json:"dstCIDR,omitempty"`
	// PodSelector limits the rule to the namespace's pods it selects;
	// when omitted, every pod of the namespace.
	// +optional
	PodSelector metav1.LabelSelector `json:"podSelector,omitempty"`
}

// EgressQoSSpec is the namespace's rules, the first matching wins.
type EgressQoSSpec struct {
	// Egress are the rules.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	// +required
	Egress []EgressQoSRule `json:"egress"`
}

// EgressQoSStatus says whether the rules are applied.
type EgressQoSStatus struct {
	// Status is "EgressQoS Rules applied" or "EgressQoS Rules not
	// correctly applied" (cluster-manager, from the conditions).
	// +optional
	Status string `json:"status,omitempty"`
	// Conditions are each zone's own: type "Ready-In-Zone-<zone>", each
	// written only by its zone.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EgressQoS marks the DSCP of a namespace's pods' egress traffic, in
// ovn-kubernetes' shape: one object per namespace, named "default", whose
// rules become OVN QoS rows on the switches of every network the
// namespace's pods use.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=egressqoses,singular=egressqos
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.status`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'default'",message="an EgressQoS must be named default: one per namespace"
type EgressQoS struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EgressQoSSpec `json:"spec"`
	// +optional
	Status EgressQoSStatus `json:"status,omitempty"`
}

// EgressQoSList is a list of EgressQoSes.
// +kubebuilder:object:root=true
type EgressQoSList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EgressQoS `json:"items"`
}
