// Package sandbox runs a local multi-node ovn-udn cluster on one machine: a
// real kube-apiserver and etcd, and per node a real OVN zone (NB, SB, northd),
// Open vSwitch with the userspace datapath and ovn-controller in the node's own
// network namespace, the node agent and the zone controller; one
// cluster-manager. Nodes reach each other over Geneve through an underlay
// bridge in another namespace, so packets between pods really cross "nodes".
//
// A detached supervisor process (`ovn-udn sandbox supervise`) owns every
// process, restarts the ones that die, and records the sandbox's state in a
// JSON file in the state directory; the other subcommands (up, down, status,
// apply, exec, kubeconfig) read that file.
//
// This package is the cluster's lifecycle; what the demo measures in it is
// internal/tools/sandbox/demo.
package sandbox

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// DirEnv overrides the default state directory.
const DirEnv = "OVN_UDN_SANDBOX_DIR"

// DefaultDir is the state directory used when none is given.
func DefaultDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	return filepath.Join(deps.CacheDir(), "sandbox")
}

// Layout names every file and namespace of a sandbox, from its state
// directory.
type Layout struct {
	// Dir is the state directory (absolute).
	Dir string
}

// NewLayout returns the layout of the sandbox in dir.
func NewLayout(dir string) (Layout, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, err
	}
	return Layout{Dir: abs}, nil
}

// StateFile is the supervisor's record of the sandbox.
func (l Layout) StateFile() string { return filepath.Join(l.Dir, "state.json") }

// Kubeconfig is the administrator's kubeconfig.
func (l Layout) Kubeconfig() string { return filepath.Join(l.Dir, "kubeconfig") }

// SupervisorLog is the supervisor's own log.
func (l Layout) SupervisorLog() string { return filepath.Join(l.Dir, "supervisor.log") }

// KubeDir holds etcd's data, the API server's certificates and the
// components' kubeconfigs.
func (l Layout) KubeDir() string { return filepath.Join(l.Dir, "kube") }

// LogDir holds the ovn-udn components' logs.
func (l Layout) LogDir() string { return filepath.Join(l.Dir, "logs") }

// ZoneDir holds a node's OVN zone (databases, northd, logs).
func (l Layout) ZoneDir(node string) string { return filepath.Join(l.Dir, "zones", node) }

// ZoneArgsFile holds further arguments of a node's zone controller, one a
// line, read at each of its starts (SetZoneArgs): how a test plays a zone
// controller of another release, such as one rendering the old Layer2
// topology.
func (l Layout) ZoneArgsFile(node string) string {
	return filepath.Join(l.ZoneDir(node), "controller.args")
}

// NodeDir holds a node's Open vSwitch and ovn-controller.
func (l Layout) NodeDir(node string) string { return filepath.Join(l.Dir, "nodes", node) }

// prefix starts every network namespace of this sandbox: short (names show
// in `ip netns`), and distinct per state directory so two sandboxes (a
// developer's and a test's) never collide.
func (l Layout) prefix() string {
	h := sha1.Sum([]byte(l.Dir))
	return "ou" + hex.EncodeToString(h[:])[:6] + "-"
}

// NetnsPrefix starts the name of every network namespace of the sandbox.
func (l Layout) NetnsPrefix() string { return l.prefix() }

// UnderlayNetns holds the bridge every node's underlay interface is on.
func (l Layout) UnderlayNetns() string { return l.prefix() + "underlay" }

// ExternalNetns is the outside world: on the underlay at the nodes' next
// hop, running echo servers.
func (l Layout) ExternalNetns() string { return l.prefix() + "external" }

// ExternalDNSRecords is the outside world's DNS records file
// (internal/dnsresolve/dnsserve's format), read on every question: a test
// rewrites it to move a name.
func (l Layout) ExternalDNSRecords() string { return filepath.Join(l.Dir, "external", "dns-records") }

// NodeNetns is a node's network namespace.
func (l Layout) NodeNetns(node string) string { return l.prefix() + node }

// NodeName is the i-th node's name (from 1).
func NodeName(i int) string { return fmt.Sprintf("node%d", i) }

// NodeIP is the i-th node's (from 1) address on the underlay: its primary
// address and Geneve endpoint.
func NodeIP(i int) string { return fmt.Sprintf("192.168.100.%d/24", 10+i) }

// GatewayMAC is the MAC of the i-th node's external bridge, and so of its
// gateway routers' external ports (which share the node's address).
func GatewayMAC(i int) string { return fmt.Sprintf("02:00:c0:a8:64:%02x", 10+i) }

// The outside world (ExternalNetns): the nodes' next hop on the underlay,
// and a server address beyond it.
const (
	// ExternalRouterIP is the nodes' and gateway routers' default next hop.
	ExternalRouterIP = "192.168.100.1"
	// ExternalServerIP is an address outside the cluster, behind
	// ExternalRouterIP, where echo servers listen.
	ExternalServerIP = "198.51.100.10"
	// ExternalServerIP2 is a second such address (the same servers
	// answer there): a destination a rule about ExternalServerIP does not
	// cover.
	ExternalServerIP2 = "198.51.100.11"
	// ExternalDNSName resolves to ExternalServerIP at the outside world's
	// DNS server (State.ExternalDNS).
	ExternalDNSName = "server.outside.test"
	// ExternalPort is where the echo servers listen (TCP and UDP).
	ExternalPort = 9000
	// ExternalSinkPort is where the outside world counts the bytes a
	// connection sends (ServeSink, for throughput).
	ExternalSinkPort = 9001
	// ExternalDSCPPort is where the outside world answers a UDP datagram
	// with the DSCP it arrived with (demo.ServeDSCP, for EgressQoS).
	ExternalDSCPPort = 9002
	// ClientReply, as a server's reply, answers with the client address
	// the server saw.
	ClientReply = "{client}"
)

func underlayLink(i int) string { return fmt.Sprintf("ul%d", i) }

// UnderlayLink is the underlay's end of node i's link (in UnderlayNetns):
// setting it down takes the node off the network, as a pulled cable does.
func UnderlayLink(i int) string { return underlayLink(i) }

// NewLayoutMust is NewLayout for directories known to resolve.
func NewLayoutMust(dir string) Layout {
	l, err := NewLayout(dir)
	if err != nil {
		panic(err)
	}
	return l
}

// NodeAddr is a sandbox node's address, from its name.
func NodeAddr(node string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(node, "node"))
	return strings.Split(NodeIP(i), "/")[0]
}
