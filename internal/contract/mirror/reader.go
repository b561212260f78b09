package mirror

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// ForService returns the EndpointSlices whose endpoints svc's load balancers
// use on network, the primary network of svc's namespace (podnet.Primary's
// Network):
//
//   - on the default network ("default"), the Service's own slices, labelled
//     discoveryv1.LabelServiceName=<svc name>;
//   - on a user-defined network, the slices labelled LabelServiceName=<svc
//     name> and LabelNetwork=<network>: the mirrors kept here for a Service
//     with a selector, and for a Service without one the slices its user made
//     with those labels.
//
// It does one List in svc's namespace with a label selector and nothing
// else, so c may be a controller-runtime cache (which indexes namespaces and
// matches labels) as well as a direct client; it never reads by field.
func ForService(ctx context.Context, c client.Reader, svc *corev1.Service, network string) ([]discoveryv1.EndpointSlice, error) {
	sel := client.MatchingLabels{LabelServiceName: svc.Name, LabelNetwork: network}
	if network == netconf.DefaultNetworkName {
		sel = client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}
	}
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(svc.Namespace), sel); err != nil {
		return nil, fmt.Errorf("listing EndpointSlices of service %s/%s on network %s: %w", svc.Namespace, svc.Name, network, err)
	}
	return list.Items, nil
}
