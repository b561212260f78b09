// Package epslicemirror keeps, for each Service of a namespace whose primary
// network is a user-defined network, EndpointSlices holding the selected
// pods' addresses on that network (Kubernetes' own slices hold their
// default-network addresses), and tells load balancers which slices to use.
package epslicemirror

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
)

// Labels of mirrored slices (the contract the zones' load balancers read).
const (
	// LabelServiceName holds the name of the Service a mirrored slice serves.
	LabelServiceName = "k8s.ovn.org/service-name"
	// LabelNetwork holds the name of the network whose addresses the slice
	// holds.
	LabelNetwork = "k8s.ovn.org/endpointslice-network"
	// ManagedBy is the discoveryv1.LabelManagedBy value of mirrored slices.
	ManagedBy = "ovn-udn-endpointslice-mirror"
)

// ForService returns the slices whose endpoints the service's load balancers
// use on network: on the default network, Kubernetes' own slices
// (kubernetes.io/service-name); on a user-defined network, the slices of the
// service's namespace labelled with LabelServiceName and LabelNetwork (the
// mirrored ones, or for a service without a selector the user's own). It
// lists by label in the service's namespace, which controller-runtime caches
// serve.
func ForService(ctx context.Context, c client.Reader, svc *corev1.Service, network string) ([]discoveryv1.EndpointSlice, error) {
	labels := client.MatchingLabels{LabelServiceName: svc.Name, LabelNetwork: network}
	if network == nodeinfo.DefaultNetwork {
		labels = client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}
	}
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(svc.Namespace), labels); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return list.Items, nil
}
