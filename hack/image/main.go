// Command image builds ovn-udn's container image without Docker (`make
// image`): ovn-udn, built static, and what internal/tools/ovnimage takes from the
// Debian root `make deps` installs, as one layer. It writes an OCI image
// layout as a tar archive (an "OCI archive": `ctr images import`, `skopeo
// copy oci-archive:...` and `crane push` take it) and prints the image's
// reference, digest and sizes. The same inputs give the same digest.
package main

import (
	"archive/tar"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/tools/ovnimage"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/images"
)

func main() {
	out := flag.String("o", "bin/ovn-udn-image.tar", "the OCI archive to write")
	ref := flag.String("ref", "ghcr.io/ovn-udn/ovn-udn:dev", "the image's reference")
	version := flag.String("version", "", "the version `ovn-udn version` reports (default: the module's, from the build)")
	flag.Parse()
	if err := run(*out, *ref, *version); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(out, ref, version string) error {
	tmp, err := os.MkdirTemp("", "ovn-udn-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// Static and reproducible: no cgo, no paths of this machine, no build ID;
	// no symbol tables (a running component needs none).
	binary := filepath.Join(tmp, "ovn-udn")
	ldflags := "-s -w -buildid="
	if version != "" {
		ldflags += " -X github.com/ovn-udn/ovn-udn/internal/version.Version=" + version
	}
	build := exec.Command("go", "build", "-trimpath", "-ldflags="+ldflags, "-o", binary, "./cmd/ovn-udn")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building ovn-udn: %w", err)
	}
	files, err := ovnimage.Files(deps.OVNRoot(), binary)
	if err != nil {
		return err
	}
	img, err := images.Build(images.Image{Refs: []string{ref}, Files: files, Entrypoint: []string{"/usr/bin/ovn-udn"}})
	if err != nil {
		return err
	}
	dir := filepath.Join(tmp, "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
		"io.containerd.image.name":          ref,
	})); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := tarDir(dir, out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var compressed, uncompressed int64
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return err
		}
		compressed += s
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
		uncompressed += n
	}
	fmt.Printf("%s\n%s@%s\n%d files, %.1f MB compressed, %.1f MB uncompressed\nwritten to %s\n",
		ref, ref, digest, len(files), float64(compressed)/1e6, float64(uncompressed)/1e6, out)
	return nil
}

// tarDir writes the files under dir into a tar archive at out, in name
// order, with zeroed times and owners: the same files give the same bytes.
func tarDir(dir, out string) error {
	var names []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			names = append(names, p)
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(names)
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer os.Remove(out + ".tmp") // gone once renamed; left by nothing on failure
	defer f.Close()
	tw := tar.NewWriter(f)
	for _, p := range names {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			continue
		}
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
