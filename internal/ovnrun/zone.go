// Package ovnrun runs real OVN components from the installed Debian root: a zone
// (Northbound and Southbound ovsdb-server plus ovn-northd) on loopback TCP ports,
// with every file in one directory and every process tracked by PID.
package ovnrun

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Zone is one OVN interconnect zone: its own NB and SB databases and northd.
type Zone struct {
	Name string
	// Dir holds the databases, logs and control sockets.
	Dir string
	// NB and SB are the databases' OVSDB remotes, "tcp:127.0.0.1:PORT".
	NB, SB string

	nbServer, sbServer, northd *proc.Process
}

// ZoneOptions configures StartZone.
type ZoneOptions struct {
	// Name names the zone (it becomes NB_Global.name).
	Name string
	// Dir is where files go; it must exist.
	Dir string
}

// StartZone creates fresh NB and SB databases, starts their servers and northd,
// and returns once northd has synced the empty NB into the SB. On error every
// process it started is stopped.
func StartZone(opts ZoneOptions) (_ *Zone, err error) {
	z := &Zone{Name: opts.Name, Dir: opts.Dir}
	defer func() {
		if err != nil {
			z.Stop()
		}
	}()
	if z.nbServer, z.NB, err = z.startDB("nb", deps.OVNSchema("ovn-nb")); err != nil {
		return nil, err
	}
	if z.sbServer, z.SB, err = z.startDB("sb", deps.OVNSchema("ovn-sb")); err != nil {
		return nil, err
	}
	if err := z.StartNorthd(); err != nil {
		return nil, err
	}
	if _, err := z.NBCtl("set", "NB_Global", ".", "name="+opts.Name); err != nil {
		return nil, err
	}
	if err := z.Sync(10 * time.Second); err != nil {
		return nil, err
	}
	return z, nil
}

// StartNorthd (re)starts ovn-northd for the zone; StartZone calls it once.
func (z *Zone) StartNorthd() error {
	if z.northd != nil && !z.northd.Exited() {
		return nil
	}
	cmd := deps.OVNCommand("ovn-northd", "--ovnnb-db="+z.NB, "--ovnsb-db="+z.SB,
		"--unixctl="+filepath.Join(z.Dir, "northd.ctl"), "--no-chdir", "-vconsole:off", "-vfile:info",
		"--log-file="+filepath.Join(z.Dir, "northd.log"))
	cmd.Env = z.env()
	p, err := proc.Start("ovn-northd["+z.Name+"]", cmd, filepath.Join(z.Dir, "northd.out"))
	if err != nil {
		return err
	}
	z.northd = p
	return nil
}

// RestartDB stops one of the zone's database servers ("nb" or "sb") and starts
// it again on the same port: with its data, or, when wipe is set, with a fresh
// empty database (as after losing the database file).
func (z *Zone) RestartDB(db string, wipe bool) error {
	schema, p := deps.OVNSchema("ovn-nb"), &z.nbServer
	if db == "sb" {
		schema, p = deps.OVNSchema("ovn-sb"), &z.sbServer
	}
	(*p).Stop(3 * time.Second)
	file := filepath.Join(z.Dir, db+".db")
	if wipe {
		if err := os.Remove(file); err != nil {
			return err
		}
		if out, err := deps.OVNCommand("ovsdb-tool", "create", file, schema).CombinedOutput(); err != nil {
			return fmt.Errorf("zone %s: ovsdb-tool create %s: %v: %s", z.Name, db, err, out)
		}
	}
	np, err := z.serveDB(db, file, wipe)
	if err != nil {
		return err
	}
	*p = np
	return nil
}

// startDB creates a database from schema and serves it on a free loopback port.
func (z *Zone) startDB(db, schema string) (*proc.Process, string, error) {
	file := filepath.Join(z.Dir, db+".db")
	if out, err := deps.OVNCommand("ovsdb-tool", "create", file, schema).CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("zone %s: ovsdb-tool create %s: %v: %s", z.Name, db, err, out)
	}
	p, err := z.serveDB(db, file, true)
	if err != nil {
		return nil, "", err
	}
	return p, z.remote(db), nil
}

