// Package memlimit sets the Go runtime's soft memory limit (GOMEMLIMIT) of
// ovn-udn's long-running components from --memory-limit: by default
// ("auto") to a share of the memory limit of the cgroup the process runs
// in (a container's limit), so that the collector works harder only as the
// process nears what would get it killed, and collects at the runtime's
// pace (GOGC) below that. A GOMEMLIMIT in the environment wins over the
// flag. Measured in docs/performance.md ("What the converged controller
// holds").
package memlimit

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Auto is the flag value that derives the limit from the cgroup's.
const Auto = "auto"

// Off is the flag value that sets no limit.
const Off = "off"

// Share is the part of the cgroup's limit that "auto" gives the Go heap:
// the rest is for what the runtime does not count (the binary, thread
// stacks, memory not returned to the system yet).
const Share = 0.9

// Flag is the --memory-limit help text.
const Flag = `the Go runtime's soft memory limit (on all the memory the runtime manages, not only the heap): "auto" (90% of the smallest memory limit along the process's cgroup and its ancestors, if any), "off", or a quantity such as 1536Mi; a GOMEMLIMIT environment variable wins`

// Apply sets the runtime's limit as value says and returns it (0: none
// set) with why, for the log.
func Apply(value string) (int64, string, error) {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT=" + env + " in the environment", nil
	}
	limit, why, err := Resolve(value, "/", readSelfCgroup())
	if err != nil || limit == 0 {
		return 0, why, err
	}
	debug.SetMemoryLimit(limit)
	return limit, why, nil
}

// Resolve is the limit value asks for (0: none) and why: with "auto", the
// Share of the smallest memory limit among the cgroups of selfCgroup (the
// text of /proc/self/cgroup) and their ancestors, under the file system
// rooted at root.
func Resolve(value, root, selfCgroup string) (int64, string, error) {
	switch value {
	case Off:
		return 0, "--memory-limit=off", nil
	case Auto, "":
		cg, where := CgroupLimit(root, selfCgroup)
		if cg == 0 {
			return 0, "no cgroup memory limit", nil
		}
		return int64(float64(cg) * Share), fmt.Sprintf("%d%% of the cgroup limit %d (%s)", int(Share*100), cg, where), nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil || q.Sign() <= 0 {
		return 0, "", fmt.Errorf("--memory-limit %q: want %s, %s or a positive quantity such as 1536Mi", value, Auto, Off)
	}
	return q.Value(), "--memory-limit=" + value, nil
}

// CgroupLimit is the smallest memory limit set on the process's cgroups
// (selfCgroup, the text of /proc/self/cgroup) or their ancestors, in bytes,
// and the file it was read from; 0 when there is none. It reads cgroup v2
// (memory.max) and v1 (memory.limit_in_bytes) hierarchies mounted at the
// usual places under root; in a cgroup namespace the process's cgroup is
// the hierarchy's root.
func CgroupLimit(root, selfCgroup string) (int64, string) {
	best, where := int64(0), ""
	consider := func(file string) {
		b, err := os.ReadFile(file)
		if err != nil {
			return
		}
		s := strings.TrimSpace(string(b))
		if s == "max" {
			return
		}
		v, err := strconv.ParseInt(s, 10, 64)
		// cgroup v1 says "unlimited" as the largest page multiple.
		if err != nil || v <= 0 || v >= math.MaxInt64/2 {
			return
		}
		if best == 0 || v < best {
			best, where = v, file
		}
	}
	sc := bufio.NewScanner(strings.NewReader(selfCgroup))
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		var dirs []string
		var file string
		switch {
		case f[0] == "0" && f[1] == "": // v2
			dirs, file = []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"}, "memory.max"
		case hasController(f[1], "memory"): // v1
			dirs, file = []string{"sys/fs/cgroup/memory"}, "memory.limit_in_bytes"
		default:
			continue
		}
		for _, d := range dirs {
			for p := filepath.Clean("/" + f[2]); ; p = filepath.Dir(p) {
				consider(filepath.Join(root, d, p, file))
				if p == "/" {
					break
				}
			}
		}
	}
	return best, where
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

func readSelfCgroup() string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	return string(b)
}
