package kubetest_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/kubetest"
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
