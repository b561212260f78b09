package apivalidate_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/api/v1/v1test"
	"github.com/ovn-udn/ovn-udn/internal/apivalidate"
)

// TestCases: the offline validator accepts and rejects exactly what the real
// API server does (api/v1's TestValidation runs the same cases against it),
// with the same messages.
func TestCases(t *testing.T) {
	v, err := apivalidate.Project()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range v1test.ValidationCases {
		t.Run(tc.Name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.Doc), &u.Object); err != nil {
				t.Fatal(err)
			}
			if !v.Knows(u.GroupVersionKind()) {
				t.Fatalf("validator does not know %s", u.GroupVersionKind())
			}
			errs := v.Validate(u)
			switch {
			case tc.WantErr == "" && len(errs) > 0:
				t.Fatalf("valid object rejected: %v", errs.ToAggregate())
			case tc.WantErr != "" && len(errs) == 0:
				t.Fatalf("invalid object accepted; want an error containing %q", tc.WantErr)
			case tc.WantErr != "" && !strings.Contains(errs.ToAggregate().Error(), tc.WantErr):
				t.Fatalf("error does not contain %q:\n%v", tc.WantErr, errs.ToAggregate())
			}
		})
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
