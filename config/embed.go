// Package config holds ovn-udn's deployable manifests — the CRDs (crd/) and
// each component's least-privilege RBAC (rbac/) — and embeds them, so the
// sandbox installs exactly what a cluster would.
package config

import (
	"embed"
	"fmt"
	"io/fs"

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
