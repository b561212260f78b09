package activity

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// ClientView answers Of from a Kubernetes client (a cache or the API
// server). It knows no connects: a network used on a node only by a
// connected network's pods is not seen there. The zone controllers have
// their own view, which knows them.
type ClientView struct {
	Ctx    context.Context
	Reader client.Reader
}

// NetworkNamespaces lists the NADs and returns the namespaces of the
// network's.
func (v ClientView) NetworkNamespaces(network string) ([]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := v.Reader.List(v.Ctx, &nads); err != nil {
		return nil, err
	}
	var out []string
	for i := range nads.Items {
		if name, ok := netconf.NetworkName(nads.Items[i].Spec.Config); ok && name == network {
			out = append(out, nads.Items[i].Namespace)
		}
	}
	return out, nil
}

// Connected returns nothing.
func (v ClientView) Connected(string) ([]string, error) { return nil, nil }

// NamespacePods lists the namespace's pods.
func (v ClientView) NamespacePods(namespace string) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := v.Reader.List(v.Ctx, &list, client.InNamespace(namespace))
	return list.Items, err
}

// NamespaceServices lists the namespace's Services.
func (v ClientView) NamespaceServices(namespace string) ([]corev1.Service, error) {
	var list corev1.ServiceList
	err := v.Reader.List(v.Ctx, &list, client.InNamespace(namespace))
	return list.Items, err
}

// NamespaceEgressNodes reads the namespace and the EgressIPs (none when
// the CRD is not installed).
func (v ClientView) NamespaceEgressNodes(namespace string) ([]string, error) {
	return NamespaceEgressNodes(v.Ctx, v.Reader, namespace)
}

// NamespaceEgressNodes answers View.NamespaceEgressNodes from a reader:
// EgressNodes of the namespace's labels and the egress-assignable nodes
// (of those the reader holds), none when the namespace is gone or the
// EgressIP CRD is not installed.
func NamespaceEgressNodes(ctx context.Context, r client.Reader, namespace string) ([]string, error) {
	var eips v1.EgressIPList
	// Read only, never kept: a cache's objects themselves.
	if err := r.List(ctx, &eips, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	if len(eips.Items) == 0 {
		return nil, nil
	}
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	assignable, err := AssignableNodes(ctx, r)
	if err != nil {
		return nil, err
	}
	return EgressNodes(eips.Items, ns.Labels, assignable), nil
}

// AssignableNodes lists the nodes labelled egress-assignable.
func AssignableNodes(ctx context.Context, r client.Reader) ([]string, error) {
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.HasLabels{v1.EgressAssignableLabel}); err != nil {
		return nil, err
	}
	out := make([]string, len(nodes.Items))
	for i := range nodes.Items {
		out[i] = nodes.Items[i].Name
	}
	return out, nil
}

// SelectedNamespaces returns the names of the namespaces the EgressIPs
// (nil ones skipped) select, each once, in the order found.
func SelectedNamespaces(ctx context.Context, r client.Reader, eips ...*v1.EgressIP) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, e := range eips {
		if e == nil {
			continue
		}
		sel, err := kubeobj.Selector(&e.Spec.NamespaceSelector)
		if err != nil {
			continue // the API refuses selectors that do not parse
		}
		var namespaces corev1.NamespaceList
		if err := r.List(ctx, &namespaces, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, err
		}
		for _, ns := range namespaces.Items {
			if !seen[ns.Name] {
				seen[ns.Name] = true
				out = append(out, ns.Name)
			}
		}
	}
	return out, nil
}
