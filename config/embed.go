// Package config holds ovn-udn's deployable manifests — the CRDs (crd/),
// each component's least-privilege RBAC (rbac/), the admission policies
// (admission/) and the kustomization that installs ovn-udn (deploy/) — and
// embeds them, so the sandbox installs exactly what a cluster would.
package config

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// CRDs holds crd/*.yaml.
//
//go:embed crd/*.yaml
var CRDs embed.FS

// RBAC holds rbac/*.yaml.
//
//go:embed rbac/*.yaml
var RBAC embed.FS

// Admission holds admission/*.yaml: the admission policies ovn-udn relies on.
//
//go:embed admission/*.yaml
var Admission embed.FS

// Deploy holds deploy/*.yaml, the kustomization that installs ovn-udn
// (docs/install.md); it includes crd/, rbac/ and admission/ as bases.
//
//go:embed deploy/*.yaml
var Deploy embed.FS

// Uninstall holds uninstall/*.yaml, the kustomization that cleans the nodes
// once ovn-udn is deleted (docs/install.md, "Uninstall").
//
//go:embed uninstall/*.yaml
var Uninstall embed.FS

// WriteTree writes every embedded manifest into dir as this directory holds
// them (dir/crd, dir/rbac, dir/admission, dir/deploy), so that
// `kubectl apply -k dir/deploy` installs what a checkout would.
func WriteTree(dir string) error {
	for _, f := range []embed.FS{CRDs, RBAC, Admission, Deploy, Uninstall} {
		err := fs.WalkDir(f, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := f.ReadFile(path)
			if err != nil {
				return err
			}
			to := filepath.Join(dir, filepath.FromSlash(path))
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return err
			}
			return os.WriteFile(to, b, 0o644)
		})
		if err != nil {
			return fmt.Errorf("writing the manifests into %s: %w", dir, err)
		}
	}
	return nil
}

// ParseAdmission returns the ValidatingAdmissionPolicies and their bindings of
// admission/*.yaml, policies first.
func ParseAdmission() ([]*admissionv1.ValidatingAdmissionPolicy, []*admissionv1.ValidatingAdmissionPolicyBinding, error) {
	var policies []*admissionv1.ValidatingAdmissionPolicy
	var bindings []*admissionv1.ValidatingAdmissionPolicyBinding
	err := fs.WalkDir(Admission, "admission", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Admission.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var raw map[string]any
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			j, err := json.Marshal(raw)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			switch raw["kind"] {
			case "ValidatingAdmissionPolicy":
				p := &admissionv1.ValidatingAdmissionPolicy{}
				if err := json.Unmarshal(j, p); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				policies = append(policies, p)
			case "ValidatingAdmissionPolicyBinding":
				b := &admissionv1.ValidatingAdmissionPolicyBinding{}
				if err := json.Unmarshal(j, b); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				bindings = append(bindings, b)
			}
		}
	})
	return policies, bindings, err
}

// ParseCRDs returns the CRDs of crd/*.yaml, parsed; other files there
// (kustomization.yaml) are skipped.
func ParseCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	err := fs.WalkDir(CRDs, "crd", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := CRDs.ReadFile(path)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil
		}
		out = append(out, crd)
		return nil
	})
	return out, err
}
