package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// uplinkDemoConnections is how many connections each egress client of the
// demo opens at once to show them spread over the routers.
// (32 over 3 routers: one getting none has probability below 1e-5).
const uplinkDemoConnections = 32

// UplinkChecks is the demo's view of a sandbox with several uplinks: each
// router's bfdd has a session up with every node (waiting up to 30 s for
// them), and each DemoEgressClients pod's connections to the outside world
// reach every router (counted by the routers' nftables counters). Pods that
// do not exist are left out.
func UplinkChecks(ctx context.Context, dir, binary string, uplinks, nodes int) ([]AppCheck, error) {
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return nil, err
	}
	var out []AppCheck
	for k := 1; k <= uplinks && k <= len(st.Routers); k++ {
		a := AppCheck{Name: "BFD sessions with every node (FRR bfdd)", From: "router " + st.Routers[k-1], Target: "nodes",
			Want: fmt.Sprintf("%d/%d up", nodes, nodes)}
		a.Err = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
			peers, err := sandbox.RouterBFD(ctx, dir, k)
			if err != nil {
				return false, err
			}
			up := 0
			for _, p := range peers {
				if p.Status == "up" {
					up++
				}
			}
			a.Got = fmt.Sprintf("%d/%d up", up, nodes)
			return a.Got == a.Want, nil
		})
		if a.Got == a.Want {
			a.Err = nil
		}
		out = append(out, a)
	}
	server := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)
	for _, ref := range DemoEgressClients {
		if _, err := run(ctx, dir, ref, "true"); err != nil {
			continue // no such pod in these manifests
		}
		a := AppCheck{Name: "egress spread over the uplinks", From: ref,
			Target: fmt.Sprintf("%d connections to %s", uplinkDemoConnections, server), Want: "every router"}
		before, err := sandbox.UplinkCounters(ctx, dir, uplinks)
		if err != nil {
			return nil, err
		}
		answers, err := run(ctx, dir, ref, binary, "sandbox", "probe", "--count", fmt.Sprint(uplinkDemoConnections), "--timeout", "3s", server)
		if err != nil {
			a.Err = err
			out = append(out, a)
			continue
		}
		after, err := sandbox.UplinkCounters(ctx, dir, uplinks)
		if err != nil {
			return nil, err
		}
		var per, none []string
		for k := range after {
			n := after[k].SYN - before[k].SYN
			per = append(per, fmt.Sprint(n))
			if n == 0 {
				none = append(none, fmt.Sprintf("router %d", k+1))
			}
		}
		a.Target += " (SYNs at routers: " + strings.Join(per, " / ") + ")"
		a.Got = "every router"
		if len(none) > 0 {
			a.Got = "none at " + strings.Join(none, ", ")
		}
		if failed := strings.Count(answers, "error: "); failed > 0 {
			a.Err = fmt.Errorf("%d of %d connections failed", failed, uplinkDemoConnections)
		}
		out = append(out, a)
	}
	return out, nil
}
