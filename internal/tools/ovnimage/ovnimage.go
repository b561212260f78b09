// Package ovnimage builds ovn-udn's own container image from the Debian root
// that `make deps` installs OVN and Open vSwitch into: ovn-udn, the programs
// its components and manifests run, their shared libraries and loader, and
// OVN's schemas, at the paths Debian gives them, and nothing else (no
// package manager, no documentation). It writes the image with package
// images (go-containerregistry); the same inputs give the same digest.
package ovnimage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/images"
)

// Programs are what the components and config/deploy's manifests execute,
// by name: searched in the root's /usr/bin and /usr/sbin.
var Programs = []string{
	// The manifests' scripts.
	"sh", "awk", "sleep",
	// The node agent (pod plumbing, the management port, br-ex's flows).
	"ip", "ethtool", "ovs-vsctl", "ovs-ofctl",
	// Host isolation's table, and its removal by node cleanup.
	"nft",
	// A zone: its databases, northd, ovn-controller, and their probes.
	"ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-northd", "ovn-controller",
	"ovn-nbctl", "ovn-sbctl", "ovn-appctl", "ovs-appctl",
}

// Data are files the programs read, copied whole.
var Data = []string{
	"/usr/share/ovn/ovn-nb.ovsschema",
	"/usr/share/ovn/ovn-sb.ovsschema",
	"/usr/share/openvswitch/vswitch.ovsschema",
}

// Loader is the program interpreter of Debian's amd64 binaries.
const Loader = "/lib64/ld-linux-x86-64.so.2"

// Paths are further paths the manifests name (the shell as /bin/sh), with
// the links on the way.
var Paths = []string{"/bin/sh"}

// Files returns the image's files: ovn-udn (the host file binary) at
// /usr/bin/ovn-udn, and, from root, every program of Programs, its shared
// libraries (as the root's own loader resolves them), the loader and the
// Data, each at its path in root, with the symbolic links on the way.
func Files(root, binary string) ([]images.File, error) {
	r := resolver{root: root, seen: map[string]bool{}}
	out := []images.File{{Path: "usr/bin/ovn-udn", Source: binary, Mode: 0o755}}
	var programs []string
	for _, p := range Programs {
		found := ""
		for _, dir := range []string{"/usr/bin", "/usr/sbin"} {
			if _, err := os.Lstat(filepath.Join(root, dir, p)); err == nil {
				found = path.Join(dir, p)
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("%s is not in %s's /usr/bin or /usr/sbin: run `make deps`", p, root)
		}
		programs = append(programs, found)
	}
	for _, p := range append(append(append([]string{Loader}, programs...), Data...), Paths...) {
		if err := r.add(p); err != nil {
			return nil, err
		}
	}
	libs, err := r.libraries(programs)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		if err := r.add(l); err != nil {
			return nil, err
		}
	}
	out = append(out, r.files...)
	// /tmp, which no runtime makes: ovsdb-server creates temporary files.
	// /run, and /var/run linked to it as on Debian: ip finds named network
	// namespaces in /run/netns, and the node agent's manifest mounts the
	// host's at /var/run/netns.
	out = append(out, images.File{Path: "tmp", Dir: true, Mode: 0o1777},
		images.File{Path: "run", Dir: true, Mode: 0o755},
		images.File{Path: "var/run", Link: "/run"})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// resolver collects files of root by their paths in root, following
// symbolic links inside root (an absolute target is root's, not the host's).
type resolver struct {
	root  string
	seen  map[string]bool
	files []images.File
}

// add adds p (absolute, in root), the file it names, and every link on the
// way to it.
func (r *resolver) add(p string) error {
	real, err := r.resolve(p)
	if err != nil {
		return err
	}
	if !r.seen[real] {
		fi, err := os.Stat(filepath.Join(r.root, real))
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		r.seen[real] = true
		r.files = append(r.files, images.File{Path: strings.TrimPrefix(real, "/"), Source: filepath.Join(r.root, real), Mode: int64(fi.Mode().Perm())})
	}
	return nil
}

// resolve follows p's links inside root, recording them, and returns the
// path in root of the file it names.
func (r *resolver) resolve(p string) (string, error) {
	for hops := 0; hops < 40; hops++ {
		real, err := r.walk(p)
		if err != nil {
			return "", err
		}
		host := filepath.Join(r.root, real)
		fi, err := os.Lstat(host)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return real, nil
		}
		target, err := os.Readlink(host)
		if err != nil {
			return "", err
		}
		r.link(real, target)
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(real), target)
		}
		p = target
	}
	return "", fmt.Errorf("%s: too many symbolic links", p)
}

// walk resolves the directories of p (not its last element) inside root,
// recording the links among them, and returns the path it names.
func (r *resolver) walk(p string) (string, error) {
	dir, base := path.Split(path.Clean(p))
	cur := "/"
	for _, part := range strings.Split(strings.Trim(dir, "/"), "/") {
		if part == "" {
			continue
		}
		next := path.Join(cur, part)
		for hops := 0; ; hops++ {
			if hops == 40 {
				return "", fmt.Errorf("%s: too many symbolic links", p)
			}
			fi, err := os.Lstat(filepath.Join(r.root, next))
			if err != nil {
				return "", fmt.Errorf("%s: %w", p, err)
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				break
			}
			target, err := os.Readlink(filepath.Join(r.root, next))
			if err != nil {
				return "", err
			}
			r.link(next, target)
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(next), target)
			}
			next = path.Clean(target)
		}
		cur = next
	}
	return path.Join(cur, base), nil
}

func (r *resolver) link(p, target string) {
	if !r.seen[p] {
		r.seen[p] = true
		r.files = append(r.files, images.File{Path: strings.TrimPrefix(p, "/"), Link: target})
	}
}

// libraries asks root's loader which shared libraries programs load, and
// returns their paths in root.
func (r *resolver) libraries(programs []string) ([]string, error) {
	loader, err := r.resolve(Loader)
	if err != nil {
		return nil, err
	}
	libPath := strings.Join([]string{filepath.Join(r.root, "usr/lib/x86_64-linux-gnu"), filepath.Join(r.root, "lib/x86_64-linux-gnu")}, ":")
	set := map[string]bool{}
	for _, p := range programs {
		real, err := r.resolve(p)
		if err != nil {
			return nil, err
		}
		// The root's own loader, run on this host, lists what the root's
		// program loads.
		out, err := exec.Command(filepath.Join(r.root, loader), "--library-path", libPath, "--list", filepath.Join(r.root, real)).Output()
		if err != nil {
			if bytes.Contains(out, []byte("not a dynamic executable")) {
				continue
			}
			return nil, fmt.Errorf("listing the libraries of %s: %w", p, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], r.root+"/") {
				set["/"+strings.TrimPrefix(f[2], r.root+"/")] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for l := range set {
		out = append(out, l)
	}
	sort.Strings(out)
	return out, nil
}
