package ovnrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Node is one node's Open vSwitch (its database server and ovs-vswitchd with
// the userspace datapath) and, once StartController has run, its
// ovn-controller: an OVN chassis. ovs-vswitchd and ovn-controller run inside
// the node's network namespace; the database server serves a unix socket in
// the node's directory, which every namespace can reach.
type Node struct {
	Name string
	// Dir holds the database, sockets and logs.
	Dir string
	// Netns is the node's network namespace (it must exist).
	Netns string
	// DB is the node's OVS database remote ("unix:<dir>/db.sock").
	DB string

	server, vswitchd, controller *proc.Process
	controllerOpts               *ControllerOptions
}

// NodeOptions configures StartNode.
type NodeOptions struct {
	Name, Dir, Netns string
}

// ControllerOptions makes the node an OVN chassis.
type ControllerOptions struct {
	// SystemID is the chassis name.
	SystemID string
	// SB is the zone's Southbound remote as seen from inside the node's
	// namespace (a unix socket: loopback TCP in the root namespace is not).
	SB string
	// EncapIP is the node's Geneve tunnel endpoint.
	EncapIP string
	// BridgeMappings is ovn-bridge-mappings ("physnet:br-ex"); optional.
	BridgeMappings string
}

// StartNode creates a fresh OVS database, starts its server and ovs-vswitchd,
// and creates the integration bridge br-int (userspace datapath). On error
// every process it started is stopped.
func StartNode(opts NodeOptions) (_ *Node, err error) {
	n := &Node{Name: opts.Name, Dir: opts.Dir, Netns: opts.Netns, DB: "unix:" + filepath.Join(opts.Dir, "db.sock")}
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	file := filepath.Join(n.Dir, "conf.db")
	if out, err := deps.OVNCommand("ovsdb-tool", "create", file, deps.VSwitchSchema()).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("node %s: ovsdb-tool create: %v: %s", n.Name, err, out)
	}
	if err := n.startServer(); err != nil {
		return nil, err
	}
	if _, err := n.VSCtl("--no-wait", "init"); err != nil {
		return nil, err
	}
	if err := n.startVSwitchd(); err != nil {
		return nil, err
	}
	if _, err := n.VSCtl("--may-exist", "add-br", "br-int", "--", "set", "Bridge", "br-int", "datapath_type=netdev", "fail_mode=secure"); err != nil {
		return nil, err
	}
	return n, nil
}

func (n *Node) env() []string {
	return append(os.Environ(), "OVS_RUNDIR="+n.Dir, "OVN_RUNDIR="+n.Dir, "OVS_LOGDIR="+n.Dir, "OVN_LOGDIR="+n.Dir)
}

// inNetns runs an installed program inside the node's namespace. The run
// directory must be the node's own: ovs-vswitchd names per-bridge sockets
// (br-int.mgmt) after the bridge, and nodes share bridge names.
func (n *Node) inNetns(program string, args ...string) *exec.Cmd {
	cmd := deps.OVNCommand("ip", append([]string{"netns", "exec", n.Netns, deps.OVNProgram(program)}, args...)...)
	cmd.Env = n.env()
	return cmd
}

func (n *Node) startServer() error {
	sock := filepath.Join(n.Dir, "db.sock")
	_ = os.Remove(sock)
	cmd := deps.OVNCommand("ovsdb-server", filepath.Join(n.Dir, "conf.db"), "--remote=punix:"+sock,
		"--unixctl="+filepath.Join(n.Dir, "ovsdb.ctl"), "--no-chdir", "-vconsole:off", "-vfile:info",
		"--log-file="+filepath.Join(n.Dir, "ovsdb.log"))
	cmd.Env = n.env()
	p, err := proc.Start("ovsdb-server["+n.Name+"]", cmd, filepath.Join(n.Dir, "ovsdb.out"))
	if err != nil {
		return err
	}
	n.server = p
	return waitFile(p, sock)
}

func (n *Node) startVSwitchd() (err error) {
	n.vswitchd, err = n.startDaemon("ovs-vswitchd", "vswitchd")
	return err
}

