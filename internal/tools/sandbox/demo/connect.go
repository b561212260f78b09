package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// DemoConnect is the ClusterNetworkConnect the demo creates and deletes:
// the primary networks of examples' l3-blue and l2-blue namespaces, for
// pods, through connect subnets 10.190.0.0/16 (a /24 per network).
func DemoConnect() *v1.ClusterNetworkConnect {
	return &v1.ClusterNetworkConnect{ObjectMeta: metav1.ObjectMeta{Name: "demo-blue"}, Spec: v1.ClusterNetworkConnectSpec{
		NetworkSelectors: v1.NetworkSelectors{{NetworkSelectionType: v1.PrimaryUserDefinedNetworkSelection,
			PrimaryUserDefinedNetworkSelector: &v1.PrimaryUserDefinedNetworkSelector{NamespaceSelector: metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"l3-blue", "l2-blue"}}}}}}},
		ConnectSubnets:      []v1.ConnectSubnet{{CIDR: "10.190.0.0/16", NetworkPrefix: 24}},
		ConnectivityEnabled: []v1.ConnectivityType{v1.PodNetwork}}}
}

// DemoConnectedChecks are measured while DemoConnect exists: the two
// networks reach each other both ways across nodes and on one node; a
// tenant not connected (l3-red, l3-blue's subnet) still does not reach
// them.
var DemoConnectedChecks = []Check{
	{Name: "Layer3 UDN to the connected Layer2 UDN, across nodes", From: "l3-blue/a", To: []string{"l2-blue/c"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer2 UDN to the connected Layer3 UDN, across nodes", From: "l2-blue/a", To: []string{"l3-blue/c"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer2 UDN to the connected Layer3 UDN, same node", From: "l2-blue/b", To: []string{"l3-blue/a"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "tenant not connected to the Layer2 UDN", From: "l3-red/a", To: []string{"l2-blue/c"}, On: OnPrimary, Family: 4},
	{Name: "Layer2 tenant not connected to the Layer3 UDN", From: "l2-red/a", To: []string{"l3-blue/c"}, On: OnPrimary, Family: 4},
}

// DemoDisconnectedChecks are measured once DemoConnect is deleted: the
// networks are isolated again.
var DemoDisconnectedChecks = []Check{
	{Name: "Layer3 UDN to the Layer2 UDN, connect deleted", From: "l3-blue/a", To: []string{"l2-blue/c"}, On: OnPrimary, Family: 4},
	{Name: "Layer2 UDN to the Layer3 UDN, connect deleted", From: "l2-blue/a", To: []string{"l3-blue/c"}, On: OnPrimary, Family: 4},
}

// ConnectDemo creates DemoConnect, waits until every zone has set it up and
// the chassis have its flows, measures DemoConnectedChecks, deletes it,
// waits the same way, and measures DemoDisconnectedChecks, printing both
// tables. The servers of the examples' pods must be running (Servers). It
// fails when a check is not as expected.
func ConnectDemo(ctx context.Context, dir, binary string, c client.Client, out io.Writer) error {
	cnc := DemoConnect()
	if err := c.Create(ctx, cnc); err != nil {
		return fmt.Errorf("creating ClusterNetworkConnect %s: %w", cnc.Name, err)
	}
	deleted := false
	defer func() {
		if !deleted {
			_ = c.Delete(context.Background(), cnc)
		}
	}()
	if err := proc.WaitFor(time.Minute, 200*time.Millisecond, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cnc), cnc); err != nil {
			return false, err
		}
		return cnc.Status.Status == v1.ConnectSuccess, nil
	}); err != nil {
		return fmt.Errorf("ClusterNetworkConnect %s not set up in every zone (conditions %+v): %w", cnc.Name, cnc.Status.Conditions, err)
	}
	if err := SyncChassis(dir); err != nil {
		return err
	}
	results, err := Matrix(ctx, dir, binary, c, DemoConnectedChecks)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nConnected networks (ClusterNetworkConnect %s: l3-blue and l2-blue through a connect router, pods both ways):\n\n", cnc.Name)
	merr := PrintMatrix(out, results)

	if err := c.Delete(ctx, cnc); err != nil {
		return errors.Join(merr, err)
	}
	deleted = true
	if err := waitGone(ctx, c, cnc.DeepCopy(), time.Minute, 200*time.Millisecond); err != nil {
		return errors.Join(merr, err)
	}
	if err := syncConnectGone(dir, cnc.Name); err != nil {
		return errors.Join(merr, err)
	}
	if results, err = Matrix(ctx, dir, binary, c, DemoDisconnectedChecks); err != nil {
		return errors.Join(merr, err)
	}
	fmt.Fprintf(out, "\nThe same networks once %s is deleted:\n\n", cnc.Name)
	return errors.Join(merr, PrintMatrix(out, results))
}

// syncConnectGone waits until no zone holds the connect's router, then
// until the chassis have caught up.
func syncConnectGone(dir, cnc string) error {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		if err := proc.WaitFor(time.Minute, 200*time.Millisecond, func() (bool, error) {
			out, err := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--bare", "--columns=name", "find", "Logical_Router", "name=connect-router-"+cnc).CombinedOutput()
			if err != nil {
				return false, fmt.Errorf("zone %s: %v: %s", n.Name, err, out)
			}
			return len(out) == 0, nil
		}); err != nil {
			return fmt.Errorf("zone %s still has connect-router-%s: %w", n.Name, cnc, err)
		}
	}
	return SyncChassis(dir)
}

// SyncChassis waits until every zone's chassis have applied everything
// written to the zone's Northbound so far (ovn-nbctl --wait=hv sync).
func SyncChassis(dir string) error {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		if out, err := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--timeout=60", "--wait=hv", "sync").CombinedOutput(); err != nil {
			return fmt.Errorf("zone %s: ovn-nbctl --wait=hv sync: %v: %s", n.Name, err, out)
		}
	}
	return nil
}
