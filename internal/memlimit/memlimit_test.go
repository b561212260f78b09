package memlimit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestResolve: the smallest limit on the process's cgroups and their
// ancestors, in cgroup v2 (also the hybrid layout's unified mount) and v1;
// "max" and v1's "unlimited" are no limit; off, quantities and bad values.
func TestResolve(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/fs/cgroup/kubepods/pod1/memory.max", "2147483648") // the pod's limit
	write("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max")    // the container sets none
	write("sys/fs/cgroup/memory/kubepods/pod2/ctr/memory.limit_in_bytes", "1073741824")
	write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712")
	write("sys/fs/cgroup/unified/ns/memory.max", "536870912")
	for _, c := range []struct {
		name, value, self string
		want              int64
		err               bool
	}{
		{"v2, the pod's limit above the container", Auto, "0::/kubepods/pod1/ctr\n", 2147483648 * 9 / 10, false},
		{"v1", Auto, "4:memory:/kubepods/pod2/ctr\n0::/\n", 1073741824 * 9 / 10, false},
		{"v1, unlimited", Auto, "4:memory:/\n", 0, false},
		{"hybrid: the unified mount", Auto, "4:memory:/\n0::/ns\n", 536870912 * 9 / 10, false},
		{"no cgroup file", Auto, "0::/elsewhere\n", 0, false},
		{"off", Off, "0::/kubepods/pod1/ctr\n", 0, false},
		{"a quantity", "1536Mi", "0::/kubepods/pod1/ctr\n", 1536 << 20, false},
		{"not a quantity", "lots", "", 0, true},
		{"negative", "-1Gi", "", 0, true},
	} {
		got, why, err := Resolve(c.value, root, c.self)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%s: %d (%s, %v), want %d (error %v)", c.name, got, why, err, c.want, c.err)
		}
	}
}

// helperEnv makes the test binary apply --memory-limit=auto and print the
// runtime's limit (TestApplyInCgroup).
const helperEnv = "MEMLIMIT_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		if _, why, err := Apply(Auto); err != nil {
			fmt.Fprintln(os.Stderr, why, err)
			os.Exit(1)
		}
		fmt.Println(debug.SetMemoryLimit(-1))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestApplyInCgroup: a process started in a real memory cgroup with a
// limit (a v1 one here, where the machine has it, else v2) sets its
// runtime's limit to 90% of it.
func TestApplyInCgroup(t *testing.T) {
	var limit int64 = 512 << 20
	var dir, file string
	for _, c := range []struct{ mount, file string }{{"/sys/fs/cgroup/memory", "memory.limit_in_bytes"}, {"/sys/fs/cgroup", "memory.max"}} {
		if _, err := os.Stat(filepath.Join(c.mount, c.file)); err != nil && c.file == "memory.limit_in_bytes" {
			continue
		}
		d, err := os.MkdirTemp(c.mount, "memlimit-test-")
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(d, c.file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			os.Remove(d)
			continue
		}
		dir, file = d, c.file
		break
	}
	if dir == "" {
		t.Skip("cannot make a memory cgroup with a limit here")
	}
	defer os.Remove(dir)
	cmd := exec.Command("sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(dir, "cgroup.procs"), os.Args[0], "-test.run=XXX")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "GOMEMLIMIT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if want := int64(float64(limit) * Share); err != nil || got != want {
		t.Errorf("in a cgroup limited to %d (%s): the runtime's limit is %q, want %d", limit, file, out, want)
	}
}
