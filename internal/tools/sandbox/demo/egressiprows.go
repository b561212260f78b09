package demo

import (
	"fmt"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// egressIPRows is a one-line account of the EgressIP rows in every zone
// (reroute policies and egress SNATs, found by their priorities), for a
// failed check's answer: a log that ends where CI cuts it still says which
// half of the path was missing.
func egressIPRows(dir string) string {
	l, err := sandbox.NewLayout(dir)
	if err != nil {
		return err.Error()
	}
	st, err := sandbox.ReadState(l)
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, n := range st.Nodes {
		var rows []string
		pol, err := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--timeout=10", "--bare", "--format=csv", "--no-headings", "--columns=match,nexthops",
			"find", "Logical_Router_Policy", fmt.Sprintf("priority=%d", egressip.ReroutePriority)).CombinedOutput()
		if err != nil {
			rows = append(rows, "policies: "+strings.TrimSpace(string(pol)))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(pol)), "\n") {
			if line != "" && err == nil {
				rows = append(rows, "policy "+line)
			}
		}
		nat, err := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--timeout=10", "--bare", "--format=csv", "--no-headings", "--columns=logical_ip,external_ip,match",
			"find", "NAT", fmt.Sprintf("priority=%d", egressip.SNATPriority)).CombinedOutput()
		if err != nil {
			rows = append(rows, "nats: "+strings.TrimSpace(string(nat)))
		}
		for _, line := range strings.Split(strings.TrimSpace(string(nat)), "\n") {
			if line != "" && err == nil {
				rows = append(rows, "snat "+line)
			}
		}
		if len(rows) == 0 {
			rows = []string{"none"}
		}
		parts = append(parts, n.Name+": "+strings.Join(rows, "; "))
	}
	return "EgressIP rows: " + strings.Join(parts, " | ")
}
