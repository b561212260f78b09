package render_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/manifest"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// FuzzRender feeds manifests through everything `ovn-udn render` does: read,
// check against the API's schemas and CEL rules, run every controller to a
// fixed point, write the Northbound rows. Whatever the input, it must not
// panic or hang; bad objects are Problems, not failures of the run.
func FuzzRender(f *testing.F) {
	for _, p := range []string{filepath.Join("testdata", "two-nodes.yaml"), filepath.Join(examples, "tenant-layer3.yaml"), filepath.Join(examples, "tenant-layer2.yaml")} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata: {name: n, namespace: x}\nspec: {topology: Layer3, role: Primary, subnets: [10.0.0.0/8/32]}\n"))
	f.Add([]byte("apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata: {name: n, namespace: x}\nspec: {config: '{\"type\":\"ovn-k8s-cni-overlay\",\"name\":\"x.n\",\"topology\":\"layer2\",\"subnets\":\"10.0.0.0/30\"}'}\n"))
	f.Add([]byte("kind: Pod\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := manifest.Parse("input.yaml", data)
		if err != nil {
			return
		}
		in, err := render.Check(docs)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := render.Run(ctx, in, render.Options{Cluster: config.Default(), MaxRounds: 20})
		if ctx.Err() != nil {
			t.Fatalf("render did not finish in 30 s")
		}
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := render.Write(&b, res, "nbctl"); err != nil {
			t.Fatalf("write: %v", err)
		}
	})
}
