// Package images builds container images without a registry or Docker (the
// sandbox's real nodes' images, and ovn-udn's own): each image is one layer
// holding its files (and symbolic links), built with go-containerregistry;
// WriteArchive writes docker-archives that containerd imports (`ctr images
// import`), and hack/image writes an OCI archive of Build's image. Builds are reproducible: the same programs
// give the same digests (file times and the image's creation time are the
// epoch).
package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is a program (or any file) of an image: the path inside the image and
// the host file it is read from, or, when Link is set, a symbolic link to
// Link.
type File struct {
	Path, Source string
	Mode         int64
	Link         string
	// Dir makes Path an empty directory with Mode (Source unused).
	Dir bool
}

// Image is one image to build.
type Image struct {
	// Refs are the references it is tagged with
	// (registry.k8s.io/pause:3.10, ...).
	Refs       []string
	Files      []File
	Entrypoint []string
	Cmd        []string
}

// Path is every image's PATH: Debian's directories (an sbin holds
// ovsdb-server and ethtool), and / for the sandbox's single-program images.
const Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/"

// Build returns the image: one layer with its files, a linux/amd64 config
// with its entrypoint and command.
func Build(img Image) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := append([]File(nil), img.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for _, f := range files {
		if f.Link != "" {
			if err := tw.WriteHeader(&tar.Header{Name: f.Path, Linkname: f.Link, Mode: 0o777, Typeflag: tar.TypeSymlink, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			continue
		}
		if f.Dir {
			if err := tw.WriteHeader(&tar.Header{Name: f.Path + "/", Mode: f.Mode, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
				return nil, err
			}
			continue
		}
		b, err := os.ReadFile(f.Source)
		if err != nil {
			return nil, fmt.Errorf("image %v: %w", img.Refs, err)
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Mode: mode, Size: int64(len(b)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	out, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint, cf.Config.Cmd = img.Entrypoint, img.Cmd
	cf.Config.Env = []string{"PATH=" + Path}
	return mutate.ConfigFile(out, cf)
}

// WriteArchive builds every image and writes them, with all their
// references, into one docker-archive at path. It returns each reference's
// image digest.
func WriteArchive(path string, imgs ...Image) (map[string]string, error) {
	refs := map[name.Reference]v1.Image{}
	digests := map[string]string{}
	for _, img := range imgs {
		built, err := Build(img)
		if err != nil {
			return nil, err
		}
		d, err := built.Digest()
		if err != nil {
			return nil, err
		}
		for _, r := range img.Refs {
			tag, err := name.NewTag(r)
			if err != nil {
				return nil, fmt.Errorf("image reference %q: %w", r, err)
			}
			refs[tag] = built
			digests[r] = d.String()
		}
	}
	tmp := path + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, refs); err != nil {
		return nil, err
	}
	return digests, os.Rename(tmp, path)
}
