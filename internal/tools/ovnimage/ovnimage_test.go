package ovnimage_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/tools/ovnimage"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/images"
)

// TestImageRunsItsPrograms lays the image's files out in a directory and
// runs, chrooted there (nothing of the host's), every program the
// components and manifests execute: each finds its libraries, its loader
// and its schemas in the image alone.
func TestImageRunsItsPrograms(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	if os.Geteuid() != 0 {
		t.Skip("needs root to chroot")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	files, err := ovnimage.Files(deps.OVNRoot(), self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.Dir {
			mode := os.FileMode(f.Mode & 0o777)
			if f.Mode&0o1000 != 0 {
				mode |= os.ModeSticky
			}
			if err := os.Mkdir(p, mode); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if f.Link != "" {
			if err := os.Symlink(f.Link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := copyFile(f.Source, p, os.FileMode(f.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	// What a container runtime gives every container: /dev/urandom (OVS
	// seeds its UUIDs from it). Not /tmp: runc makes none, so the image
	// brings its own (ovsdb-server needs one to start).
	if err := os.MkdirAll(filepath.Join(dir, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(dir, "dev/urandom"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 9))); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{
		{"/bin/sh", "-c", `echo "a 192.168.100.11/24" | awk '{split($2, a, "/"); print a[1]}' && sleep 0`},
		{"ip", "-V"},
		// ip's named namespaces, where the manifest mounts the host's.
		{"/bin/sh", "-c", `cd /var/run && [ "$(pwd -P)" = /run ]`},
		{"ethtool", "--version"},
		{"ovs-vsctl", "--version"},
		{"ovs-ofctl", "--version"},
		{"ovs-appctl", "--version"},
		{"ovsdb-tool", "create", "/tmp/nb.db", "/usr/share/ovn/ovn-nb.ovsschema"},
		{"ovsdb-tool", "create", "/tmp/sb.db", "/usr/share/ovn/ovn-sb.ovsschema"},
		{"ovsdb-server", "--version"},
		{"ovsdb-client", "--version"},
		{"ovn-northd", "--version"},
		{"ovn-controller", "--version"},
		{"ovn-nbctl", "--version"},
		{"ovn-sbctl", "--version"},
		{"ovn-appctl", "--version"},
	} {
		cmd := exec.Command("chroot", append([]string{dir, "/bin/sh", "-c", `exec "$@"`, "sh"}, argv...)...)
		cmd.Env = []string{"PATH=" + images.Path} // the image's own
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s in the image: %v: %s", strings.Join(argv, " "), err, out)
		}
	}
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestImageIsReproducible: the same files give the same image digest.
func TestImageIsReproducible(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for i := 0; i < 2; i++ {
		files, err := ovnimage.Files(deps.OVNRoot(), self)
		if err != nil {
			t.Fatal(err)
		}
		img, err := images.Build(images.Image{Refs: []string{"example.com/ovn-udn:test"}, Files: files, Entrypoint: []string{"/usr/bin/ovn-udn"}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same files: %v", digests)
	}
}