func (z *Zone) remote(db string) string {
	if db == "sb" {
		return z.SB
	}
	return z.NB
}

func (z *Zone) setRemote(db string, port int) {
	r := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	if db == "sb" {
		z.SB = r
	} else {
		z.NB = r
	}
}

// serveDB starts ovsdb-server for one database file. It listens on a unix
// socket in the zone's directory and on the TCP listener recorded in the
// database's Connection table; configure (for a new or wiped database) writes
// that table: 127.0.0.1 on a free port (the zone's port when it has one), with
// the inactivity probe off.
//
// The probe must be off: ovsdb-server drops a client that sends nothing for
// twice the probe interval (5 s by default), and libovsdb sends nothing while
// it decodes a large update (a controller's initial dump of thousands of
// networks), so it would reconnect for ever.
//
// northd's own probe is off too (NB_Global options:northd_probe_interval=0,
// which sets its probe on both databases): on TCP it defaults to 5 s, and
// northd, busy translating a large change for longer than that, reads no
// echo reply meanwhile, drops both connections as dead when it is done,
// loses its lock, downloads both databases again and starts over (seen at
// 500 networks × 100 nodes: a zone written in 6 s was translated after
// 64 s; at 4000 × 20 never).
func (z *Zone) serveDB(db, file string, configure bool) (*proc.Process, error) {
	dbName, global, ctl := "OVN_Northbound", "NB_Global", "ovn-nbctl"
	if db == "sb" {
		dbName, global, ctl = "OVN_Southbound", "SB_Global", "ovn-sbctl"
	}
	sock := filepath.Join(z.Dir, db+".sock")
	_ = os.Remove(sock)
	cmd := deps.OVNCommand("ovsdb-server", file,
		"--remote=punix:"+sock, "--remote=db:"+dbName+","+global+",connections",
		"--unixctl="+filepath.Join(z.Dir, db+".ctl"), "--no-chdir", "-vconsole:off", "-vfile:info",
		"--log-file="+filepath.Join(z.Dir, db+".log"))
	p, err := proc.Start(fmt.Sprintf("ovsdb-server[%s/%s]", z.Name, db), cmd, filepath.Join(z.Dir, db+".out"))
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*proc.Process, error) {
		p.Stop(time.Second)
		return nil, fmt.Errorf("zone %s: %s server: %w", z.Name, db, err)
	}
	// Accepting on its socket, not only bound: the file appears at bind(),
	// before listen(), and a client in between is refused (seen under load).
	if err := proc.WaitFor(10*time.Second, 5*time.Millisecond, func() (bool, error) {
		if p.Exited() {
			return false, p.ExitError()
		}
		c, err := net.DialTimeout("unix", sock, 100*time.Millisecond)
		if err != nil {
			return false, err // kept polling; the last error is reported on timeout
		}
		c.Close()
		return true, nil
	}); err != nil {
		return fail(err)
	}
	port := 0
	if r := z.remote(db); r != "" {
		fmt.Sscanf(r, "tcp:127.0.0.1:%d", &port)
	}
	if !configure {
		if err := WaitListening(p, port, 10*time.Second); err != nil {
			return fail(err)
		}
		return p, nil
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if port == 0 || attempt > 0 {
			if port, err = FreePort(); err != nil {
				return fail(err)
			}
		}
		args := []string{"--db=unix:" + sock, "--", "init",
			"--", "set-connection", fmt.Sprintf("ptcp:%d:127.0.0.1", port),
			"--", "set", "connection", ".", "inactivity_probe=0"}
		if db == "nb" {
			args = append(args, "--", "set", global, ".", "options:northd_probe_interval=0")
		}
		out, err := deps.OVNCommand(ctl, args...).CombinedOutput()
		if err != nil {
			return fail(fmt.Errorf("%s set-connection: %v: %s", ctl, err, out))
		}
		if lastErr = WaitListening(p, port, 5*time.Second); lastErr == nil {
			z.setRemote(db, port)
			return p, nil
		}
	}
	return fail(lastErr)
}

