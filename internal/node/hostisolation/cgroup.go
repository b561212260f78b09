package hostisolation

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Cgroup is where nftables finds the kubelet's cgroup: Path relative to
// /sys/fs/cgroup (nftables resolves it there) and Level, its depth in the
// cgroup v2 hierarchy.
type Cgroup struct {
	Path  string
	Level int
}

// Resolve finds the kubelet's cgroup (a path in the cgroup v2 hierarchy)
// given the v2 hierarchy's mount point (ResolveMount finds it); an error
// says why nftables cannot match it.
func Resolve(mount, kubelet string) (Cgroup, error) {
	rel := strings.Trim(filepath.Clean("/"+kubelet), "/")
	if kubelet == "" || rel == "" {
		return Cgroup{}, fmt.Errorf("no kubelet cgroup given (--kubelet-cgroup)")
	}
	const base = "/sys/fs/cgroup"
	switch {
	case mount == base, strings.HasPrefix(mount, base+"/"):
	case mount == "":
		return Cgroup{}, fmt.Errorf("no cgroup v2 hierarchy is mounted")
	default:
		return Cgroup{}, fmt.Errorf("the cgroup v2 hierarchy is mounted at %s, outside %s where nftables looks", mount, base)
	}
	if st, err := os.Stat(filepath.Join(mount, rel)); err != nil || !st.IsDir() {
		return Cgroup{}, fmt.Errorf("the kubelet's cgroup %s is not in the cgroup v2 hierarchy (%s)", rel, mount)
	}
	return relative(mount, rel), nil
}

// ResolveMount returns the cgroup v2 hierarchy's mount point, from
// /proc/self/mountinfo ("" when none).
func ResolveMount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// ID parent major:minor root mountpoint options ... - fstype source options
		f := strings.Fields(sc.Text())
		for i, x := range f {
			// Only the whole hierarchy (root "/"): under a cgroup
			// namespace or a bind of a subtree, levels would count from
			// elsewhere than the kernel counts them.
			if x == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && len(f) > 4 && f[3] == "/" {
				return f[4]
			}
		}
	}
	return ""
}

// PodsParents are where a kubelet puts its pods' cgroups when
// --pods-cgroup is not given, tried in order: the systemd cgroup driver's
// slice, then cgroupfs'.
var PodsParents = []string{"kubepods.slice", "kubepods"}

// ResolvePods finds the parent of the kubelet's pod cgroups (a path in the
// cgroup v2 hierarchy, "" for the first of PodsParents that exists) under
// the v2 hierarchy's mount point.
func ResolvePods(mount, parent string) (string, error) {
	candidates := PodsParents
	if parent != "" {
		candidates = []string{parent}
	}
	for _, c := range candidates {
		rel := strings.Trim(filepath.Clean("/"+c), "/")
		if st, err := os.Stat(filepath.Join(mount, rel)); err == nil && st.IsDir() && rel != "" {
			return rel, nil
		}
	}
	return "", fmt.Errorf("no cgroup of the kubelet's pods at %s under %s (--pods-cgroup)", strings.Join(candidates, " or "), mount)
}

// PodCgroup returns the cgroup of the pod with uid, as nftables matches it,
// given the v2 hierarchy's mount point and the pods' parent there
// (ResolvePods): the pod's group under its QoS class's, named as the
// cgroupfs driver (pod<uid>) or the systemd driver
// (kubepods-<qos>-pod<uid with underscores>.slice) names it. ok is false
// while the kubelet has not made it (or once it removed it).
func PodCgroup(mount, parent string, uid string) (Cgroup, bool) {
	underscored := strings.ReplaceAll(uid, "-", "_")
	for _, rel := range []string{
		"pod" + uid, "burstable/pod" + uid, "besteffort/pod" + uid,
		"kubepods-pod" + underscored + ".slice",
		"kubepods-burstable.slice/kubepods-burstable-pod" + underscored + ".slice",
		"kubepods-besteffort.slice/kubepods-besteffort-pod" + underscored + ".slice",
	} {
		p := filepath.Join(parent, rel)
		if st, err := os.Stat(filepath.Join(mount, p)); err == nil && st.IsDir() {
			return relative(mount, p), true
		}
	}
	return Cgroup{}, false
}

// relative is the cgroup at rel (a path in the v2 hierarchy mounted at
// mount) as nftables names it: relative to /sys/fs/cgroup, with its depth.
func relative(mount, rel string) Cgroup {
	prefix := ""
	if mount != "/sys/fs/cgroup" {
		prefix = strings.TrimPrefix(mount, "/sys/fs/cgroup/") + "/"
	}
	return Cgroup{Path: prefix + rel, Level: strings.Count(rel, "/") + 1}
}
