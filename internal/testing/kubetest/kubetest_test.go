package kubetest_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

func widget(name string, min, max int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.ovn-udn.io/v1")
	u.SetKind("Widget")
	u.SetNamespace("default")
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, min, "spec", "min")
	_ = unstructured.SetNestedField(u.Object, max, "spec", "max")
	return u
}

// TestCELRuleEnforced proves the harness runs a real API server that installs
// CRDs and enforces their x-kubernetes-validations rules.
func TestCELRuleEnforced(t *testing.T) {
	env := kubetest.New(t, kubetest.Options{CRDDirs: []string{filepath.Join("testdata", "crd")}})
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	if err := c.Create(ctx, widget("ok", 1, 2)); err != nil {
		t.Fatalf("valid widget rejected: %v", err)
	}
	err = c.Create(ctx, widget("bad", 3, 2))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid widget: got %v, want an Invalid error", err)
	}
	if !strings.Contains(err.Error(), "min must not exceed max") {
		t.Fatalf("invalid widget: error %q does not carry the rule's message", err)
	}
}

// TestControllerManager: with Options.ControllerManager, owned objects are
// garbage-collected and namespaces finish deleting, as in a real cluster.
func TestControllerManager(t *testing.T) {
	env := kubetest.New(t, kubetest.Options{CRDDirs: []string{}, ControllerManager: true})
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gc"}}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gc", Name: "owner"}}
	for _, o := range []client.Object{ns, owner} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "gc", Name: "child",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}
	if err := c.Create(ctx, child); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	gone := func(o client.Object) func() (bool, error) {
		return func() (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(o), o)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}
	}
	if err := proc.WaitFor(time.Minute, 50*time.Millisecond, gone(child)); err != nil {
		t.Fatalf("owned ConfigMap not garbage-collected: %v", err)
	}
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := proc.WaitFor(time.Minute, 50*time.Millisecond, gone(ns)); err != nil {
		t.Fatalf("namespace not deleted: %v", err)
	}
}