// WaitListening waits until something accepts TCP connections on 127.0.0.1:port,
// failing early if p exits.
func WaitListening(p *proc.Process, port int, timeout time.Duration) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return proc.WaitFor(timeout, 10*time.Millisecond, func() (bool, error) {
		if p.Exited() {
			return false, p.ExitError()
		}
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			return false, err
		}
		c.Close()
		return true, nil
	})
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (z *Zone) env() []string {
	return append(os.Environ(), "OVS_RUNDIR="+z.Dir, "OVN_RUNDIR="+z.Dir, "OVS_LOGDIR="+z.Dir, "OVN_LOGDIR="+z.Dir)
}

// NBCtl runs ovn-nbctl against the zone's NB and returns its stdout.
func (z *Zone) NBCtl(args ...string) (string, error) {
	return z.ctl("ovn-nbctl", z.NB, args)
}

// SBCtl runs ovn-sbctl against the zone's SB and returns its stdout.
func (z *Zone) SBCtl(args ...string) (string, error) {
	return z.ctl("ovn-sbctl", z.SB, args)
}

func (z *Zone) ctl(tool, db string, args []string) (string, error) {
	cmd := deps.OVNCommand(tool, append([]string{"--db=" + db}, args...)...)
	cmd.Env = z.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("zone %s: %s %s: %v: %s", z.Name, tool, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Sync waits until northd has translated everything written to the NB so far
// into the SB (ovn-nbctl --wait=sb sync).
func (z *Zone) Sync(timeout time.Duration) error {
	if z.northd == nil || z.northd.Exited() {
		return fmt.Errorf("zone %s: northd is not running", z.Name)
	}
	_, err := z.NBCtl(fmt.Sprintf("--timeout=%d", int(timeout.Seconds())), "--wait=sb", "sync")
	if err != nil && z.northd.Exited() {
		return z.northd.ExitError()
	}
	return err
}

// Processes returns the zone's running processes (for status output and fault
// injection).
func (z *Zone) Processes() map[string]*proc.Process {
	return map[string]*proc.Process{"nb": z.nbServer, "sb": z.sbServer, "northd": z.northd}
}

// Heal restarts whichever of the zone's processes has exited — a database
// server with its data, on its port — and returns their roles ("nb", "sb",
// "northd").
func (z *Zone) Heal() ([]string, error) {
	var restarted []string
	for _, db := range []string{"nb", "sb"} {
		if p := z.Processes()[db]; p != nil && p.Exited() {
			if err := z.RestartDB(db, false); err != nil {
				return restarted, err
			}
			restarted = append(restarted, db)
		}
	}
	if z.northd != nil && z.northd.Exited() {
		if err := z.StartNorthd(); err != nil {
			return restarted, err
		}
		restarted = append(restarted, "northd")
	}
	return restarted, nil
}

// Socket is a database's unix socket remote ("nb" or "sb"), reachable from
// any network namespace.
func (z *Zone) Socket(db string) string { return "unix:" + filepath.Join(z.Dir, db+".sock") }

// Stop stops northd and both database servers. It is safe to call twice and on a
// partly started zone.
func (z *Zone) Stop() {
	for _, p := range []*proc.Process{z.northd, z.sbServer, z.nbServer} {
		if p != nil {
			p.Stop(3 * time.Second)
		}
	}
}

// Logs returns the tails of the zone's logs, for failure messages.
func (z *Zone) Logs() string {
	var b strings.Builder
	for _, f := range []string{"nb.log", "sb.log", "northd.log", "northd.out"} {
		fmt.Fprintf(&b, "--- %s/%s\n%s\n", z.Name, f, proc.Tail(filepath.Join(z.Dir, f), 10))
	}
	return b.String()
}
