package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EgressFirewall statuses, as ovn-kubernetes spells them (status.status).
const (
	// EgressFirewallApplied: every node that renders the namespace's pods
	// enforces every rule.
	EgressFirewallApplied = "EgressFirewall Rules applied"
	// EgressFirewallNotApplied begins the status of an object some rule of
	// which is not enforced; the rest names the rule and why.
	EgressFirewallNotApplied = "EgressFirewall Rules not correctly applied"
	// EgressFirewallMaxRules is how many rules an object may have (the
	// ACL priorities 10000 down to 2000 leave room for 8001; the API
	// takes ovn-kubernetes' round 8000).
	EgressFirewallMaxRules = 8000
)

// EgressFirewallRuleType is a rule's verdict.
// +kubebuilder:validation:Enum=Allow;Deny
type EgressFirewallRuleType string

// Rule verdicts.
const (
	EgressFirewallRuleAllow EgressFirewallRuleType = "Allow"
	EgressFirewallRuleDeny  EgressFirewallRuleType = "Deny"
)

// EgressFirewallPort is a destination port and its protocol.
type EgressFirewallPort struct {
	// Protocol is TCP, UDP or SCTP.
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +required
	Protocol string `json:"protocol"`
	// Port is the destination port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port"`
}

// EgressFirewallDestination is where a rule's traffic goes: exactly one of
// a CIDR, a DNS name or a node selector.
// +kubebuilder:validation:XValidation:rule="[has(self.cidrSelector), has(self.dnsName), has(self.nodeSelector)].filter(x, x).size() == 1",message="to must have exactly one of cidrSelector, dnsName and nodeSelector"
type EgressFirewallDestination struct {
	// CIDRSelector is an IPv4 or IPv6 CIDR. The namespace's network's own
	// subnets are never covered by it.
	// +kubebuilder:validation:MaxLength=49
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="cidrSelector must be an IPv4 or IPv6 CIDR, such as 203.0.113.0/24"
	// +optional
	CIDRSelector string `json:"cidrSelector,omitempty"`
	// DNSName is a host name, resolved by the zone controllers and kept up
	// to date from its records' TTLs (docs/egressfirewall.md). A wildcard
	// ("*.example.com") is accepted, as in ovn-kubernetes, but has no
	// address here: its rule is reported as not applied.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?([A-Za-z0-9-]+\.)*[A-Za-z0-9-]+\.?$`
	// +optional
	DNSName string `json:"dnsName,omitempty"`
	// NodeSelector stands for the primary addresses of the nodes it
	// selects. Its expressions are checked by the zones, not by CEL (8000
	// rules of three selector checks each exceed the API server's CEL
	// budget): a malformed one is reported in the status.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
}

// EgressFirewallRule is one rule: its verdict for traffic to a destination
// (and ports).
type EgressFirewallRule struct {
	// Type is Allow or Deny.
	// +required
	Type EgressFirewallRuleType `json:"type"`
	// Ports limit the rule to these destination ports; none: every port
	// and protocol.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Ports []EgressFirewallPort `json:"ports,omitempty"`
	// To is the destination.
	// +required
	To EgressFirewallDestination `json:"to"`
}

// EgressFirewallSpec is the namespace's ordered rules.
type EgressFirewallSpec struct {
	// Egress are the rules, first match wins; traffic no rule matches is
	// allowed.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8000
	// +required
	Egress []EgressFirewallRule `json:"egress"`
}

// EgressFirewallStatus is whether the rules are enforced.
type EgressFirewallStatus struct {
	// Status is "EgressFirewall Rules applied", or "EgressFirewall Rules
	// not correctly applied: " and the first rule that is not, and why.
	// +optional
	Status string `json:"status,omitempty"`
	// Messages are each zone's own word ("node1: EgressFirewall Rules
	// applied"); each zone writes only its own.
	// +listType=set
	// +optional
	Messages []string `json:"messages,omitempty"`
}

// EgressFirewall limits where a namespace's pods may send traffic outside
// the cluster, in ovn-kubernetes' shape: one object per namespace, named
// "default", whose rules are checked in order on every network the
// namespace's pods use. Traffic within the cluster (the network's own
// subnets, services) is never affected.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ef
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="EgressFirewall Status",type=string,JSONPath=`.status.status`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'default'",message="an EgressFirewall must be named default: one per namespace"
type EgressFirewall struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EgressFirewallSpec `json:"spec"`
	// +optional
	Status EgressFirewallStatus `json:"status,omitempty"`
}

// EgressFirewallList is a list of EgressFirewalls.
// +kubebuilder:object:root=true
type EgressFirewallList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EgressFirewall `json:"items"`
}
