package zone

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// podPlacementIndex indexes pods by "<namespace>/<nad>" of the primary
// network podnet.PlacementAnnotation records.
const podPlacementIndex = "k8s.ovn.org/primary-udn"

func placementKeys(o client.Object) []string {
	if name := o.GetAnnotations()[podnet.PlacementAnnotation]; name != "" {
		return []string{podnet.Key(o.GetNamespace(), name)}
	}
	return nil
}

// roomFor answers, for the zone's node, whether a primary network has an
// address left for one more pod (podnet.HasRoom): a Layer3 network when
// the node's slice pools do, or when the node has no slice of it yet and
// cluster-manager has not said it cannot give one; a Layer2 network when its subnets do, counting
// the addresses of its pods' attachments and one per pod already placed on
// it whose attachment cluster-manager has not written yet. The zone places
// pods (docs/pods.md); cluster-manager, which allocates Layer2 addresses,
// follows its record.
func (r *Reconciler) roomFor(ctx context.Context, local nodeinfo.Info) podnet.HasRoom {
	return func(p podnet.Primary) bool {
		switch p.Conf.Topology {
		case netconf.TopologyLayer3:
			slices := local.Subnets[p.Network]
			if len(slices) == 0 {
				// Not given (exhausted): no room. Not given yet: it is
				// coming (cluster-manager gives a node its slices of its
				// pods' networks), so the network has room as it would
				// with its slice; the pod's attachment waits for it.
				return !local.Subnets.Lacks(p.Network)
			}
			pools, err := r.ipam.Pools(p.Network, slices, p.Conf.ExcludePrefixes())
			if err != nil {
				return false
			}
			for _, pool := range pools {
				if !pool.HasRoom() {
					return false
				}
			}
			return true
		case netconf.TopologyLayer2:
			ok, err := r.layer2Room(ctx, p)
			if err != nil {
				log.FromContext(ctx).Error(err, "counting a Layer2 network's addresses", "network", p.Network)
			}
			return ok
		}
		return false
	}
}

// unplacedPods returns the keys of the pods of a deleted pod's namespace
// still waiting for a primary network (scheduled, no attachments yet), when
// the deleted pod was placed on one of several.
func (r *Reconciler) unplacedPods(ctx context.Context, gone *corev1.Pod) []feature.Key {
	if gone.Annotations[podnet.PlacementAnnotation] == "" {
		return nil
	}
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(gone.Namespace)); err != nil {
		return nil
	}
	var out []feature.Key
	for _, p := range list.Items {
		if _, annotated := p.Annotations[podnet.Annotation]; !annotated && p.Spec.NodeName != "" && !feature.PodDone(&p) {
			out = append(out, feature.PodKey(p.Namespace, p.Name))
		}
	}
	return out
}

// layer2Room builds the network's pools from its pods' annotations (its
// NADs in every namespace) and tells whether each still has an address.
func (r *Reconciler) layer2Room(ctx context.Context, p podnet.Primary) (bool, error) {
	var pools []*allocator.IPPool
	for _, s := range p.Conf.ParsedSubnets() {
		pool, err := allocator.NewNetworkPool(s.CIDR, p.Conf.ExcludePrefixes(), true) // as cluster-manager's (podalloc)
		if err != nil {
			return false, err
		}
		pools = append(pools, pool)
	}
	keys, err := r.networkKeys(ctx, p.Network)
	if err != nil {
		return false, err
	}
	for _, key := range keys {
		var attached, placed corev1.PodList
		if err := r.Client.List(ctx, &attached, client.MatchingFields{podKeysIndex: key}); err != nil {
			return false, err
		}
		if err := r.Client.List(ctx, &placed, client.MatchingFields{podPlacementIndex: key}); err != nil {
			return false, err
		}
		for i := range attached.Items {
			pod := &attached.Items[i]
			if feature.PodDone(pod) {
				continue
			}
			nets, _ := podnet.ParsePod(pod)
			addrs, _ := nets[key].Prefixes()
			for _, a := range addrs {
				for _, pool := range pools {
					if pool.CIDR().Contains(a.Addr()) {
						_ = pool.Reserve(pod.Namespace+"/"+pod.Name, a.Addr())
					}
				}
			}
		}
		for i := range placed.Items {
			pod := &placed.Items[i]
			nets, _ := podnet.ParsePod(pod)
			if _, ok := nets[key]; ok || feature.PodDone(pod) {
				continue
			}
			for _, pool := range pools {
				if _, err := pool.Allocate(pod.Namespace + "/" + pod.Name); err != nil {
					return false, nil
				}
			}
		}
	}
	for _, pool := range pools {
		if !pool.HasRoom() {
			return false, nil
		}
	}
	return true, nil
}
