package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Up starts a sandbox in the background and waits until it is ready. A
// running sandbox in the same directory is an error; one that crashed is
// cleaned up first.
func Up(opts Options, out io.Writer) error {
	if err := opts.Defaults(); err != nil {
		return err
	}
	l, err := NewLayout(opts.Dir)
	if err != nil {
		return err
	}
	if st, err := ReadState(l); err == nil {
		if Alive(st.SupervisorPID) {
			return fmt.Errorf("a sandbox is already running in %s (supervisor pid %d, %s); use it, or run `ovn-udn sandbox down` first",
				l.Dir, st.SupervisorPID, st.Phase)
		}
		fmt.Fprintf(out, "cleaning up the sandbox in %s, whose supervisor (pid %d) is gone\n", l.Dir, st.SupervisorPID)
	}
	if err := Down(l.Dir, io.Discard); err != nil {
		return err
	}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(l.SupervisorLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(opts.Binary, "sandbox", "supervise", "--dir", l.Dir, "--nodes", fmt.Sprint(opts.Nodes),
		"--uplinks", fmt.Sprint(opts.Uplinks), "--uplink-bridges", fmt.Sprint(opts.UplinkBridges), "--bfd-interval", opts.BFDInterval.String(),
		"--inactive-grace-period", opts.InactiveGracePeriod.String())
	if opts.Deploy {
		cmd.Args = append(cmd.Args, "--deploy", "--image", opts.Image)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: the supervisor outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if opts.Attached {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the supervisor: %w", err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	fmt.Fprintf(out, "starting a %d-node sandbox in %s (supervisor pid %d)\n", opts.Nodes, l.Dir, pid)
	var st *State
	// A failed start ends the wait at once (WaitFor's errors only say why
	// it goes on waiting).
	var failed error
	err = proc.WaitFor(opts.ReadyTimeout, 200*time.Millisecond, func() (bool, error) {
		select {
		case <-exited:
			failed = errSupervisorExited
			return true, nil
		default:
		}
		s, err := ReadState(l)
		if err != nil {
			return false, err
		}
		st = s
		switch s.Phase {
		case PhaseReady:
			return true, nil
		case PhaseFailed:
			failed = errors.New(s.Error)
			return true, nil
		}
		return false, fmt.Errorf("sandbox is %s", s.Phase)
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		if st != nil && st.Phase == PhaseFailed || errors.Is(err, errSupervisorExited) {
			return fmt.Errorf("the sandbox did not start: %w\nsupervisor log %s ends:\n%s\n(`ovn-udn sandbox down` removes what is left)",
				err, l.SupervisorLog(), proc.Tail(l.SupervisorLog(), 20))
		}
		return fmt.Errorf("the sandbox did not become ready: %w (see %s)", err, l.SupervisorLog())
	}
	fmt.Fprintf(out, "sandbox ready in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

var errSupervisorExited = errors.New("the supervisor exited")

// Down stops the sandbox in dir and removes everything it created: its
// processes (found by PID, or by their command line after a crash), network
// namespaces, and the state directory. Without a sandbox it does nothing.
func Down(dir string, out io.Writer) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	st, err := ReadState(l)
	switch {
	case err == nil && Alive(st.SupervisorPID) && isSupervisor(st.SupervisorPID):
		fmt.Fprintf(out, "stopping the sandbox in %s (supervisor pid %d)\n", l.Dir, st.SupervisorPID)
		_ = syscall.Kill(st.SupervisorPID, syscall.SIGTERM)
		if err := proc.WaitFor(90*time.Second, 100*time.Millisecond, func() (bool, error) {
			return !Alive(st.SupervisorPID), nil
		}); err != nil {
			fmt.Fprintf(out, "the supervisor did not stop in time; killing it\n")
			_ = syscall.Kill(st.SupervisorPID, syscall.SIGKILL)
		}
	case err != nil && !errors.Is(err, ErrNoSandbox):
		return err
	}
	if err := cleanup(l); err != nil {
		return err
	}
	return removeState(l, out)
}

// removeState deletes what a sandbox writes in its directory (only that: the
// directory may have been given by hand), and the directory once empty.
func removeState(l Layout, out io.Writer) error {
	if _, err := os.Stat(l.Dir); err != nil {
		return nil
	}
	for _, p := range []string{l.StateFile(), l.StateFile() + ".tmp", l.Kubeconfig(), l.SupervisorLog(), l.KubeDir(), l.LogDir(), l.imagesArchive(), l.deployDir(),
		filepath.Dir(l.ZoneDir("x")), filepath.Dir(l.NodeDir("x")), filepath.Dir(l.ExternalDNSRecords())} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	if err := os.Remove(l.Dir); err == nil {
		fmt.Fprintf(out, "removed %s\n", l.Dir)
	}
	return nil
}

// isSupervisor checks that pid runs `sandbox supervise` (not a process that
// reused the PID of a crashed one).
func isSupervisor(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(b), "\x00supervise\x00")
}

// Status prints the sandbox's state: nodes and every process with its PID,
// whether it runs, and how often it was restarted.
func Status(dir string, out io.Writer) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	st, err := ReadState(l)
	if err != nil {
		return err
	}
	phase := st.Phase
	if !Alive(st.SupervisorPID) {
		phase = "crashed: the supervisor (pid " + fmt.Sprint(st.SupervisorPID) + ") is gone; run `ovn-udn sandbox down`"
	}
	fmt.Fprintf(out, "sandbox:    %s\nstate:      %s\n", l.Dir, phase)
	if st.Error != "" {
		fmt.Fprintf(out, "error:      %s\n", st.Error)
	}
	fmt.Fprintf(out, "kubeconfig: %s\n", st.Kubeconfig)
	if st.ReadyAfter != "" {
		fmt.Fprintf(out, "started:    %s (ready after %s)\n", st.StartedAt.Format(time.RFC3339), st.ReadyAfter)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "\nNODE\tADDRESS\tNETNS\tNB\tSB")
	for _, n := range st.Nodes {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", n.Name, n.IP, n.Netns, n.NB, n.SB)
	}
	fmt.Fprintln(w, "\nPROCESS\tPID\tSTATE\tRESTARTS\tLOG")
	for _, p := range st.Processes {
		state := "running"
		if !p.Running || !Alive(p.PID) {
			state = "exited"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\n", p.Name, p.PID, state, p.Restarts, p.Log)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	for _, warn := range NorthdWarnings(st.Processes) {
		fmt.Fprintln(out, warn)
	}
	if st.Deployed {
		fmt.Fprintf(out, "\novn-udn runs as pods installed from %s: `ovn-udn sandbox kubectl -- -n %s get pods -o wide`\n",
			l.DeployOverlay(), DeployNamespace)
	}
	return nil
}

// NorthdWarnings are loud lines for every ovn-northd that restarted: the
// supervisor brings it back within seconds, which would hide a crash (an
// assertion in northd is a bug to report, see internal/northdgate).
func NorthdWarnings(ps []Process) []string {
	var out []string
	for _, p := range ps {
		if strings.HasPrefix(p.Name, "ovn-northd/") && p.Restarts > 0 {
			out = append(out, fmt.Sprintf("WARNING: %s restarted %d time(s): it crashed or was killed; look for \"assertion\" or \"EMER\" in %s",
				p.Name, p.Restarts, p.Log))
		}
	}
	return out
}

// SetZoneArgs sets the further arguments node's zone controller starts
// with from now on (none: its usual ones), for tests that play a zone
// controller of another release (Layout.ZoneArgsFile). It takes effect at
// the controller's next start (RestartProcess).
func SetZoneArgs(dir, node string, args ...string) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	if len(args) == 0 {
		if err := os.Remove(l.ZoneArgsFile(node)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(l.ZoneArgsFile(node), []byte(strings.Join(args, "\n")+"\n"), 0o644)
}

// RestartProcess kills one of the sandbox's processes (by its state name,
// e.g. "zone-controller/node1") and waits, at most timeout, until the
// supervisor runs it again.
func RestartProcess(dir, name string, timeout time.Duration) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	find := func() (Process, error) {
		st, err := ReadState(l)
		if err != nil {
			return Process{}, err
		}
		for _, p := range st.Processes {
			if p.Name == name {
				return p, nil
			}
		}
		return Process{}, fmt.Errorf("no process %s in the sandbox", name)
	}
	before, err := find()
	if err != nil {
		return err
	}
	if before.Running && before.PID != 0 {
		if err := syscall.Kill(before.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stopping %s: %w", name, err)
		}
	}
	return proc.WaitFor(timeout, 100*time.Millisecond, func() (bool, error) {
		p, err := find()
		if err != nil {
			return false, err
		}
		return p.Running && p.PID != 0 && p.PID != before.PID, nil
	})
}
