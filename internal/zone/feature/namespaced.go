package feature

import (
	"context"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// PerNamespace describes a feature keyed by namespace whose object is one
// per namespace with a fixed name (EgressFirewall, EgressQoS "default").
type PerNamespace struct {
	// New returns an empty object of the kind.
	New func() client.Object
	// Name is the one name the object may have.
	Name string
	// Key is a namespace's key.
	Key func(namespace string) Key
	// Pods passes the pod events that change the feature's rows (on the
	// zone's node).
	Pods predicate.Predicate
}

// WatchPerNamespace registers a PerNamespace feature's watches: its object
// (its spec: status writes are not its business), and, while the
// namespace holds such an object, the zone's node's pods (p.Pods) and the
// namespace's NADs (its networks).
func WatchPerNamespace(b *builder.TypedBuilder[Key], h *Host, p PerNamespace) {
	b.Watches(p.New(), OwnKey(func(o client.Object) Key { return p.Key(o.GetNamespace()) }),
		builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	held := func(ctx context.Context, namespace string) []Key {
		if h.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Name}, p.New()) != nil {
			return nil
		}
		return []Key{p.Key(namespace)}
	}
	b.Watches(&corev1.Pod{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
		if o.(*corev1.Pod).Spec.NodeName != h.Zone {
			return nil
		}
		return held(ctx, o.GetNamespace())
	}), builder.WithPredicates(p.Pods))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, Key](func(ctx context.Context, o client.Object) []Key {
		return held(ctx, o.GetNamespace())
	}))
}
