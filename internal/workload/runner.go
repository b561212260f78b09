package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Restart backoff of a process that exits: 1 s, doubling to 30 s; back to 1 s
// after it ran for a minute (as a kubelet's CrashLoopBackOff, shorter).
const (
	minBackoff = time.Second
	maxBackoff = 30 * time.Second
	stopGrace  = 5 * time.Second
)

// markerEnv is set in every process's environment to the pod key and
// container, so a PID file left by a previous agent is only acted on if it
// still names that process (PIDs are reused).
const markerEnv = "OVN_UDN_WORKLOAD"

// Runner keeps each pod's processes running in the pod's network namespace.
// It is safe for concurrent use; one pod's slow stop never holds up another
// pod.
type Runner struct {
	// Exec builds the command that runs argv in network namespace netns.
	Exec func(netns string, argv []string) *exec.Cmd
	// Dir holds each process's log and PID file.
	Dir string
	// OnExit is called (off the caller's goroutine) with the pod key when a
	// process exits, so the pod is reconciled again.
	OnExit func(podKey string)

	mu   sync.Mutex
	pods map[string]*podProcs
}

// podProcs are one pod's processes, by container; mu serialises the pod's
// changes.
type podProcs struct {
	mu    sync.Mutex
	procs map[string]*running
}

type running struct {
	key   string // the pod's
	p     Process
	netns string
	proc  *proc.Process
	// restarts is how many times this container was restarted in a row of
	// short runs (for the backoff).
	restarts int
	started  time.Time
	// notBefore is when it may restart, longRun whether it ran for over a
	// minute (the backoff starts over); both set before exited closes.
	notBefore time.Time
	longRun   bool
	exited    chan struct{}
	stopping  atomic.Bool // stopped on purpose: its exit is not news
}

func (r *running) hasExited() bool {
	select {
	case <-r.exited:
		return true
	default:
		return false
	}
}

// pod returns podKey's record, creating it.
func (r *Runner) pod(podKey string) *podProcs {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[string]*podProcs{}
	}
	pp := r.pods[podKey]
	if pp == nil {
		pp = &podProcs{procs: map[string]*running{}}
		r.pods[podKey] = pp
	}
	return pp
}

// Ensure makes what runs for podKey equal to want, in netns: it starts what
// is missing, restarts what changed or moved, restarts what exited once its
// backoff is over, and stops what is no longer wanted. It returns how soon
// to call again when a restart waits for its backoff (0: no need).
func (r *Runner) Ensure(podKey, netns string, want []Process) (time.Duration, error) {
	pp := r.pod(podKey)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	wanted := map[string]bool{}
	var retry time.Duration
	var errs []error
	now := time.Now()
	for _, p := range want {
		wanted[p.Container] = true
		cur := pp.procs[p.Container]
		restarts := 0
		switch {
		case cur != nil && cur.p.Fingerprint() == p.Fingerprint() && cur.netns == netns && !cur.hasExited():
			continue // running as wanted
		case cur != nil && cur.p.Fingerprint() == p.Fingerprint() && cur.netns == netns:
			if now.Before(cur.notBefore) {
				if d := cur.notBefore.Sub(now); retry == 0 || d < retry {
					retry = d
				}
				continue
			}
			if !cur.longRun {
				restarts = cur.restarts + 1
			}
		case cur != nil:
			r.stop(cur)
		}
		next, err := r.start(podKey, netns, p, restarts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pp.procs[p.Container] = next
	}
	for name, cur := range pp.procs {
		if !wanted[name] {
			r.stop(cur)
			delete(pp.procs, name)
		}
	}
	return retry, errors.Join(errs...)
}

// Stop stops every process of podKey.
func (r *Runner) Stop(podKey string) {
	r.mu.Lock()
	pp := r.pods[podKey]
	delete(r.pods, podKey)
	r.mu.Unlock()
	if pp == nil {
		return
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for _, cur := range pp.procs {
		r.stop(cur)
	}
	pp.procs = map[string]*running{}
}

// StopAll stops every process (the agent is stopping).
func (r *Runner) StopAll() {
	r.mu.Lock()
	keys := make([]string, 0, len(r.pods))
	for k := range r.pods {
		keys = append(keys, k)
	}
	r.mu.Unlock()
	for _, k := range keys {
		r.Stop(k)
	}
}

// Running returns the containers of podKey whose process runs.
func (r *Runner) Running(podKey string) []string {
	r.mu.Lock()
	pp := r.pods[podKey]
	r.mu.Unlock()
	if pp == nil {
		return nil
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	var out []string
	for name, cur := range pp.procs {
		if !cur.hasExited() {
			out = append(out, name)
		}
	}
	return out
}

// base is the file name stem of a pod container's log and PID file.
func (r *Runner) base(podKey, container string) string {
	return filepath.Join(r.Dir, strings.ReplaceAll(podKey, "/", "_")+"_"+container)
}

func (r *Runner) start(podKey, netns string, p Process, restarts int) (*running, error) {
	base := r.base(podKey, p.Container)
	marker := markerEnv + "=" + podKey + "/" + p.Container
	killStale(base+".pid", marker)
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, err
	}
	cmd := r.Exec(netns, p.Argv)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", marker}, p.Env...)
	// Its own process group, killed with the agent (which restarts it).
	pr, err := proc.Start(podKey+"/"+p.Container, cmd, base+".log")
	if err != nil {
		return nil, err
	}
	_ = os.WriteFile(base+".pid", []byte(strconv.Itoa(pr.PID())), 0o644)
	cur := &running{key: podKey, p: p, netns: netns, proc: pr, restarts: restarts, exited: make(chan struct{}), started: time.Now()}
	go func() {
		<-pr.Done()
		_ = os.Remove(base + ".pid")
		backoff := min(minBackoff<<min(restarts, 5), maxBackoff)
		if cur.longRun = time.Since(cur.started) > time.Minute; cur.longRun {
			backoff = minBackoff
		}
		cur.notBefore = time.Now().Add(backoff)
		close(cur.exited)
		if r.OnExit != nil && !cur.stopping.Load() {
			r.OnExit(podKey)
		}
	}()
	return cur, nil
}

// stop ends a process: SIGTERM to its group, SIGKILL after a grace period.
func (r *Runner) stop(cur *running) {
	if cur.hasExited() {
		return
	}
	cur.stopping.Store(true)
	cur.proc.Stop(stopGrace)
	<-cur.exited
}

// killStale kills a process a previous agent left (its PID file), so a
// restarted agent does not collide with it on the pod's ports. Only a
// process whose environment still carries marker is killed.
func killStale(pidFile, marker string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	_ = os.Remove(pidFile)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil || !bytes.Contains(env, []byte(marker+"\x00")) {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
