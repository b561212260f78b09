package zone

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Indexes are the cache indexes the zone lists with: NADs by network name,
// pods by node, by attachment key and by placement, and the features' own
// (feature.Indexer). A manager's cache (IndexNADs) or a fake client
// (render) must have them.
func Indexes() []kubeobj.Index {
	out := hostIndexes()
	for _, f := range features(nil, nil) {
		if ix, ok := f.(feature.Indexer); ok {
			out = append(out, ix.Indexes()...)
		}
	}
	return out
}

// hostIndexes are the indexes of the host's own lookups.
func hostIndexes() []kubeobj.Index {
	return []kubeobj.Index{
		{Object: &nadv1.NetworkAttachmentDefinition{}, Field: feature.NetworkNameIndex, Extract: func(o client.Object) []string {
			if name, ok := netconf.NetworkName(o.(*nadv1.NetworkAttachmentDefinition).Spec.Config); ok {
				return []string{name}
			}
			return nil
		}},
		{Object: &corev1.Pod{}, Field: feature.PodNodeIndex, Extract: func(o client.Object) []string {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				return []string{n}
			}
			return nil
		}},
		{Object: &corev1.Pod{}, Field: podKeysIndex, Extract: func(o client.Object) []string {
			nets, err := podnet.ParsePod(o)
			if err != nil {
				return nil
			}
			out := make([]string, 0, len(nets))
			for k := range nets {
				out = append(out, k)
			}
			return out
		}},
		{Object: &corev1.Pod{}, Field: podPlacementIndex, Extract: placementKeys},
	}
}

// IndexNADs registers Indexes in the manager's cache.
func IndexNADs(ctx context.Context, mgr manager.Manager) error {
	return kubeobj.AddIndexes(ctx, mgr.GetFieldIndexer(), Indexes()...)
}