// startDaemon starts an OVS or OVN daemon on the node's database inside the
// node's network namespace, with its control socket, log and output named
// after base in the node's directory, and waits until it answers.
func (n *Node) startDaemon(program, base string) (*proc.Process, error) {
	ctl := filepath.Join(n.Dir, base+".ctl")
	_ = os.Remove(ctl)
	cmd := n.inNetns(program, n.DB, "--unixctl="+ctl, "--no-chdir",
		"-vconsole:off", "-vfile:info", "--log-file="+filepath.Join(n.Dir, base+".log"))
	p, err := proc.Start(program+"["+n.Name+"]", cmd, filepath.Join(n.Dir, base+".out"))
	if err != nil {
		return nil, err
	}
	return p, waitFile(p, ctl)
}

// StartController configures the node as an OVN chassis and starts
// ovn-controller.
func (n *Node) StartController(opts ControllerOptions) error {
	args := []string{"set", "Open_vSwitch", ".", "external_ids:system-id=" + opts.SystemID,
		"external_ids:ovn-remote=" + opts.SB, "external_ids:ovn-encap-type=geneve",
		"external_ids:ovn-encap-ip=" + opts.EncapIP, "external_ids:ovn-bridge-datapath-type=netdev",
		"external_ids:ovn-is-interconn=true"}
	if opts.BridgeMappings != "" {
		args = append(args, "external_ids:ovn-bridge-mappings="+opts.BridgeMappings)
	}
	if _, err := n.VSCtl(args...); err != nil {
		return err
	}
	n.controllerOpts = &opts
	return n.startController()
}

func (n *Node) startController() (err error) {
	n.controller, err = n.startDaemon("ovn-controller", "ovn-controller")
	return err
}

// VSCtl runs ovs-vsctl against the node's database and returns its stdout.
func (n *Node) VSCtl(args ...string) (string, error) {
	cmd := deps.OVNCommand("ovs-vsctl", append([]string{"--db=" + n.DB, "--timeout=10"}, args...)...)
	cmd.Env = n.env()
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("node %s: ovs-vsctl %s: %v: %s", n.Name, strings.Join(args, " "), err, msg)
	}
	return string(out), nil
}

// Processes returns the node's processes by role ("ovsdb-server",
// "ovs-vswitchd", "ovn-controller"); absent ones are left out.
func (n *Node) Processes() map[string]*proc.Process {
	out := map[string]*proc.Process{}
	for name, p := range map[string]*proc.Process{"ovsdb-server": n.server, "ovs-vswitchd": n.vswitchd, "ovn-controller": n.controller} {
		if p != nil {
			out[name] = p
		}
	}
	return out
}

// Heal restarts whichever of the node's processes has exited (with the same
// database) and returns their roles.
func (n *Node) Heal() ([]string, error) {
	var restarted []string
	if n.server != nil && n.server.Exited() {
		if err := n.startServer(); err != nil {
			return restarted, err
		}
		restarted = append(restarted, "ovsdb-server")
	}
	if n.vswitchd != nil && n.vswitchd.Exited() {
		if err := n.startVSwitchd(); err != nil {
			return restarted, err
		}
		restarted = append(restarted, "ovs-vswitchd")
	}
	if n.controller != nil && n.controller.Exited() {
		if err := n.startController(); err != nil {
			return restarted, err
		}
		restarted = append(restarted, "ovn-controller")
	}
	return restarted, nil
}

// Stop stops ovn-controller, ovs-vswitchd and the database server. It is safe
// to call twice and on a partly started node.
func (n *Node) Stop() {
	for _, p := range []*proc.Process{n.controller, n.vswitchd, n.server} {
		if p != nil {
			p.Stop(3 * time.Second)
		}
	}
}

// Logs returns the tails of the node's logs, for failure messages.
func (n *Node) Logs() string {
	var b strings.Builder
	for _, f := range []string{"ovsdb.log", "vswitchd.log", "ovn-controller.log"} {
		fmt.Fprintf(&b, "--- %s/%s\n%s\n", n.Name, f, proc.Tail(filepath.Join(n.Dir, f), 10))
	}
	return b.String()
}

// waitFile waits until a process has created path (its socket), failing early
// if it exits.
func waitFile(p *proc.Process, path string) error {
	return proc.WaitFor(10*time.Second, 5*time.Millisecond, func() (bool, error) {
		if p.Exited() {
			return false, p.ExitError()
		}
		_, err := os.Stat(path)
		return err == nil, err
	})
}
