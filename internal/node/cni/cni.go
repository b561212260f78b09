// Package cni wires a pod's network attachments into a node: for each
// attachment of the pod-networks annotation, a veth pair whose pod end gets the
// annotated name, MAC, addresses and routes inside the pod's network namespace,
// and whose host end is plugged into the node's integration bridge with
// external_ids:iface-id = the attachment's logical port, so ovn-controller
// binds it. It is what ovn-udn's CNI plugin's ADD and DEL do: the node agent's
// CNI server calls it. The pod's namespace is the container runtime's: this
// package never creates or deletes one.
package cni

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// Interface is one interface to create in a pod.
type Interface struct {
	// Name inside the pod: eth0, ovn-udn1, net1, ...
	Name string
	// Port is the OVN logical switch port (the OVS interface's iface-id).
	Port string
	MAC  string
	// IPs are the addresses with their on-link prefix lengths.
	IPs []netip.Prefix
	// Gateways make this interface the pod's default route.
	Gateways []netip.Addr
	Routes   []podnet.Route
	MTU      int
}

// Host is a node's side of the plumbing.
type Host struct {
	// Netns is the network namespace holding the node's Open vSwitch bridges
	// ("" for the caller's own).
	Netns string
	// OVSDB is the node's Open vSwitch database ("unix:/path/db.sock").
	OVSDB string
	// Bridge is the integration bridge (br-int).
	Bridge string
	// Command builds a command for a program (ip, ovs-vsctl).
	Command func(program string, args ...string) *exec.Cmd
	// Path resolves a program run inside a pod's namespace by "ip netns exec"
	// (ethtool); nil leaves the name to $PATH.
	Path func(program string) string
}

func (h Host) path(program string) string {
	if h.Path == nil {
		return program
	}
	return h.Path(program)
}

// External IDs on the OVS interfaces the plumbing creates.
const (
	PodKey    = "k8s.ovn.org/pod"
	ConfigKey = "k8s.ovn.org/interface-config"
	NetnsKey  = "k8s.ovn.org/netns"
	// SandboxKey is the container runtime's sandbox (CNI_CONTAINERID) an
	// interface was plumbed for through the CNI plugin; DEL and GC match it.
	SandboxKey = "k8s.ovn.org/sandbox"
)

// HostVeth is the host-side name of a port's veth: short (interface names
// have 15 characters), unique per port.
func HostVeth(port string) string {
	h := sha1.Sum([]byte(port))
	return "ovn" + hex.EncodeToString(h[:])[:11]
}

// Fingerprint summarises an interface's configuration; a change means the
// interface must be re-created.
func (i Interface) Fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%d|", i.Name, i.Port, i.MAC, i.MTU)
	for _, p := range i.IPs {
		b.WriteString(p.String() + ",")
	}
	for _, g := range i.Gateways {
		b.WriteString(g.String() + ",")
	}
	for _, r := range i.Routes {
		b.WriteString(r.Dest + ">" + r.NextHop + ",")
	}
	h := sha1.Sum([]byte(b.String()))
	return hex.EncodeToString(h[:8])
}

func (h Host) run(program string, args ...string) error {
	cmd := h.Command(program, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err != nil {
		return fmt.Errorf("%s %s: %v: %s%s", program, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()), out)
	}
	return nil
}

