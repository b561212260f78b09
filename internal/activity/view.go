package activity

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
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
