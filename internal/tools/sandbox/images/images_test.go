package images_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/images"
)

// TestWriteArchive: two builds of the same programs give the same digests
// (the build is reproducible), and the archive holds each reference with
// its linux/amd64 config and entrypoint.
func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	if err := os.WriteFile(prog, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	imgs := []images.Image{
		{Refs: []string{"registry.k8s.io/pause:3.10"}, Files: []images.File{{Path: "pause", Source: prog}}, Entrypoint: []string{"/pause"}},
		{Refs: []string{"registry.k8s.io/e2e-test-images/agnhost:2.56"}, Files: []images.File{{Path: "agnhost", Source: prog}}, Entrypoint: []string{"/agnhost"}},
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	da, err := images.WriteArchive(a, imgs...)
	if err != nil {
		t.Fatal(err)
	}
	db, err := images.WriteArchive(b, imgs...)
	if err != nil {
		t.Fatal(err)
	}
	for ref, d := range da {
		if db[ref] != d {
			t.Errorf("%s: digest %s, then %s: the build is not reproducible", ref, d, db[ref])
		}
	}
	tag, _ := name.NewTag("registry.k8s.io/pause:3.10")
	img, err := tarball.ImageFromPath(a, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/pause" {
		t.Errorf("pause config: %s/%s entrypoint %v", cf.OS, cf.Architecture, cf.Config.Entrypoint)
	}
	if d, _ := img.Digest(); d.String() != da["registry.k8s.io/pause:3.10"] {
		t.Errorf("archive's pause is %s, built %s", d, da["registry.k8s.io/pause:3.10"])
	}
}
