package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// TestDotGolden draws both zones of a two-node input with the default
// network, a Layer3 and a Layer2 primary network.
func TestDotGolden(t *testing.T) {
	res := run(t, read(t, filepath.Join("testdata", "two-nodes.yaml")), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	got := output(t, res, "dot")
	for _, want := range []string{
		`label="network blue.net\nlayer3 primary\nsubnets 10.128.0.0/16/24";`,
		`label="network green.net\nlayer2 primary\nsubnets 10.100.0.0/24";`,
		`label="network default\nlayer3 primary\nsubnets 10.244.0.0/16/24,fd00:10:244::/48/64";`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s", want)
		}
	}
	golden(t, "two-nodes.dot", got)
}

// TestDotSVG: -o svg pipes the graph through Graphviz's dot -Tsvg.
func TestDotSVG(t *testing.T) {
	dir := t.TempDir()
	// A stand-in for Graphviz: it reads the graph and prints its arguments
	// and the graph's first line (shell builtins only: PATH is only dir).
	script := "#!/bin/sh\nread -r first\nwhile read -r _; do :; done\necho \"<svg args='$*'>$first</svg>\"\n"
	if err := os.WriteFile(filepath.Join(dir, "dot"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, read(t, filepath.Join("testdata", "two-nodes.yaml")), render.Options{Zones: []string{"node1"}})
	t.Setenv("PATH", dir)
	if got, want := output(t, res, "svg"), "<svg args='-Tsvg'>graph ovn {</svg>\n"; got != want {
		t.Errorf("-o svg printed %q, want %q", got, want)
	}
}

// TestDotSVGWithoutGraphviz: without dot on PATH, -o svg says what to do.
func TestDotSVGWithoutGraphviz(t *testing.T) {
	res := run(t, read(t, filepath.Join("testdata", "two-nodes.yaml")), render.Options{Zones: []string{"node1"}})
	t.Setenv("PATH", t.TempDir())
	var b bytes.Buffer
	err := render.Write(&b, res, "svg")
	if err == nil || !strings.Contains(err.Error(), "install graphviz") || !strings.Contains(err.Error(), "-o dot") {
		t.Fatalf("err %v, want one saying to install graphviz or use -o dot", err)
	}
	if b.Len() > 0 {
		t.Errorf("printed %q before failing", b.String())
	}
}

// TestDotDocsPictures: docs/images holds what the commands docs/topology.md
// names print (ovn-udn render -f examples/<file> --zone <zone> --render-everywhere -o dot);
// -update rewrites them.
func TestDotDocsPictures(t *testing.T) {
	for _, tc := range []struct{ example, zone, picture string }{
		{"tenant-layer3.yaml", "node1", "layer3.dot"},
		{"tenant-layer2.yaml", "node1", "layer2.dot"},
		{"secondary-localnet.yaml", "node2", "localnet.dot"},
	} {
		res := run(t, read(t, filepath.Join(examples, tc.example)), render.Options{Zones: []string{tc.zone}, RenderEverywhere: true})
		// The commands write where docs/topology.md says.
		goldenFile(t, filepath.Join("..", "..", "..", "docs", "images", tc.picture), output(t, res, "dot"))
	}
}
