// Package apivalidate checks custom resources against ovn-udn's CRDs offline,
// with the libraries kube-apiserver itself uses: structural defaulting, the
// OpenAPI schema validator and the CEL rules (x-kubernetes-validations). An
// object it accepts is one the API server accepts at create, and its errors
// carry the API server's messages.
package apivalidate

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	manifests "github.com/ovn-udn/ovn-udn/config"
)

// Validator validates objects of the kinds its CRDs define.
type Validator struct {
	kinds map[schema.GroupVersionKind]*version
}

type version struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	cel        *cel.Validator
}

// New builds a validator for every served version of the CRDs.
func New(crds []*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	v := &Validator{kinds: map[schema.GroupVersionKind]*version{}}
	for _, crd := range crds {
		for _, ver := range crd.Spec.Versions {
			if !ver.Served || ver.Schema == nil || ver.Schema.OpenAPIV3Schema == nil {
				continue
			}
			var internal apiextensions.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(ver.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, ver.Name, err)
			}
			s, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s %s: not structural: %w", crd.Name, ver.Name, err)
			}
			sv, _, err := validation.NewSchemaValidator(&internal)
			if err != nil {
				return nil, fmt.Errorf("CRD %s %s: %w", crd.Name, ver.Name, err)
			}
			gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: ver.Name, Kind: crd.Spec.Names.Kind}
			v.kinds[gvk] = &version{structural: s, schema: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}
		}
	}
	return v, nil
}

// Project returns a validator for ovn-udn's own CRDs (config/crd).
func Project() (*Validator, error) {
	crds, err := manifests.ParseCRDs()
	if err != nil {
		return nil, err
	}
	return New(crds)
}

// Knows reports whether the validator has a schema for the object's kind.
func (v *Validator) Knows(gvk schema.GroupVersionKind) bool {
	_, ok := v.kinds[gvk]
	return ok
}

// Validate applies the schema's defaults to obj (in place, as the API server
// stores it) and returns what the API server would reject it for at create.
// Objects of kinds the validator does not know pass unchanged.
func (v *Validator) Validate(obj *unstructured.Unstructured) field.ErrorList {
	ver, ok := v.kinds[obj.GroupVersionKind()]
	if !ok {
		return nil
	}
	structuraldefaulting.Default(obj.Object, ver.structural)
	errs := validation.ValidateCustomResource(nil, obj.Object, ver.schema)
	if len(errs) > 0 {
		// The API server stops at schema errors too: CEL rules assume the
		// schema holds.
		return errs
	}
	celErrs, _ := ver.cel.Validate(context.Background(), nil, ver.structural, obj.Object, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}
