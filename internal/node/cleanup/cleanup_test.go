package cleanup_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/cleanup"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/hostisolation"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
)

// TestRun: on a node (a real Open vSwitch in a network namespace) with a
// pod plumbed into br-int, an external bridge with ovn-controller's patch
// port and the agent's flows, the chassis settings, the CNI files and a
// zone's databases and sockets, cleanup removes all of ovn-udn's and keeps
// the operator's; a second run finds nothing to do and fails on nothing.
func TestRun(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	node := "cleanuptest-node"
	ip := func(args ...string) error { return deps.OVNCommand("ip", args...).Run() }
	if out, err := deps.OVNCommand("ip", "netns", "add", node).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = ip("netns", "del", node) })
	ovs, err := ovnrun.StartNode(ovnrun.NodeOptions{Name: node, Dir: t.TempDir(), Netns: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ovs.Stop)
	h := cni.Host{Netns: node, OVSDB: ovs.DB, Bridge: "br-int", Command: deps.OVNCommand, Path: deps.OVNProgram}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	nets := podnet.Networks{"default": {IPs: []string{"10.244.1.5/24"}, MAC: "0a:58:0a:f4:01:05", Role: podnet.RolePrimary, Gateways: []string{"10.244.1.1"}}}
	ifs, _ := cni.Interfaces(pod, nets, func(string) int { return 0 })
	podNetns := "cleanuptest-pod"
	if out, err := deps.OVNCommand("ip", "netns", "add", podNetns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = ip("netns", "del", podNetns) })
	if err := h.Add(podNetns, "ns/p", "sandbox-1", ifs); err != nil {
		t.Fatal(err)
	}
	hostVeth := cni.HostVeth(ifs[0].Port)
	for _, args := range [][]string{
		{"add-br", "br-ex", "--", "set", "Bridge", "br-ex", "datapath_type=netdev"},
		{"add-port", "br-ex", "patch-br-ex-to-br-int", "--", "set", "Interface", "patch-br-ex-to-br-int", "type=patch", "options:peer=nowhere"},
		{"set", "Open_vSwitch", ".", "external_ids:ovn-remote=unix:/x", "external_ids:ovn-encap-type=geneve",
			"external_ids:ovn-encap-ip=192.0.2.1", "external_ids:ovn-is-interconn=true", "external_ids:ovn-bridge-mappings=physnet:br-ex",
			"external_ids:system-id=" + node},
	} {
		if _, err := ovs.VSCtl(args...); err != nil {
			t.Fatal(err)
		}
	}
	run := func(program string, args ...string) *exec.Cmd {
		switch program {
		case "ip":
			args = append([]string{"-n", node}, args...)
		case "nft":
			args = append([]string{"netns", "exec", node, deps.OVNProgram("nft")}, args...)
			program = "ip"
		}
		cmd := deps.OVNCommand(program, args...)
		cmd.Env = append(os.Environ(), "OVS_RUNDIR="+ovs.Dir)
		return cmd
	}
	if out, err := run("ovs-ofctl", "add-flow", "br-ex", "priority=100,ip,actions=drop").CombinedOutput(); err != nil {
		t.Fatalf("add-flow: %v: %s", err, out)
	}
	// The agent's host routes to the service CIDRs through br-ex.
	for _, args := range [][]string{
		{"-n", node, "link", "set", "br-ex", "up"},
		{"-n", node, "addr", "add", "192.168.100.13/24", "dev", "br-ex"},
		{"-n", node, "neigh", "replace", "169.254.0.4", "lladdr", "02:00:c0:a8:64:0d", "dev", "br-ex", "nud", "permanent"},
		{"-n", node, "route", "replace", "10.96.0.0/16", "via", "169.254.0.4", "dev", "br-ex", "onlink"},
	} {
		if out, err := deps.OVNCommand("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	// The agent's host-isolation table.
	for _, table := range []string{hostisolation.TableName, hostisolation.ProbeName} {
		if out, err := run("nft", "add", "table", "inet", table).CombinedOutput(); err != nil {
			t.Fatalf("nft add table: %v: %s", err, out)
		}
	}
	o := cleanup.Options{OVSDB: ovs.DB, Bridge: "br-int", ExternalBridges: []string{"br-ex", "br-ex2"}, ConfFile: "10-ovn-udn.conflist",
		CNIConfDir: t.TempDir(), CNIBinDir: t.TempDir(), DBDir: t.TempDir(), RunDir: t.TempDir(), Command: run,
		MasqueradeNextHops: []netip.Addr{netip.MustParseAddr("169.254.0.4")}}
	files := []string{filepath.Join(o.CNIConfDir, o.ConfFile), filepath.Join(o.CNIBinDir, netconf.CNIType)}
	for _, f := range cleanup.ZoneFiles.DB {
		files = append(files, filepath.Join(o.DBDir, f))
	}
	for _, f := range cleanup.ZoneFiles.Run {
		files = append(files, filepath.Join(o.RunDir, f))
	}
	keep := filepath.Join(o.CNIConfDir, "05-other.conflist")
	for _, f := range append(files, keep) {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log []string
	logf := func(format string, args ...any) { log = append(log, format) }
	if err := cleanup.Run(o, logf); err != nil {
		t.Fatal(err)
	}
	if _, err := ovs.VSCtl("br-exists", "br-int"); err == nil {
		t.Error("br-int is still there")
	}
	if ip("-n", node, "link", "show", hostVeth) == nil {
		t.Errorf("the pod's host interface %s is still there", hostVeth)
	}
	if ip("-n", podNetns, "link", "show", "eth0") == nil {
		t.Error("the pod's eth0 is still there")
	}
	if out, _ := deps.OVNCommand("ip", "-n", node, "route", "show", "10.96.0.0/16").Output(); strings.TrimSpace(string(out)) != "" {
		t.Errorf("the host's route to the service CIDR is still there: %s", out)
	}
	if out, _ := deps.OVNCommand("ip", "-n", node, "neigh", "show", "169.254.0.4").Output(); strings.Contains(string(out), "PERMANENT") {
		t.Errorf("the masquerade next hop's neighbour entry is still there: %s", out)
	}
	for _, table := range []string{hostisolation.TableName, hostisolation.ProbeName} {
		if run("nft", "list", "table", "inet", table).Run() == nil {
			t.Errorf("the nftables table %s is still there", table)
		}
	}
	if ports, _ := ovs.VSCtl("list-ports", "br-ex"); strings.TrimSpace(ports) != "" {
		t.Errorf("br-ex keeps ports %q", ports)
	}
	out, err := run("ovs-ofctl", "dump-flows", "--no-stats", "br-ex").Output()
	if err != nil || strings.TrimSpace(string(out)) != "priority=0 actions=NORMAL" {
		t.Errorf("br-ex's flows: %q (%v), want only NORMAL", out, err)
	}
	ids, _ := ovs.VSCtl("get", "Open_vSwitch", ".", "external_ids")
	for _, k := range cleanup.ChassisKeys {
		if strings.Contains(ids, k+"=") {
			t.Errorf("external_ids keep %s: %s", k, ids)
		}
	}
	for _, k := range []string{"ovn-bridge-mappings=", "system-id="} {
		if !strings.Contains(ids, k) {
			t.Errorf("external_ids lost the operator's %s: %s", k, ids)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s is still there", f)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("another plugin's configuration went: %v", err)
	}
	log = nil
	if err := cleanup.Run(o, logf); err != nil {
		t.Errorf("a second run: %v", err)
	}
	for _, l := range log {
		if !strings.HasPrefix(l, "deleted the bridge") && !strings.HasPrefix(l, "reset the flows") {
			t.Errorf("a second run did something: %s", l)
		}
	}
}
