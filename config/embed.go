// Package config holds ovn-udn's deployable manifests — the CRDs (crd/) and
// each component's least-privilege RBAC (rbac/) — and embeds them, so the
// sandbox installs exactly what a cluster would.
package config

import "embed"

// CRDs holds crd/*.yaml.
//
//go:embed crd/*.yaml
var CRDs embed.FS

// RBAC holds rbac/*.yaml.
//
//go:embed rbac/*.yaml
var RBAC embed.FS
