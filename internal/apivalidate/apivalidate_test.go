package apivalidate_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ovn-udn/ovn-udn/api/v1/v1test"
	"github.com/ovn-udn/ovn-udn/internal/apivalidate"
)

// TestCases: the offline validator accepts and rejects exactly what the real
// API server does (api/v1's TestValidation runs the same cases against it),
// with the same messages, whether the manifest is YAML or JSON.
func TestCases(t *testing.T) {
	v, err := apivalidate.Project()
	if err != nil {
		t.Fatal(err)
	}
	run := func(cases []v1test.Case, sole bool) {
		for _, tc := range cases {
			t.Run(tc.Name, func(t *testing.T) {
				js, err := v1test.JSON(tc.Doc)
				if err != nil {
					t.Fatal(err)
				}
				for form, doc := range map[string]string{"yaml": tc.Doc, "json": js} {
					u, err := v1test.Object(doc)
					if err != nil {
						t.Fatalf("%s: %v", form, err)
					}
					if !v.Knows(u.GroupVersionKind()) {
						t.Fatalf("validator does not know %s", u.GroupVersionKind())
					}
					if err := tc.Check(messages(v, u), sole); err != nil {
						t.Errorf("%s: %v", form, err)
					}
				}
			})
		}
	}
	run(v1test.ValidationCases, false)
	run(v1test.OVNKubernetesCases, false)
	run(v1test.EgressIPCases, false)
	run(v1test.SoleErrorCases, true)
}

func messages(v *apivalidate.Validator, u *unstructured.Unstructured) []string {
	var out []string
	for _, e := range v.Validate(u) {
		out = append(out, e.Error())
	}
	return out
}

// TestIntegersAsTheServerDecodes: whole numbers read from a file as float64
// become int64, as the API server decodes them; fractions stay float64.
func TestIntegersAsTheServerDecodes(t *testing.T) {
	got, err := apivalidate.AsServerDecodes(map[string]any{"spec": map[string]any{
		"mtu": float64(9000), "ratio": 0.5, "list": []any{float64(1), "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"spec": map[string]any{"mtu": int64(9000), "ratio": 0.5, "list": []any{int64(1), "a"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestUnknownKind: objects of other kinds pass untouched.
func TestUnknownKind(t *testing.T) {
	v, err := apivalidate.Project()
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}}}
	if v.Knows(u.GroupVersionKind()) || len(v.Validate(u)) > 0 {
		t.Fatal("a Pod is not the validator's business")
	}
}
