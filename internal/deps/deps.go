// Package deps locates the real components that hack/install-deps.sh installs:
// kube-apiserver and etcd for envtest, and the Debian sid root holding OVN and
// Open vSwitch with its wrapper scripts. Tests, the sandbox and benchmarks all
// find their binaries through this package, so the cache layout is defined once.
package deps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CacheEnv overrides the cache directory (default $HOME/.cache/ovn-udn).
const CacheEnv = "OVN_UDN_CACHE"

// SkipEnv, when set to 1, lets tests that need real components skip instead of
// failing when the components are missing. CI never sets it.
const SkipEnv = "OVN_UDN_SKIP_REAL"

// CacheDir is the directory hack/install-deps.sh installs into.
func CacheDir() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/root"
	}
	return filepath.Join(home, ".cache", "ovn-udn")
}

// KubeAssetsDir holds kube-apiserver and etcd; it is what envtest calls
// KUBEBUILDER_ASSETS.
func KubeAssetsDir() string { return filepath.Join(CacheDir(), "kube", "bin") }

// OVNRoot is the Debian sid root holding OVN and Open vSwitch.
func OVNRoot() string { return filepath.Join(CacheDir(), "ovn", "root") }

// OVNBinDir holds one wrapper script per OVN/OVS program (ovn-nbctl,
// ovsdb-server, ovn-trace, ovs-vswitchd, ...) that runs it on the host through the
// root's dynamic loader.
func OVNBinDir() string { return filepath.Join(CacheDir(), "ovn", "bin") }

// OVNSchema returns the path of an OVN schema of the installed root: "ovn-nb" or
// "ovn-sb".
func OVNSchema(name string) string {
	return filepath.Join(OVNRoot(), "usr", "share", "ovn", name+".ovsschema")
}

// VSwitchSchema is the Open_vSwitch database schema of the installed root.
func VSwitchSchema() string {
	return filepath.Join(OVNRoot(), "usr", "share", "openvswitch", "vswitch.ovsschema")
}

// OVNVersion is the upstream version of the installed OVN (e.g. "26.03.1").
func OVNVersion() (string, error) {
	b, err := os.ReadFile(filepath.Join(CacheDir(), "ovn", "VERSION"))
	if err != nil {
		return "", fmt.Errorf("reading installed OVN version: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// OVNCommand returns a command running an OVN/OVS program of the installed root.
func OVNCommand(program string, args ...string) *exec.Cmd {
	return exec.Command(OVNProgram(program), args...)
}

// OVNProgram is the path of a program installed with OVN (ip, ethtool,
// ovs-vsctl, ...).
func OVNProgram(program string) string { return filepath.Join(OVNBinDir(), program) }

// KubeBinary is the path of an installed Kubernetes program: kube-apiserver,
// etcd, kube-controller-manager, kube-scheduler, kubectl or coredns.
func KubeBinary(name string) string { return filepath.Join(KubeAssetsDir(), name) }

// CheckKube reports whether kube-apiserver and etcd are installed.
func CheckKube() error {
	return checkFiles("run `make deps`", KubeBinary("kube-apiserver"), KubeBinary("etcd"))
}

// CheckControlPlane reports whether the rest of a control plane is installed:
// kube-controller-manager, kube-scheduler, kubectl and CoreDNS.
func CheckControlPlane() error {
	return checkFiles("run `make deps`", KubeBinary("kube-controller-manager"), KubeBinary("kube-scheduler"),
		KubeBinary("kubectl"), KubeBinary("coredns"))
}

// CheckOVN reports whether the OVN root and its wrappers are installed.
func CheckOVN() error {
	return checkFiles("run `make deps`", filepath.Join(OVNBinDir(), "ovsdb-server"), filepath.Join(OVNBinDir(), "ovn-northd"),
		filepath.Join(OVNBinDir(), "ovn-trace"), OVNSchema("ovn-nb"), OVNSchema("ovn-sb"))
}

func checkFiles(fix string, paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s is missing (%s with %s=%s)", p, fix, CacheEnv, CacheDir())
		}
	}
	return nil
}

// TB is the part of testing.TB that Require needs.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// Require fails t when check reports missing components, or skips it when the
// caller opted out with OVN_UDN_SKIP_REAL=1. Real-component tests never skip
// silently.
func Require(t TB, check func() error) {
	t.Helper()
	err := check()
	if err == nil {
		return
	}
	if os.Getenv(SkipEnv) == "1" {
		t.Skipf("real components missing, skipped because %s=1: %v", SkipEnv, err)
	}
	t.Fatalf("real components missing: %v (or set %s=1 to skip tests that need them)", err, SkipEnv)
}
