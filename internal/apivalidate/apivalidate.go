// Package apivalidate checks custom resources against ovn-udn's CRDs offline,
// with the libraries kube-apiserver itself uses: structural defaulting, the
// OpenAPI schema validator, the list-type invariants and the CEL rules
// (x-kubernetes-validations). An object it accepts is one the API server accepts at create, and its errors
// carry the API server's messages.
package apivalidate

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
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
//
// obj is first brought into the form the API server decodes a request body
// into (see AsServerDecodes), so numbers read from YAML or JSON files as
// float64 reach the schema and the CEL rules as the int64 the server sees.
func (v *Validator) Validate(obj *unstructured.Unstructured) field.ErrorList {
	ver, ok := v.kinds[obj.GroupVersionKind()]
	if !ok {
		return nil
	}
	decoded, err := AsServerDecodes(obj.Object)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	obj.Object = decoded
	structuraldefaulting.Default(obj.Object, ver.structural)
	errs := validation.ValidateCustomResource(nil, obj.Object, ver.schema)
	// Lists of type map and set hold each key once.
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, ver.structural, obj.Object)...)
	if blocksCEL(errs) {
		return append(errs, field.Invalid(nil, nil, skippedCEL))
	}
	celErrs, _ := ver.cel.Validate(context.Background(), nil, ver.structural, obj.Object, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// skippedCEL is the API server's message when schema errors keep it from
// evaluating the CEL rules.
const skippedCEL = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"

// blocksCEL reports whether the schema errors keep the API server from
// evaluating the CEL rules: a wrong type, a missing required field, an enum
// violation, or a string or list over its maximum. Other schema errors (a
// number out of range, a pattern mismatch) do not, so their CEL errors are
// reported alongside (apiextensions-apiserver's customResourceStrategy).
func blocksCEL(errs field.ErrorList) bool {
	for _, e := range errs {
		switch e.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// AsServerDecodes returns obj as the API server holds it after decoding a
// request body: obj encoded as JSON (what kubectl sends) and decoded with
// apimachinery's JSON decoding, which the server's serializer uses and which
// turns every number without fraction or exponent into int64 and the rest
// into float64. Decoders of manifest files (encoding/json, sigs.k8s.io/yaml)
// yield float64 for every number instead, and CEL refuses a float64 where the
// schema says integer ("invalid data, expected int, got float64").
func AsServerDecodes(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as JSON: %w", err)
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding the object as the API server does: %w", err)
	}
	return out, nil
}
