// Package kubeobj holds the small Kubernetes object chores every component
// repeats: building a scheme, setting annotations without needless writes, and
// ordering objects oldest first for recovery, and reading a pod's readiness.
package kubeobj

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewScheme returns a scheme with the built-in Kubernetes types and those the
// adders register. It panics if an adder fails: schemes are built at start-up
// from generated code.
func NewScheme(adders ...func(*runtime.Scheme) error) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, adders...) {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// PatchAnnotations sets want on obj's annotations with a merge patch of just
// those keys, and writes nothing when obj already has these values. It
// reports whether it wrote; obj holds the stored object afterwards.
func PatchAnnotations(ctx context.Context, c client.Client, obj client.Object, want map[string]string) (bool, error) {
	current := obj.GetAnnotations()
	changed := false
	for k, v := range want {
		if current[k] != v {
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	updated := make(map[string]string, len(current)+len(want))
	for k, v := range current {
		updated[k] = v
	}
	for k, v := range want {
		updated[k] = v
	}
	obj.SetAnnotations(updated)
	if err := c.Patch(ctx, obj, patch); err != nil {
		name := obj.GetName()
		if ns := obj.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		return false, fmt.Errorf("annotating %s: %w", name, err)
	}
	return true, nil
}

// Client rate limits of the long-running components (their --kube-api-qps
// and --kube-api-burst defaults). client-go's own (5 queries/s, burst 10)
// made one tenant's burst of 300 networks take minutes while every other
// tenant waited behind it.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// SortOldestFirst orders objects by creation time, then namespace and name:
// the order in which recovery lets the older object keep a contested value.
func SortOldestFirst[T any, PT interface {
	*T
	metav1.Object
}](items []T) {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := PT(&items[i]), PT(&items[j])
		ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
		if !ta.Equal(&tb) {
			return ta.Before(&tb)
		}
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	})
}

// Index is a cache field index: objects like Object listed by Field's
// values, which Extract gives.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// AddIndexes registers indexes with a cache's field indexer.
func AddIndexes(ctx context.Context, indexer client.FieldIndexer, indexes ...Index) error {
	for _, i := range indexes {
		if err := indexer.IndexField(ctx, i.Object, i.Field, i.Extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.Object, i.Field, err)
		}
	}
	return nil
}

// PodReady reports whether a pod's Ready condition is true (its kubelet
// found every container ready).
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Installed reports whether the API serves a kind: false only when the
// mapper has no match for it (its CRD absent), true on any other answer, so
// that a discovery hiccup never turns a feature off. Callers check it once,
// at start (a CRD installed later needs a restart).
func Installed(m meta.RESTMapper, gvk schema.GroupVersionKind) bool {
	_, err := m.RESTMapping(gvk.GroupKind(), gvk.Version)
	return !meta.IsNoMatchError(err)
}

// NodeReady reports whether a Node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
