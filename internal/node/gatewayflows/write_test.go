package gatewayflows

import (
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
)

// TestParseBridgePorts reads bridgePorts' one ovs-vsctl run: ports of
// other bridges are left out, and a localnet port maps to its ofport.
func TestParseBridgePorts(t *testing.T) {
	out := `eth0
patch-blue_br-ex_node2-to-br-int
{"data":[["eth0",1],["patch-blue_br-ex_node2-to-br-int",5],["patch-br-int-to-blue_br-ex_node2",7],["br-ex",65534],["down",-1]]}
{"data":[["patch-blue_br-ex_node2-to-br-int",["map",[["ovn-localnet-port","blue_br-ex_node2"]]]],["eth0",["map",[]]],["patch-br-int-to-blue_br-ex_node2",["map",[["ovn-localnet-port","blue_br-ex_node2"]]]]]}
`
	got, err := parseBridgePorts([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := bridgePorts{
		byName:     map[string]int{"eth0": 1, "patch-blue_br-ex_node2-to-br-int": 5},
		byLocalnet: map[string]int{"blue_br-ex_node2": 5},
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(bridgePorts{})); d != "" {
		t.Errorf("parseBridgePorts (-want +got):\n%s", d)
	}
	if _, err := parseBridgePorts([]byte("eth0\n")); err == nil {
		t.Error("an output without its two tables parsed")
	}
}

// TestWriteRunsFewTools, on a real bridge: write runs ovs-ofctl twice at
// first (compare, replace), not at all for the same flows within the
// period, once for changed flows (replace), and compares again after the
// period, putting back a flow deleted behind its back; the bridge holds
// the flows after each write.
func TestWriteRunsFewTools(t *testing.T) {
	var runs atomic.Int32
	r := bridgeReconciler(t, "gwwrite-node", func(program string, args ...string) *exec.Cmd {
		runs.Add(1)
		return deps.OVNCommand(program, args...)
	})
	holds := func(flows string) bool {
		diff := deps.OVNCommand("ovs-ofctl", "-O", "OpenFlow15", "diff-flows", r.mgmt(), "/dev/stdin")
		diff.Stdin = strings.NewReader(flows)
		out, err := diff.Output()
		return err == nil && strings.TrimSpace(string(out)) == ""
	}
	const every = 5 * time.Second
	a := "table=0,priority=10,arp,actions=NORMAL\ntable=0,priority=0,actions=drop\n"
	b := "table=0,priority=10,arp,actions=NORMAL\ntable=0,priority=5,ip,actions=NORMAL\ntable=0,priority=0,actions=drop\n"
	at := time.Unix(1000, 0)
	for _, step := range []struct {
		name        string
		flows       string
		at          time.Duration
		behind      []string // an ovs-ofctl run by someone else first
		wantChanged bool
		wantRuns    int32
	}{
		{"first: compare, replace", a, 0, nil, true, 2},
		{"the same within the period: nothing", a, time.Second, nil, false, 0},
		{"changed: replace only", b, 2 * time.Second, nil, true, 1},
		{"deleted behind its back, within the period: not seen", b, 3 * time.Second, []string{"del-flows", "--strict", "", "table=0,priority=5,ip"}, false, 0},
		{"after the period: compared and put back", b, 2*time.Second + every, nil, true, 2},
		{"the same again: nothing", b, 2*time.Second + every + time.Second, nil, false, 0},
	} {
		if step.behind != nil {
			args := append([]string{"-O", "OpenFlow15"}, step.behind...)
			args[4] = r.mgmt()
			if out, err := deps.OVNCommand("ovs-ofctl", args...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", step.name, err, out)
			}
		}
		runs.Store(0)
		changed, err := r.write(step.flows, at.Add(step.at), every)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if changed != step.wantChanged || runs.Load() != step.wantRuns {
			t.Errorf("%s: changed %v after %d runs of the tools, want %v after %d", step.name, changed, runs.Load(), step.wantChanged, step.wantRuns)
		}
		if step.behind == nil && !holds(step.flows) {
			t.Errorf("%s: the bridge does not hold the flows", step.name)
		}
	}
}

// bridgeReconciler starts Open vSwitch in a network namespace of its own
// with a userspace bridge br-ex, and returns a reconciler of that bridge
// whose tools run by command.
func bridgeReconciler(t *testing.T, nodeNS string, command func(string, ...string) *exec.Cmd) *GatewayReconciler {
	t.Helper()
	deps.Require(t, deps.CheckOVN)
	_ = deps.OVNCommand("ip", "netns", "del", nodeNS).Run()
	if out, err := deps.OVNCommand("ip", "netns", "add", nodeNS).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = deps.OVNCommand("ip", "netns", "del", nodeNS).Run() })
	ovs, err := ovnrun.StartNode(ovnrun.NodeOptions{Name: nodeNS, Dir: t.TempDir(), Netns: nodeNS})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ovs.Stop)
	if _, err := ovs.VSCtl("add-br", "br-ex", "--", "set", "Bridge", "br-ex", "datapath_type=netdev"); err != nil {
		t.Fatal(err)
	}
	return &GatewayReconciler{Opts: node.Options{Host: cni.Host{OVSDB: ovs.DB, Command: command},
		Gateway: node.GatewayOptions{Bridge: "br-ex", Interface: "eth0"}}}
}
