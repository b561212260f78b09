package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// programs are the executables a sandbox runs; cleanup only kills processes
// running one of them with the state directory on their command line.
var programs = map[string]bool{
	"etcd": true, "kube-apiserver": true, "ovsdb-server": true, "ovs-vswitchd": true,
	"ovn-controller": true, "ovn-northd": true, "ovn-udn": true, "bfdd": true,
}

// scanned is a process found in /proc.
type scanned struct {
	pid     int
	program string
}

// scan finds the processes of the sandbox program set whose command line
// mentions dir (every process a sandbox starts names a file in it).
func scan(dir string) []scanned { return scanFor(dir + "/") }

// scanFor lists the sandbox's programs whose command line contains needle:
// the state directory, or for the routers' bfdd (chrooted, so the state
// directory is not in its arguments) its run directory.
func scanFor(needle string) []scanned {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []scanned
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(needle)) {
			continue
		}
		for _, arg := range bytes.Split(b, []byte{0}) {
			if p := filepath.Base(string(arg)); programs[p] {
				// The supervisor itself ("ovn-udn sandbox supervise") is
				// stopped by down, not swept.
				if !bytes.Contains(b, []byte("\x00supervise\x00")) {
					out = append(out, scanned{pid: pid, program: p})
				}
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// findProcesses reports etcd and kube-apiserver (started by envtest, which
// keeps their PIDs to itself) for the state file.
func findProcesses(kubeDir string) []Process {
	var out []Process
	for _, p := range scan(kubeDir) {
		if p.program == "etcd" || p.program == "kube-apiserver" {
			out = append(out, Process{Name: p.program, PID: p.pid, Running: Alive(p.pid),
				Log: filepath.Join(kubeDir, p.program+".log")})
		}
	}
	return out
}

// cleanup kills whatever the sandbox left running and deletes its network
// namespaces (nodes, underlay, pods): after the supervisor stopped cleanly it
// finds nothing; after a crash it is what makes `down` complete.
func cleanup(l Layout) error {
	left := append(scan(l.Dir), scanFor(l.bfddRunPrefix())...)
	for _, p := range left {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	if err := proc.WaitFor(10*time.Second, 20*time.Millisecond, func() (bool, error) {
		for _, p := range left {
			if Alive(p.pid) {
				return false, fmt.Errorf("pid %d (%s) survived SIGKILL", p.pid, p.program)
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	cleanupRealNodes(l)
	names, err := namespaces(l.NetnsPrefix())
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if out, err := deps.OVNCommand("ip", "netns", "del", n).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", n, err, bytes.TrimSpace(out)))
		}
	}
	// The routers' bfdd files.
	if run, err := filepath.Glob(filepath.Join(deps.OVNRoot(), l.bfddRunPrefix()) + "*"); err == nil {
		for _, d := range run {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	// Pods' resolv.conf files (writeResolvConf).
	if etc, err := filepath.Glob(filepath.Join("/etc/netns", l.NetnsPrefix()+"*")); err == nil {
		for _, d := range etc {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	return errors.Join(errs...)
}

// Leftovers lists what of a sandbox still exists on the machine — processes
// (by their command line) and network namespaces — for tests of down.
func Leftovers(l Layout) []string {
	var out []string
	for _, p := range append(scan(l.Dir), scanFor(l.bfddRunPrefix())...) {
		out = append(out, fmt.Sprintf("process %d (%s)", p.pid, p.program))
	}
	names, _ := namespaces(l.NetnsPrefix())
	for _, n := range names {
		out = append(out, "netns "+n)
	}
	return out
}

// namespaces lists network namespaces whose names start with prefix.
func namespaces(prefix string) ([]string, error) {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if len(e.Name()) >= len(prefix) && e.Name()[:len(prefix)] == prefix {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
