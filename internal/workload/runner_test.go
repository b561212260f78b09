package workload

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// TestRunner runs real processes (in this network namespace: Exec ignores
// netns here): started, restarted after they exit, restarted when changed,
// and stopped.
func TestRunner(t *testing.T) {
	dir := t.TempDir()
	exits := make(chan string, 10)
	r := &Runner{Dir: dir, Exec: func(_ string, argv []string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) },
		OnExit: func(k string) { exits <- k }}
	sleep := Process{Container: "c", Argv: []string{"/bin/sh", "-c", "echo $HOSTNAME; exec sleep 60"}, Env: []string{"HOSTNAME=p1"}}
	if _, err := r.Ensure("ns/p1", "n1", []Process{sleep}); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "ns_p1_c.log")
	if err := proc.WaitFor(5*time.Second, 10*time.Millisecond, func() (bool, error) {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "p1\n"), nil
	}); err != nil {
		t.Fatalf("process did not run: %v", err)
	}
	if got := r.Running("ns/p1"); len(got) != 1 {
		t.Fatalf("running %v", got)
	}
	// Ensuring the same again starts nothing new.
	pid := r.pods["ns/p1"].procs["c"].proc.PID()
	if _, err := r.Ensure("ns/p1", "n1", []Process{sleep}); err != nil || r.pods["ns/p1"].procs["c"].proc.PID() != pid {
		t.Fatalf("restarted an unchanged process (%v)", err)
	}
	// A process that exits is restarted after its backoff.
	quick := Process{Container: "c", Argv: []string{"/bin/sh", "-c", "exit 3"}}
	if _, err := r.Ensure("ns/p1", "n1", []Process{quick}); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-exits:
		if k != "ns/p1" {
			t.Fatalf("exit reported for %s", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exit not reported")
	}
	retry, err := r.Ensure("ns/p1", "n1", []Process{quick})
	if err != nil || retry <= 0 || retry > minBackoff {
		t.Fatalf("retry %v (%v), want a backoff up to %v", retry, err, minBackoff)
	}
	// Once the backoff is over it runs again, and the next backoff is longer.
	restarted := false
	if err := proc.WaitFor(5*time.Second, 50*time.Millisecond, func() (bool, error) {
		if _, err := r.Ensure("ns/p1", "n1", []Process{quick}); err != nil {
			return false, err
		}
		restarted = r.pods["ns/p1"].procs["c"].restarts == 1
		return restarted, nil
	}); err != nil {
		t.Fatalf("not restarted after its backoff: %v", err)
	}
	<-exits
	if retry, _ = r.Ensure("ns/p1", "n1", []Process{quick}); retry <= minBackoff {
		t.Fatalf("second backoff %v, want more than %v", retry, minBackoff)
	}
	// Stop ends everything.
	if _, err := r.Ensure("ns/p1", "n1", []Process{sleep}); err != nil {
		t.Fatal(err)
	}
	pid = r.pods["ns/p1"].procs["c"].proc.PID()
	r.Stop("ns/p1")
	if len(r.Running("ns/p1")) != 0 {
		t.Fatal("still running after Stop")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatal("process still alive after Stop")
	}
}
