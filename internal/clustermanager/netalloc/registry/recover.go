package registry

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Recovery rebuilds allocation state from the API once, on first use, so that
// it happens after this replica wins leader election and before it allocates
// anything. Every reconciler that allocates calls Ensure first.
type Recovery struct {
	mu   sync.Mutex
	done bool
	// Reader must read the API server directly (not a cache that may not have
	// synced): mgr.GetAPIReader().
	Reader   client.Reader
	Networks *Networks
	Log      logr.Logger
	// Connects recovers the connect routers' tunnel keys too (from
	// ClusterNetworkConnects' annotations).
	Connects bool
}

// Ensure recovers the state if it has not been recovered yet.
func (r *Recovery) Ensure(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return nil
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Reader.List(ctx, &nads); err != nil {
		return fmt.Errorf("recovering network IDs: listing NADs: %w", err)
	}
	n, conflicts := RecoverNetworks(r.Networks, nads.Items)
	for _, c := range conflicts {
		r.Log.Error(c, "network allocation not recovered; it will be allocated afresh")
	}
	r.Log.Info("recovered network allocations", "networks", n, "nads", len(nads.Items))
	if r.Connects {
		var cncs v1.ClusterNetworkConnectList
		if err := r.Reader.List(ctx, &cncs); err != nil {
			return fmt.Errorf("recovering connect router tunnel keys: listing ClusterNetworkConnects: %w", err)
		}
		for _, cnc := range cncs.Items {
			v, ok := cnc.Annotations[v1.ConnectRouterTunnelKeyAnnotation]
			if !ok {
				continue
			}
			key, err := strconv.Atoi(v)
			if err == nil {
				err = r.Networks.RecoverKey(ConnectRouterKeyHolder(cnc.Name), key)
			}
			if err != nil {
				r.Log.Error(err, "connect router tunnel key not recovered; it will be allocated afresh", "clusterNetworkConnect", cnc.Name)
			}
		}
	}
	r.done = true
	return nil
}

// RecoverNetworks records the network IDs and tunnel keys found on NADs, oldest
// NAD first (so on a conflict the older network keeps its values). It returns
// how many networks were recovered and the conflicts it skipped.
func RecoverNetworks(n *Networks, nads []nadv1.NetworkAttachmentDefinition) (int, []error) {
	sorted := make([]*nadv1.NetworkAttachmentDefinition, len(nads))
	for i := range nads {
		sorted[i] = &nads[i]
	}
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var errs []error
	seen := map[string]bool{}
	for _, nad := range sorted {
		c, err := netconf.Parse(nad)
		if err != nil || c == nil {
			continue
		}
		id, keys, ok, err := netconf.ParseAllocation(nad.Annotations)
		if err != nil {
			errs = append(errs, fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err))
			continue
		}
		if !ok {
			continue
		}
		if err := n.Recover(c.Name, id, keys); err != nil {
			errs = append(errs, fmt.Errorf("NAD %s/%s: %w", nad.Namespace, nad.Name, err))
			continue
		}
		seen[c.Name] = true
	}
	return len(seen), errs
}
