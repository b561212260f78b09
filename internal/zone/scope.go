package zone

import (
	"context"
	"fmt"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scope returns the namespace's networks and the zone's node; ok is false
// when there is nothing to render (no network, no node).
func (r *Reconciler) scope(ctx context.Context, namespace string) (feature.Scope, bool, error) {
	primaries, ok, err := r.namespacePrimaries(ctx, namespace)
	if err != nil {
		return feature.Scope{}, false, err
	}
	if !ok {
		return feature.Scope{}, false, &feature.NotRendered{Reason: fmt.Sprintf("namespace %s has no usable primary network yet", namespace)}
	}
	var sc feature.Scope
	for _, primary := range primaries {
		n, exists, err := r.network(ctx, primary.Network)
		if err != nil {
			return feature.Scope{}, false, &feature.NotRendered{Reason: err.Error()}
		}
		if exists && n.IsPrimary() {
			sc.Nets = append(sc.Nets, feature.ScopedNetwork{Primary: primary, Network: n})
		}
	}
	if len(sc.Nets) == 0 {
		return feature.Scope{}, false, nil
	}
	local, ok, err := r.usableLocalNode(ctx)
	if err != nil || !ok {
		return feature.Scope{}, false, err
	}
	sc.Local = local
	return sc, true, nil
}

// namespacePrimaries returns a namespace's primary networks (podnet's rule,
// oldest first; none for a namespace labelled for a network that has no
// NAD, and for a namespace that is gone); ok is false while they cannot be
// told.
func (r *Reconciler) namespacePrimaries(ctx context.Context, namespace string) ([]podnet.Primary, bool, error) {
	nsObj := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: namespace}, nsObj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, true, nil // no namespace, no network: nothing to serve
		}
		return nil, false, err
	}
	nads, err := podnet.NamespaceNADs(ctx, r.Client, namespace)
	if err != nil {
		return nil, false, err
	}
	p, ok := podnet.NamespacePrimaries(nsObj, nads, v1.PrimaryNetworkLabel)
	return p, ok, nil
}

// primaryNetworks returns the names of a namespace's primary networks
// (namespacePrimaries).
func (r *Reconciler) primaryNetworks(ctx context.Context, namespace string) ([]string, bool, error) {
	prims, ok, err := r.namespacePrimaries(ctx, namespace)
	var out []string
	for _, p := range prims {
		out = append(out, p.Network)
	}
	return out, ok, err
}
