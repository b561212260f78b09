// Package v1 holds the k8s.ovn.org/v1 API of ovn-udn: UserDefinedNetwork
// (namespaced, for tenants) and ClusterUserDefinedNetwork (cluster-scoped, for
// administrators), ClusterNetworkConnect (cluster-scoped, connects
// networks) and EgressIP (cluster-scoped, in ovn-kubernetes' shape: fixed
// addresses pods leave the cluster from). Validation that the API server can do lives here as CEL
// rules; docs/api.md explains every field, rule and status reason.
//
// +kubebuilder:object:generate=true
// +groupName=k8s.ovn.org
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of this package.
var GroupVersion = schema.GroupVersion{Group: "k8s.ovn.org", Version: "v1"}

var (
	// SchemeBuilder registers this package's types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&UserDefinedNetwork{}, &UserDefinedNetworkList{},
		&ClusterUserDefinedNetwork{}, &ClusterUserDefinedNetworkList{},
		&ClusterNetworkConnect{}, &ClusterNetworkConnectList{},
		&EgressIP{}, &EgressIPList{},
		&EgressFirewall{}, &EgressFirewallList{},
		&EgressQoS{}, &EgressQoSList{},
		&EgressService{}, &EgressServiceList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
