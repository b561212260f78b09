package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Phases of a sandbox.
const (
	PhaseStarting = "starting"
	PhaseReady    = "ready"
	PhaseFailed   = "failed"
	PhaseStopping = "stopping"
)

// State is what the supervisor records about the sandbox.
type State struct {
	// SupervisorPID is the supervisor's process ID.
	SupervisorPID int    `json:"supervisorPID"`
	Phase         string `json:"phase"`
	// Error says why the phase is failed.
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// ReadyAfter is how long the sandbox took to become ready.
	ReadyAfter string `json:"readyAfter,omitempty"`
	Kubeconfig string `json:"kubeconfig"`
	// Deployed says ovn-udn runs as pods from its image and config/deploy
	// (Options.Deploy), not as the supervisor's processes.
	Deployed bool        `json:"deployed,omitempty"`
	Nodes    []NodeState `json:"nodes"`
	// Routers are the outside routers' addresses on their segments with
	// the nodes, router k at index k-1.
	Routers []string `json:"routers,omitempty"`
	// ExternalDNS is the outside world's DNS server (host:port), which
	// the zone controllers resolve EgressFirewall names with.
	ExternalDNS string    `json:"externalDNS,omitempty"`
	Processes   []Process `json:"processes"`
}

// NodeState describes one node.
type NodeState struct {
	Name  string `json:"name"`
	IP    string `json:"ip"`
	Netns string `json:"netns"`
	// NB and SB are the node's zone databases (loopback TCP; in deploy
	// mode the zone pod's unix sockets).
	NB string `json:"nb"`
	SB string `json:"sb"`
	// OVSDB is the node's Open vSwitch database.
	OVSDB string `json:"ovsdb"`
	// UplinkIPs are the node's addresses on further uplinks' segments
	// (--uplink-bridges), where the outside sees its egress through them.
	UplinkIPs []string `json:"uplinkIPs,omitempty"`
}

// Process is one process the supervisor runs.
type Process struct {
	// Name is "<role>" or "<role>/<node>", e.g. "zone-controller/node1".
	Name     string `json:"name"`
	PID      int    `json:"pid"`
	Running  bool   `json:"running"`
	Restarts int    `json:"restarts"`
	Log      string `json:"log"`
	// Metrics is where ovn-udn's components serve /metrics
	// (127.0.0.1:PORT).
	Metrics string `json:"metrics,omitempty"`
}

// ErrNoSandbox is returned when the state directory holds no sandbox.
var ErrNoSandbox = errors.New("no sandbox")

// ReadState reads the supervisor's record.
func ReadState(l Layout) (*State, error) {
	b, err := os.ReadFile(l.StateFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoSandbox, l.Dir)
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", l.StateFile(), err)
	}
	return &s, nil
}

// writeState replaces the record atomically.
func writeState(l Layout, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := l.StateFile() + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, l.StateFile())
}

// Alive reports whether a process with this PID exists (and is not a zombie).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	for i := len(b) - 1; i > 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2] != 'Z'
		}
	}
	return true
}
