package kubeobj_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

func TestPatchAnnotations(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"other": "kept", "a": "old"}}}
	c := fake.NewClientBuilder().WithScheme(kubeobj.NewScheme()).WithObjects(node).Build()
	get := func() *corev1.Node {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: "n1"}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	n := get()
	wrote, err := kubeobj.PatchAnnotations(ctx, c, n, map[string]string{"a": "new", "b": "added"})
	if err != nil || !wrote {
		t.Fatalf("first patch: wrote %v, err %v", wrote, err)
	}
	stored := get()
	if d := cmp.Diff(map[string]string{"other": "kept", "a": "new", "b": "added"}, stored.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	if n.ResourceVersion != stored.ResourceVersion {
		t.Errorf("the caller's object was not updated to the stored one")
	}

	wrote, err = kubeobj.PatchAnnotations(ctx, c, stored, map[string]string{"a": "new"})
	if err != nil || wrote {
		t.Fatalf("patch with nothing to change: wrote %v, err %v", wrote, err)
	}
	if get().ResourceVersion != stored.ResourceVersion {
		t.Error("a patch with nothing to change wrote")
	}
}
