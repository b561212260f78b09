package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EgressService values, as ovn-kubernetes spells them.
const (
	// EgressServiceHostAll is the host of a sourceIPBy=Network object:
	// its pods leave from every node as before.
	EgressServiceHostAll = "ALL"
	// EgressServiceLabelPrefix starts the label cluster-manager puts on an
	// EgressService's host ("egress-service.k8s.ovn.org/<namespace>-<name>":
	// ""), for a load-balancer announcer to follow.
	EgressServiceLabelPrefix = "egress-service.k8s.ovn.org/"
)

// SourceIPMode is where an EgressService's pods' traffic takes its source
// address from.
// +kubebuilder:validation:Enum=LoadBalancerIP;Network
type SourceIPMode string

// Source address modes.
const (
	// SourceIPLoadBalancer: the Service's load-balancer ingress IP, through
	// one elected host.
	SourceIPLoadBalancer SourceIPMode = "LoadBalancerIP"
	// SourceIPNetwork: the network's own egress (each pod's node).
	SourceIPNetwork SourceIPMode = "Network"
)

// EgressServiceSpec is how the endpoints of a LoadBalancer Service of the
// same name leave the cluster.
type EgressServiceSpec struct {
	// SourceIPBy is LoadBalancerIP (the default) or Network.
	// +optional
	SourceIPBy SourceIPMode `json:"sourceIPBy,omitempty"`
	// NodeSelector limits the nodes that may be the host.
	// +optional
	NodeSelector metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// Network names the host's routing table (VRF) the traffic and its
	// replies use; empty: the host's default routing. Accepted; the VRFs
	// themselves are issue 52's (docs/egressservice.md).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Network string `json:"network,omitempty"`
}

// EgressServiceStatus names the host.
type EgressServiceStatus struct {
	// Host is the node the service's traffic leaves (and its load-balancer
	// IP is answered) from; "ALL" for sourceIPBy=Network; empty while no
	// node can be.
	Host string `json:"host"`
}

// EgressService makes the endpoints of the LoadBalancer Service of the
// same name leave the cluster from the Service's load-balancer IP, through
// one host that cluster-manager elects, in ovn-kubernetes' shape.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=egressservices,singular=egressservice
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Assigned Host",type=string,JSONPath=`.status.host`
type EgressService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec EgressServiceSpec `json:"spec,omitempty"`
	// +optional
	Status EgressServiceStatus `json:"status,omitempty"`
}

// EgressServiceList is a list of EgressServices.
// +kubebuilder:object:root=true
type EgressServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EgressService `json:"items"`
}
