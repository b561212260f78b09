package egressips

import (
	"context"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// ServiceObjectPrefix starts the object name an EgressService's rows carry
// ("egressservice:<namespace>/<name>"), beside EgressIPs' names.
const ServiceObjectPrefix = "egressservice:"

// serviceObjects are the EgressServices of network's namespaces that have
// a host, as the builder's objects: the Service's endpoints (the pods its
// selector picks) leave through the host, SNATed there to the Service's
// load-balancer ingress IPs. An EgressService is an EgressIP whose one
// address is the load-balancer IP and whose one node is the elected host.
func (f *Feature) serviceObjects(ctx context.Context, network string) ([]egressip.Object, error) {
	if f.noServices {
		return nil, nil
	}
	var list v1.EgressServiceList
	if err := f.host.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []egressip.Object
	for i := range list.Items {
		es := &list.Items[i]
		host := es.Status.Host
		if host == "" || host == v1.EgressServiceHostAll || es.Spec.SourceIPBy == v1.SourceIPNetwork {
			continue
		}
		var svc corev1.Service
		if err := f.host.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Name}, &svc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Spec.Selector) == 0 {
			continue
		}
		// The Service's endpoints as an EgressIP would select them: its
		// namespace, its selector.
		as := v1.EgressIP{Spec: v1.EgressIPSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: es.Namespace}},
			PodSelector:       metav1.LabelSelector{MatchLabels: svc.Spec.Selector}}}
		namespaces, err := f.namespaces(ctx, network, []v1.EgressIP{as})
		if err != nil {
			return nil, err
		}
		pods, err := f.selected(ctx, &as, namespaces)
		if err != nil || len(pods) == 0 {
			if err != nil {
				return nil, err
			}
			continue
		}
		o := egressip.Object{Name: ServiceObjectPrefix + es.Namespace + "/" + es.Name, Pods: pods}
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if ip, err := netip.ParseAddr(in.IP); err == nil {
				o.Assignments = append(o.Assignments, egressip.Assignment{Node: host, IP: ip.Unmap()})
			}
		}
		if len(o.Assignments) > 0 {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// watchServices registers what changes EgressServices' rows: the objects
// (their host), and their Services (selector, load-balancer IPs), each
// the rows of its namespace's networks.
func (f *Feature) watchServices(b *builder.TypedBuilder[feature.Key], networkKeys func(context.Context, string) []feature.Key) {
	b.Watches(&v1.EgressService{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		return networkKeys(ctx, o.GetNamespace())
	}))
	b.Watches(&corev1.Service{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		var es v1.EgressService
		if f.host.Client.Get(ctx, client.ObjectKeyFromObject(o), &es) != nil {
			return nil
		}
		return networkKeys(ctx, o.GetNamespace())
	}))
}
