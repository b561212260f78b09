package hostisolation

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// kernel is a test's piece of the real kernel: a network namespace with a
// veth whose far end is up, default routes out of it in both families
// through a static neighbour, and a cgroup v2 group under which the test
// makes its own (a process written to a group's cgroup.procs runs in it).
// It skips the test where nft, the cgroup v2 hierarchy or network
// namespaces are not to be had.
type kernel struct {
	tb                        testing.TB
	nft, mount, netns, parent string
}

func newKernel(tb testing.TB, name string) *kernel {
	tb.Helper()
	deps.Require(tb, deps.CheckOVN)
	k := &kernel{tb: tb, nft: filepath.Join(deps.OVNBinDir(), "nft"), mount: ResolveMount(), netns: "hostisolation-" + name}
	if _, err := os.Stat(k.nft); err != nil || k.mount == "" {
		tb.Skipf("no nft (%v) or no cgroup v2 hierarchy here", err)
	}
	parent, err := os.MkdirTemp(k.mount, "hostisolation-"+name+"-")
	if err != nil {
		tb.Skipf("cannot make a cgroup here: %v", err)
	}
	k.parent = parent
	tb.Cleanup(func() { os.Remove(parent) })
	_ = deps.OVNCommand("ip", "netns", "del", k.netns).Run()
	if out, err := deps.OVNCommand("ip", "netns", "add", k.netns).CombinedOutput(); err != nil {
		tb.Skipf("cannot make a network namespace: %v: %s", err, out)
	}
	tb.Cleanup(func() { _ = deps.OVNCommand("ip", "netns", "del", k.netns).Run() })
	for _, args := range [][]string{
		{"link", "add", "d0", "type", "veth", "peer", "name", "d1"}, {"link", "set", "d1", "up"}, {"link", "set", "d0", "up"},
		{"addr", "add", "192.0.2.1/24", "dev", "d0"}, {"neigh", "add", "192.0.2.2", "lladdr", "02:00:00:00:00:02", "dev", "d0", "nud", "permanent"},
		{"route", "add", "default", "via", "192.0.2.2"},
		{"-6", "addr", "add", "2001:db8::1/64", "dev", "d0", "nodad"}, {"-6", "neigh", "add", "2001:db8::2", "lladdr", "02:00:00:00:00:02", "dev", "d0", "nud", "permanent"},
		{"-6", "route", "add", "default", "via", "2001:db8::2"},
	} {
		if out, err := deps.OVNCommand("ip", append([]string{"-n", k.netns}, args...)...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	return k
}

// group makes a cgroup under the test's and returns it as nftables
// matches it, with its cgroup.procs.
func (k *kernel) group(name string) (Cgroup, string) {
	k.tb.Helper()
	dir := filepath.Join(k.parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		k.tb.Fatal(err)
	}
	k.tb.Cleanup(func() { os.Remove(dir) })
	cg, err := Resolve(k.mount, strings.TrimPrefix(dir, k.mount))
	if err != nil {
		k.tb.Fatal(err)
	}
	return cg, filepath.Join(dir, "cgroup.procs")
}

// in is argv run in the namespace, from cgroup procs ("" for the
// caller's).
func (k *kernel) in(procs string, argv ...string) *exec.Cmd {
	if procs == "" {
		return exec.Command("nsenter", append([]string{"--net=/run/netns/" + k.netns}, argv...)...)
	}
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + k.netns, "sh", "-c", `echo $$ > "$0" && exec "$@"`, procs}, argv...)...)
}

// load loads an nftables script into the namespace.
func (k *kernel) load(script string) {
	k.tb.Helper()
	cmd := k.in("", k.nft, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		k.tb.Fatalf("nft -f: %v: %s", err, out)
	}
}
