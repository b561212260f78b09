package e2e

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestLayer2RollingUpgrade plays seed 000's rolling upgrade of the Layer2
// topology on the three nodes (demo.Layer2Upgrade): every zone controller
// restarts as a release before the transit router, a Layer2 primary
// network gets a server pod and a node port on each node, and each node in
// turn is drained and restarted at 2.0 while the other two nodes' paths
// (pod to pod, pod to outside from the namespace's EgressIP held by node3,
// outside through a node port to the other node's pod) are probed every
// 100 ms. It checks what
// demo.Layer2UpgradeChecks says: no probe lost, the first node kept at 1.0
// while its pod ran, the moved node's pod reaching and reached across
// versions, and no upgrade row left at the end. Time per node and probes
// are logged (docs/performance.md). Between the first and the second
// step, a VM migrates from the moved node (2.0) onto a node at 1.0 and
// back, held to TestVMLiveMigration's checks (its gateway's GARP carries
// each node's own gateway MAC).
//
// It has a sandbox of its own: the drains delete every pod of a Layer2
// primary network on each node, and the shared sandbox's examples have
// such pods that later tests use.
func TestLayer2RollingUpgrade(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "upgrade")
	if err := sandbox.Up(sandbox.Options{Dir: dir, Nodes: 3, Binary: binary, Attached: true}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.Down(dir, &bytes.Buffer{}) })
	c, err := sandbox.Client(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Once the first node has moved, a VM migrates from it (2.0) onto the
	// second (1.0) and back: draining a node live-migrates its VMs, so a
	// migration target may be on either side of a mixed cluster.
	migrated := false
	steps, err := demo.Layer2Upgrade(ctx, dir, binary, c, func(moved []string) error {
		if len(moved) != 1 {
			return nil
		}
		versions := map[string]string{}
		for _, n := range []string{"node1", "node2"} {
			node := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
				return err
			}
			versions[n] = node.Annotations[nodeinfo.Layer2TopologyVersionAnnotation]
		}
		if d := cmp.Diff(map[string]string{"node1": nodeinfo.Layer2TopologyV2, "node2": nodeinfo.Layer2TopologyV1}, versions); d != "" {
			return fmt.Errorf("the migration's nodes are not at the versions it tests (-want +got):\n%s", d)
		}
		ms, err := demo.VMMigrations(ctx, dir, binary, c, 2)
		t.Run("VMMigrationAcrossVersions", func(t *testing.T) { checkMigrations(t, ms, err) })
		migrated = err == nil
		// The next step drains node2: the VM's pods must be gone by then.
		return demo.WaitNamespaceGone(ctx, c, demo.VMNamespace, 2*time.Minute)
	})
	if !migrated && err == nil {
		t.Error("no VM migrated while the cluster was mixed")
	}
	for _, s := range steps {
		t.Logf("%s: drained in %d ms, zone controller restarted in %d ms, moved in %d ms (the new controller running to its new pod answering); %d probes of the other nodes' paths, %d lost; %d egress probes lost while the egress IP's node moved",
			s.Node, s.Drain.Milliseconds(), s.Restart.Milliseconds(), s.Took.Milliseconds(), s.Probes, s.LostTotal(), s.EgressLost)
	}
	if err != nil {
		t.Fatal(err)
	}
	// The last move's replans in the other zones may still be on their way.
	leftovers := map[string][]string{}
	_ = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
		left := false
		for _, n := range []string{"node1", "node2", "node3"} {
			rows, err := demo.UpgradeRows(ctx, dir, n)
			if err != nil {
				return false, err
			}
			leftovers[n] = rows
			left = left || len(rows) > 0
		}
		return !left, nil
	})
	for _, c := range demo.Layer2UpgradeChecks(steps, leftovers) {
		if !c.Pass() {
			t.Errorf("%s (%s): got %q, want %q", c.Name, c.From, c.Got, c.Want)
		} else {
			t.Logf("%s (%s)", c.Name, c.From)
		}
	}
}