func (h Host) output(program string, args ...string) (string, error) {
	cmd := h.Command(program, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", program, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func (h Host) ip(netns string, args ...string) error {
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	return h.run("ip", args...)
}

func (h Host) vsctl(args ...string) error {
	return h.run("ovs-vsctl", append([]string{"--db=" + h.OVSDB, "--timeout=10"}, args...)...)
}

// Add plugs the pod's interfaces into its network namespace, which the
// container runtime made; an interface that exists is first removed. podKey
// ("ns/name") and the runtime's sandbox ID (when not empty) are recorded on
// the OVS interfaces, so Ports can find them later. It runs a fixed handful
// of commands per pod (ip -batch, one ovs-vsctl transaction), not a handful
// per address and route: on a busy node, process start-up is the cost. It
// never creates or deletes a namespace.
func (h Host) Add(podNetns, podKey, sandbox string, ifaces []Interface) error {
	if len(ifaces) == 0 {
		return nil
	}
	var ports []string
	for _, i := range ifaces {
		ports = append(ports, i.Port)
	}
	if err := h.remove(ports...); err != nil {
		return err
	}
	if err := h.add(podNetns, podKey, sandbox, ifaces); err != nil {
		_ = h.remove(ports...)
		return fmt.Errorf("interfaces of %s: %w", podKey, err)
	}
	return nil
}

func (h Host) add(podNetns, podKey, sandbox string, ifaces []Interface) error {
	// The veth pairs, each end created straight in its namespace.
	for _, i := range ifaces {
		link := []string{"link", "add", HostVeth(i.Port)}
		if h.Netns != "" {
			link = append(link, "netns", h.Netns)
		}
		link = append(link, "type", "veth", "peer", "name", i.Name, "netns", podNetns)
		if err := h.run("ip", link...); err != nil {
			return err
		}
	}
	// The pod side: MAC, MTU, addresses, then (every interface being up, so
	// gateways are on-link) routes.
	var pod, host []string
	vsctl := []string{"--may-exist", "add-port", h.Bridge, HostVeth(ifaces[0].Port)}
	for n, i := range ifaces {
		mtu := i.MTU
		if mtu == 0 {
			mtu = 1400
		}
		pod = append(pod, fmt.Sprintf("link set %s address %s mtu %d", i.Name, i.MAC, mtu))
		for _, p := range i.IPs {
			if p.Addr().Is6() {
				pod = append(pod, fmt.Sprintf("addr add %s dev %s nodad", p, i.Name))
			} else {
				pod = append(pod, fmt.Sprintf("addr add %s dev %s", p, i.Name))
			}
		}
		pod = append(pod, "link set "+i.Name+" up")
		host = append(host, fmt.Sprintf("link set %s mtu %d up", HostVeth(i.Port), mtu))
		if n > 0 {
			vsctl = append(vsctl, "--", "--may-exist", "add-port", h.Bridge, HostVeth(i.Port))
		}
		vsctl = append(vsctl, "--", "set", "Interface", HostVeth(i.Port), "external_ids:iface-id="+i.Port,
			"external_ids:"+PodKey+"="+podKey, "external_ids:"+ConfigKey+"="+i.Fingerprint(), "external_ids:"+NetnsKey+"="+podNetns)
		if sandbox != "" {
			vsctl = append(vsctl, "external_ids:"+SandboxKey+"="+sandbox)
		}
	}
	for _, i := range ifaces {
		pod = append(pod, routeLines(i)...)
	}
	if err := h.batch(podNetns, pod); err != nil {
		return err
	}
	// The userspace datapath does not fill in checksums the kernel leaves to
	// the device: the pod computes them itself.
	for _, i := range ifaces {
		if err := h.run("ip", "netns", "exec", podNetns, h.path("ethtool"), "-K", i.Name, "tx", "off"); err != nil {
			return err
		}
	}
	if err := h.batch(h.Netns, host); err != nil {
		return err
	}
	return h.vsctl(vsctl...)
}

// routeLines are an interface's routes as ip -batch lines (which take no
// options: the family comes from the next hop).
func routeLines(i Interface) []string {
	var out []string
	for _, gw := range i.Gateways {
		out = append(out, fmt.Sprintf("route replace default via %s dev %s", gw, i.Name))
	}
	for _, r := range i.Routes {
		out = append(out, fmt.Sprintf("route replace %s via %s dev %s", r.Dest, r.NextHop, i.Name))
	}
	return out
}

// batch runs ip commands in a namespace ("" for the caller's) in one process.
func (h Host) batch(netns string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	args := []string{"-batch", "-"}
	if netns != "" {
		args = append([]string{"-n", netns}, args...)
	}
	cmd := h.Command("ip", args...)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// remove unplugs ports' veths (deleting either end deletes both).
func (h Host) remove(ports ...string) error {
	if len(ports) == 0 {
		return nil
	}
	var args, del []string
	for _, p := range ports {
		args = append(args, "--", "--if-exists", "del-port", h.Bridge, HostVeth(p))
		del = append(del, "link del "+HostVeth(p))
	}
	if err := h.vsctl(args[1:]...); err != nil {
		return err
	}
	// -force goes on past veths that do not exist; one that exists and
	// cannot be deleted shows when it is created again.
	args = []string{"-force", "-batch", "-"}
	if h.Netns != "" {
		args = append([]string{"-n", h.Netns}, args...)
	}
	cmd := h.Command("ip", args...)
	cmd.Stdin = strings.NewReader(strings.Join(del, "\n") + "\n")
	_ = cmd.Run()
	return nil
}

// Del removes the given ports' interfaces: the OVS ports and their veths
// (the pod's ends go with them).
func (h Host) Del(ports []string) error { return h.remove(ports...) }

// Plugged is one interface the node has plugged for a pod.
type Plugged struct {
	Port        string
	Fingerprint string
	// Netns is the pod network namespace the interface is in.
	Netns string
	// Sandbox is the runtime's sandbox ID ("" when not plumbed through
	// the CNI plugin).
	Sandbox string
	// Installed is set once ovn-controller has installed the port's flows
	// (external_ids:ovn-installed): the pod's network works from then on.
	Installed bool
}

// Ports returns the interfaces plugged into the bridge for each pod (by pod
// key), from the OVS database: the source of truth after an agent restart.
func (h Host) Ports() (map[string][]Plugged, error) {
	out, err := h.output("ovs-vsctl", "--db="+h.OVSDB, "--timeout=10", "--format=csv", "--no-headings", "--data=bare",
		"--columns=external_ids", "find", "Interface", "external_ids:"+PodKey+"!=\"\"")
	if err != nil {
		return nil, err
	}
	res := map[string][]Plugged{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		kv := map[string]string{}
		for _, f := range strings.Fields(strings.Trim(line, `"`)) {
			if k, v, ok := strings.Cut(f, "="); ok {
				kv[k] = v
			}
		}
		if pod := kv[PodKey]; pod != "" {
			res[pod] = append(res[pod], Plugged{Port: kv["iface-id"], Fingerprint: kv[ConfigKey], Netns: kv[NetnsKey],
				Sandbox: kv[SandboxKey], Installed: kv["ovn-installed"] == "true"})
		}
	}
	for k := range res {
		sort.Slice(res[k], func(i, j int) bool { return res[k][i].Port < res[k][j].Port })
	}
	return res, nil
}

// Batch runs ip commands (one per line, as `ip -batch` takes them) in a
// namespace ("" for the caller's) in one process.
func (h Host) Batch(netns string, lines []string) error { return h.batch(netns, lines) }

// Program resolves a program run inside a namespace by "ip netns exec".
func (h Host) Program(program string) string { return h.path(program) }

// LinkExists reports whether the node's namespace (h.Netns) has an
// interface of that name.
func (h Host) LinkExists(name string) bool {
	args := []string{"link", "show", name}
	if h.Netns != "" {
		args = append([]string{"-n", h.Netns}, args...)
	}
	return h.Command("ip", args...).Run() == nil
}

// WaitInstalled waits until ovn-controller has marked a port's interface
// installed (external_ids:ovn-installed, ovs-vsctl wait-until: no polling),
// for at most timeout or until ctx ends.
func (h Host) WaitInstalled(ctx context.Context, port string, timeout time.Duration) error {
	cmd := h.Command("ovs-vsctl", "--db="+h.OVSDB, fmt.Sprintf("--timeout=%d", max(1, int(timeout.Seconds()))),
		"wait-until", "Interface", HostVeth(port), `external_ids:ovn-installed="true"`)
	if err := cmd.Start(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()
	return cmd.Wait()
}
