package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestEgressFirewall: the demo's EgressFirewalls, with real packets from
// the tenants' pods to the outside server: l3-blue reaches only its allowed
// address and port, l2-blue only the outside name's address, and follows
// the name when its record moves; their same-subnet neighbours are not
// affected; the objects' status says applied; once deleted, everything is
// reached again and no zone holds a row of theirs. Then explain names the
// rule that drops a connection and the one that admits another; and a
// name that does not resolve is named in the status.
func TestEgressFirewall(t *testing.T) {
	ctx := context.Background()
	neighbours := egressNeighbours(t, "ef-red")
	checks, err := demo.EgressFirewallChecks(ctx, dir, binary, admin, neighbours)
	if err != nil {
		t.Fatal(err)
	}
	expectApps(t, checks)
	eventually(t, func() error { return firewallRowsGone("l3-blue", "l2-blue") })

	// explain, with l3-blue's object back.
	ef := demo.EgressFirewalls()[0]
	if err := admin.Create(ctx, ef); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Delete(context.Background(), ef) })
	eventually(t, func() error {
		if got := demo.Connects(ctx, dir, binary, "l3-blue/a", fmt.Sprintf("%s:%d", sandbox.ExternalServerIP2, sandbox.ExternalPort), 400*time.Millisecond); got != demo.Blocked {
			return fmt.Errorf("l3-blue/a to the second outside address: %s, want blocked", got)
		}
		return nil
	})
	denied := explainOut(t, "--from", "l3-blue/a", "--to", fmt.Sprintf("%s:%d", sandbox.ExternalServerIP2, sandbox.ExternalPort))
	if want := "dropped by EgressFirewall l3-blue/default rule 1"; !strings.Contains(denied, want) {
		t.Errorf("explain of a denied connection does not say %q:\n%s", want, denied)
	}
	allowed := explainOut(t, "--from", "l3-blue/a", "--to", fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort))
	if want := "admitted by EgressFirewall l3-blue/default rule 0"; !strings.Contains(allowed, want) {
		t.Errorf("explain of an allowed connection does not say %q:\n%s", want, allowed)
	}

	// A name that does not resolve: named in the status, and its rule
	// only left out (the deny still holds).
	var cur v1.EgressFirewall
	if err := admin.Get(ctx, client.ObjectKeyFromObject(ef), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Egress = append([]v1.EgressFirewallRule{{Type: v1.EgressFirewallRuleAllow, To: v1.EgressFirewallDestination{DNSName: "nowhere.outside.test"}}}, cur.Spec.Egress...)
	if err := admin.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		var got v1.EgressFirewall
		if err := admin.Get(ctx, client.ObjectKeyFromObject(ef), &got); err != nil {
			return err
		}
		if want := v1.EgressFirewallNotApplied + ": "; !strings.HasPrefix(got.Status.Status, want) || !strings.Contains(got.Status.Status, "rule 0: dnsName nowhere.outside.test: ") || !strings.Contains(got.Status.Status, "NXDOMAIN") {
			return fmt.Errorf("status %q, want it to name rule 0's NXDOMAIN", got.Status.Status)
		}
		return nil
	})
	if got := demo.Connects(ctx, dir, binary, "l3-blue/a", fmt.Sprintf("%s:%d", sandbox.ExternalServerIP2, sandbox.ExternalPort), 400*time.Millisecond); got != demo.Blocked {
		t.Errorf("with an unresolved rule before it, the deny no longer holds: %s", got)
	}
	if err := admin.Delete(ctx, ef); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error { return firewallRowsGone("l3-blue") })
}

// firewallRowsGone reports the first zone holding a row of the
// namespaces' EgressFirewalls.
func firewallRowsGone(namespaces ...string) error {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		for _, ns := range namespaces {
			owner := egressfirewall.Owner(ns)
			for _, table := range []string{"ACL", "Port_Group"} {
				out, err := nbFind(n.NB, table, "external_ids:k8s.ovn.org/owner=\""+owner+"\"")
				if err != nil {
					return err
				}
				if out != "" {
					return fmt.Errorf("zone %s still holds %s rows of %s", n.Name, table, owner)
				}
			}
		}
	}
	return nil
}

// nbFind is `ovn-nbctl find` of a table's rows matching cond in the
// Northbound at db: their UUIDs, "" for none.
func nbFind(db, table, cond string) (string, error) {
	out, err := deps.OVNCommand("ovn-nbctl", "--db="+db, "--bare", "--columns=_uuid", "find", table, cond).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ovn-nbctl find %s %s: %v: %s", table, cond, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// TestEgressQoS: the demo's EgressQoSes, seen from the outside: the DSCP
// of each tenant's datagrams is its rule's, none on the same-subnet
// neighbours, the status says applied, and once deleted nothing is marked;
// no zone holds a QoS row of theirs after.
func TestEgressQoS(t *testing.T) {
	ctx := context.Background()
	neighbours := egressNeighbours(t, "qos-red")
	checks, err := demo.EgressQoSChecks(ctx, dir, binary, admin, neighbours)
	if err != nil {
		t.Fatal(err)
	}
	expectApps(t, checks)
	eventually(t, func() error {
		st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
		if err != nil {
			return err
		}
		for _, n := range st.Nodes {
			out, err := nbFind(n.NB, "QoS", "external_ids:k8s.ovn.org/owner!=\"\"")
			if err != nil {
				return err
			}
			if out != "" {
				return fmt.Errorf("zone %s still holds QoS rows: %s", n.Name, out)
			}
		}
		return nil
	})
}

// egressNeighbours waits for the pods the egress checks send from, and
// returns the same-subnet neighbours to check: l2-red/a, and a Layer3
// tenant of l3-blue's subnet made for the test in namespace ns (the
// examples' l3-red is gone once TestNetworkDeletion ran).
func egressNeighbours(t *testing.T, ns string) []string {
	t.Helper()
	tenantWithPod(t, ns, "node3", "10.128.0.0/16/24")
	if err := demo.WaitPodsReady(context.Background(), dir, admin, []string{"l3-blue/a", "l2-blue/a", "l2-red/a"}, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	return []string{ns + "/a", "l2-red/a"}
}

// expectApps fails the test for each check not as expected, and logs the
// others.
func expectApps(t *testing.T, checks []demo.AppCheck) {
	t.Helper()
	for _, c := range checks {
		if !c.Pass() {
			t.Errorf("%s, %s to %s: got %q (%v), want %q", c.Name, c.From, c.Target, c.Got, c.Err, c.Want)
		} else {
			t.Logf("%s, %s to %s: %s", c.Name, c.From, c.Target, c.Got)
		}
	}
}
