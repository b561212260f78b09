package v1_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/api/v1/v1test"
	"github.com/ovn-udn/ovn-udn/internal/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// object builds an unstructured object from YAML (so tests can send what a
// user would write, including invalid values the Go types cannot hold).
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, doc)
	}
	return u
}

// TestValidation applies valid and invalid networks to the real API server:
// each CEL rule rejects its case with its own message.
func TestValidation(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	for _, tc := range v1test.ValidationCases {
		tc := tc
		t.Run(tc.Name, func(t *testing.T) {
			obj := object(t, tc.Doc)
			err := c.Create(ctx, obj)
			if tc.WantErr == "" {
				if err != nil {
					t.Fatalf("valid object rejected: %v", err)
				}
				_ = c.Delete(ctx, obj)
				return
			}
			if err == nil {
				_ = c.Delete(ctx, obj)
				t.Fatalf("invalid object accepted; want error containing %q", tc.WantErr)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.WantErr) {
				t.Fatalf("error does not contain %q:\n%v", tc.WantErr, err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestImmutability checks that a UDN's spec and a CUDN's template and VRF
// cannot change, while a CUDN's namespace selector can.
func TestImmutability(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()

	u := object(t, v1test.UDN("immutable", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, u) })
	_ = unstructured.SetNestedField(u.Object, int64(1500), "spec", "mtu")
	if err := c.Update(ctx, u); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("UDN spec update: got %v, want 'spec is immutable'", err)
	}

	cu := object(t, v1test.CUDN("immutable", "namespaceSelector: {matchLabels: {a: b}}\nvrf: v1\ntemplate: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"))
	if err := c.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, cu) })

	changed := cu.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, int64(1500), "spec", "template", "mtu")
	if err := c.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "template is immutable") {
		t.Fatalf("CUDN template update: got %v, want 'template is immutable'", err)
	}
	changed = cu.DeepCopy()
	unstructured.RemoveNestedField(changed.Object, "spec", "vrf")
	if err := c.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "vrf is immutable") {
		t.Fatalf("CUDN vrf removal: got %v, want 'vrf is immutable'", err)
	}
	changed = cu.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "c", "spec", "namespaceSelector", "matchLabels", "a")
	if err := c.Update(ctx, changed); err != nil {
		t.Fatalf("CUDN selector update rejected: %v", err)
	}
}
