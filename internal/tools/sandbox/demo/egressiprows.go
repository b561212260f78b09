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
	finds := []struct{ word, table, columns, condition string }{
		{"policy", "Logical_Router_Policy", "match,nexthops", fmt.Sprintf("priority=%d", egressip.ReroutePriority)},
		{"snat", "NAT", "logical_ip,external_ip,match", fmt.Sprintf("priority=%d", egressip.SNATPriority)},
	}
	for _, n := range st.Nodes {
		var rows []string
		for _, f := range finds {
			out, err := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--timeout=10", "--bare", "--format=csv", "--no-headings",
				"--columns="+f.columns, "find", f.table, f.condition).CombinedOutput()
			if err != nil {
				rows = append(rows, f.word+": "+strings.TrimSpace(string(out)))
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if line != "" {
					rows = append(rows, f.word+" "+line)
				}
			}
		}
		if len(rows) == 0 {
			rows = []string{"none"}
		}
		parts = append(parts, n.Name+": "+strings.Join(rows, "; "))
	}
	return "EgressIP rows: " + strings.Join(parts, " | ")
}
