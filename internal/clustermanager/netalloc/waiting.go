package netalloc

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// tellWaitingPods records a Warning Event on every pod of node that waits
// for a slice the node could not get (failed, by network, with the reason
// the node's own Event carries): the pod's owner, who usually cannot read
// Nodes, learns why it stays Pending. A pod waits on a network when it is
// Pending on node and the network is the default network (every pod not on
// the host's network), a primary network of its namespace, or a secondary
// network its networks annotation selects. Best effort: a failed list is
// logged and tried again at the node's next sync.
func (r *NodeController) tellWaitingPods(ctx context.Context, node string, failed map[string]error, reason func(network string) string) {
	if len(failed) == 0 {
		return
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{whereused.PodNodeField: node}); err != nil {
		log.FromContext(ctx).V(1).Info("pods waiting for a slice not told", "node", node, "error", err)
		return
	}
	nsNets := map[string]nsNetworks{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node || p.Spec.HostNetwork || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		nets, ok := nsNets[p.Namespace]
		if !ok {
			var err error
			if nets, err = r.namespaceNetworks(ctx, p.Namespace); err != nil {
				log.FromContext(ctx).V(1).Info("pods waiting for a slice not told", "namespace", p.Namespace, "error", err)
				continue
			}
			nsNets[p.Namespace] = nets
		}
		for _, network := range nets.of(p) {
			if ferr, ok := failed[network]; ok {
				r.Recorder.Eventf(p, corev1.EventTypeWarning, reason(network),
					"network %s: node %s has no subnet of the network (%v); the pod waits until one is free", network, node, ferr)
			}
		}
	}
}

// nsNetworks are a namespace's ovn-udn networks: by NAD name, and its
// primary networks.
type nsNetworks struct {
	byNAD     map[string]string
	primaries []string
}

// namespaceNetworks reads a namespace's ovn-udn networks from its NADs.
func (r *NodeController) namespaceNetworks(ctx context.Context, namespace string) (nsNetworks, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.InNamespace(namespace)); err != nil {
		return nsNetworks{}, err
	}
	out := nsNetworks{byNAD: map[string]string{}}
	for i := range nads.Items {
		c, err := netconf.Parse(&nads.Items[i])
		if err != nil || c == nil {
			continue // malformed, or another plugin's
		}
		out.byNAD[nads.Items[i].Name] = c.Name
		if c.IsPrimary() {
			out.primaries = append(out.primaries, c.Name)
		}
	}
	return out, nil
}

// of returns the networks a pod of the namespace attaches to that need a
// node slice: the default network, the namespace's primary networks, and
// the secondary ones it selects. Selections of NADs in other namespaces
// are not followed: they are refused to the pod anyway.
func (n nsNetworks) of(p *corev1.Pod) []string {
	out := append([]string{nodeinfo.DefaultNetwork}, n.primaries...)
	sels, err := netconf.ParseNetworkSelections(p.Annotations[netconf.NetworksAnnotation], p.Namespace)
	if err != nil {
		return out
	}
	for _, s := range sels {
		if network, ok := n.byNAD[s.Name]; ok && s.Namespace == p.Namespace {
			out = append(out, network)
		}
	}
	return out
}
