package connect

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

// Enables reports whether a connect lets t cross between its networks.
func Enables(cnc *v1.ClusterNetworkConnect, t v1.ConnectivityType) bool {
	return slices.Contains(cnc.Spec.ConnectivityEnabled, t)
}

// Active returns a connect's allocation when zones render it: accepted by
// cluster-manager, allocated, not being deleted.
func Active(cnc *v1.ClusterNetworkConnect) (Allocation, bool) {
	if cnc.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(cnc.Status.Conditions, v1.ConditionAccepted) {
		return Allocation{}, false
	}
	a, ok, err := ParseAllocation(cnc.Annotations)
	if err != nil || !ok {
		return Allocation{}, false
	}
	return a, true
}

// Peers returns the networks connected to network k for t by the active
// connects that enable t (sorted, k excluded): for ClusterIPServiceNetwork,
// the networks on whose switches k's service load balancers belong; for
// PodNetwork, the networks whose pods k's NetworkPolicy peers also select.
// It is the one place that says which networks a feature crosses to.
func Peers(cncs []v1.ClusterNetworkConnect, k Key, t v1.ConnectivityType) []Key {
	seen := map[Key]bool{}
	for i := range cncs {
		cnc := &cncs[i]
		if !Enables(cnc, t) {
			continue
		}
		a, ok := Active(cnc)
		if !ok {
			continue
		}
		if _, member := a.Subnets[k]; !member {
			continue
		}
		for o := range a.Subnets {
			if o != k {
				seen[o] = true
			}
		}
	}
	out := make([]Key, 0, len(seen))
	for o := range seen {
		out = append(out, o)
	}
	return sortedKeys(out)
}

// View is what those who read a connect for t (services for
// ClusterIPServiceNetwork, NetworkPolicy peers for PodNetwork) see of it:
// its networks' slices when it is active and enables t, else "". A change
// of a connect that leaves the view alone concerns none of them.
func View(cnc *v1.ClusterNetworkConnect, t v1.ConnectivityType) string {
	if cnc == nil || !Enables(cnc, t) {
		return ""
	}
	a, ok := Active(cnc)
	if !ok {
		return ""
	}
	return a.Subnets.Format()
}
