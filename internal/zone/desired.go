package zone

import (
	"context"

	"github.com/ovn-udn/ovn-udn/internal/zone/egressfirewalls"
	"github.com/ovn-udn/ovn-udn/internal/zone/egressqoses"
	"github.com/ovn-udn/ovn-udn/internal/zone/vms"

	svcrows "github.com/ovn-udn/ovn-udn/internal/rows/services"

	"github.com/ovn-org/libovsdb/model"
	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/rows/connectrouter"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// What render and explain read of the features in packages of their own:
// each delegates to its feature, listed on first use.

// LinkKeys returns the keys of the links the namespaces' primary networks
// make, sorted (`ovn-udn render` renders them with DesiredLink).
func (r *Reconciler) LinkKeys(ctx context.Context) ([]feature.Key, error) {
	return r.linksFeature().SortedKeys(ctx)
}

// DesiredLink returns the rows and contributions of a link's key in the
// zone (links.Feature.Desired).
func (r *Reconciler) DesiredLink(ctx context.Context, key feature.Key) (primarylinks.Result, error) {
	return r.linksFeature().Desired(ctx, key)
}

// DesiredConnect returns the rows and contributions of a connect in the
// zone, and the connect (connects.Feature.Desired).
func (r *Reconciler) DesiredConnect(ctx context.Context, name string) (connectrouter.Result, *v1.ClusterNetworkConnect, error) {
	r.featuresOnce.Do(r.setFeatures)
	return r.connects.Desired(ctx, name)
}

// DesiredService returns the rows a Service ("<namespace>/<name>") should
// have in the zone (services.Feature.Desired).
func (r *Reconciler) DesiredService(ctx context.Context, key string) (svcrows.Output, error) {
	r.featuresOnce.Do(r.setFeatures)
	return r.services.Desired(ctx, key)
}

// DesiredPolicy returns the rows a policy key should have in the zone and
// the ports it waits for (policies.Feature.Desired).
func (r *Reconciler) DesiredPolicy(ctx context.Context, key feature.Key) ([]model.Model, []string, error) {
	r.featuresOnce.Do(r.setFeatures)
	return r.policies.Desired(ctx, key)
}

// PolicyKeys returns the keys of every policy, default deny and peer the
// cluster's NetworkPolicies make, sorted (policies.Feature.PolicyKeys).
func (r *Reconciler) PolicyKeys(ctx context.Context) []feature.Key {
	r.featuresOnce.Do(r.setFeatures)
	return r.policies.PolicyKeys(ctx)
}

// DesiredEgressIPs returns a network's EgressIP rows in the zone
// (egressips.Feature.Desired).
func (r *Reconciler) DesiredEgressIPs(ctx context.Context, network string) (egressip.Result, error) {
	r.featuresOnce.Do(r.setFeatures)
	return r.egressips.Desired(ctx, network)
}

// DesiredEgressFirewall returns a namespace's EgressFirewall rows in the
// zone (egressfirewalls.Feature.Desired).
func (r *Reconciler) DesiredEgressFirewall(ctx context.Context, namespace string) (egressfirewalls.Outcome, error) {
	r.featuresOnce.Do(r.setFeatures)
	return r.firewalls.Desired(ctx, namespace)
}

// DesiredEgressQoS returns a namespace's EgressQoS rows in the zone
// (egressqoses.Feature.Desired).
func (r *Reconciler) DesiredEgressQoS(ctx context.Context, namespace string) (egressqoses.Outcome, error) {
	r.featuresOnce.Do(r.setFeatures)
	return r.qoses.Desired(ctx, namespace)
}

// vmsFeature is the VMs feature (a network's whole rendering merges the
// VMs' ports).
func (r *Reconciler) vmsFeature() *vms.Feature {
	r.featuresOnce.Do(r.setFeatures)
	return r.vms
}
