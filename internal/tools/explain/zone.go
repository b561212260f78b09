package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// Zone says where one zone's databases are.
type Zone struct {
	// NB and SB are the zone's Northbound and Southbound remotes, e.g.
	// "tcp:10.0.0.5:6641".
	NB, SB string
}

// ctPasses is how many conntrack passes ovn-trace treats as a new
// connection (the rest would be "established"): more than any path through
// a source zone and a destination zone takes.
const ctPasses = 12

// zoneReader reads one zone: its Northbound through a monitor of the tables
// explain looks at, its Southbound through ovn-trace and ovn-sbctl.
type zoneReader struct {
	node string
	Zone
	nb      client.Client
	command func(program string, args ...string) *exec.Cmd
}

// nbTables are the Northbound tables explain reads.
var nbTables = []model.Model{
	&nbdb.LogicalSwitch{}, &nbdb.LogicalSwitchPort{}, &nbdb.LogicalRouter{}, &nbdb.LogicalRouterPort{},
	&nbdb.ACL{}, &nbdb.LogicalRouterPolicy{}, &nbdb.LogicalRouterStaticRoute{}, &nbdb.NAT{}, &nbdb.LoadBalancer{},
}

func openZone(ctx context.Context, node string, z Zone, command func(string, ...string) *exec.Cmd) (*zoneReader, error) {
	nb, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Tables: nbTables})
	if err != nil {
		return nil, fmt.Errorf("zone of node %s: %w", node, err)
	}
	return &zoneReader{node: node, Zone: z, nb: nb, command: command}, nil
}

func (z *zoneReader) close() { z.nb.Close() }

// port returns a logical switch port by name and the switch holding it.
func (z *zoneReader) port(ctx context.Context, name string) (*nbdb.LogicalSwitchPort, *nbdb.LogicalSwitch, error) {
	var ports []nbdb.LogicalSwitchPort
	if err := z.nb.WhereCache(func(p *nbdb.LogicalSwitchPort) bool { return p.Name == name }).List(ctx, &ports); err != nil {
		return nil, nil, err
	}
	if len(ports) == 0 {
		return nil, nil, nil
	}
	p := &ports[0]
	var switches []nbdb.LogicalSwitch
	if err := z.nb.WhereCache(func(s *nbdb.LogicalSwitch) bool { return contains(s.Ports, p.UUID) }).List(ctx, &switches); err != nil {
		return nil, nil, err
	}
	if len(switches) == 0 {
		return p, nil, nil
	}
	return p, &switches[0], nil
}

// switchPorts returns the ports of a switch.
func (z *zoneReader) switchPorts(ctx context.Context, sw *nbdb.LogicalSwitch) ([]nbdb.LogicalSwitchPort, error) {
	var ports []nbdb.LogicalSwitchPort
	err := z.nb.WhereCache(func(p *nbdb.LogicalSwitchPort) bool { return contains(sw.Ports, p.UUID) }).List(ctx, &ports)
	return ports, err
}

// routerPort returns a logical router port by name.
func (z *zoneReader) routerPort(ctx context.Context, name string) (*nbdb.LogicalRouterPort, error) {
	var ports []nbdb.LogicalRouterPort
	if err := z.nb.WhereCache(func(p *nbdb.LogicalRouterPort) bool { return p.Name == name }).List(ctx, &ports); err != nil || len(ports) == 0 {
		return nil, err
	}
	return &ports[0], nil
}

// trace runs ovn-trace --all on the zone's Southbound.
func (z *zoneReader) trace(datapath, expr string) (string, error) {
	args := []string{"--db=" + z.SB, "--all"}
	for i := 0; i < ctPasses; i++ {
		args = append(args, "--ct=new")
	}
	args = append(args, datapath, expr)
	return z.run("ovn-trace", args...)
}

func (z *zoneReader) run(program string, args ...string) (string, error) {
	cmd := z.command(program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s in the zone of node %s: %v: %s", program, z.node, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// stageHints returns, for logical flows given by their UUID prefixes (as
// ovn-trace prints them), the Northbound row each was made from
// (external_ids:stage-hint, the row's UUID prefix), where northd says.
func (z *zoneReader) stageHints(uuids []string) (map[string]string, error) {
	if len(uuids) == 0 {
		return nil, nil
	}
	args := append([]string{"--db=" + z.SB, "--format=json", "--columns=_uuid,external_ids", "list", "Logical_Flow"}, uuids...)
	out, err := z.run("ovn-sbctl", args...)
	if err != nil {
		return nil, err
	}
	return parseStageHints(out)
}

// parseStageHints reads ovn-sbctl's JSON listing of Logical_Flow _uuid and
// external_ids into flow UUID prefix (8 digits) -> stage hint.
func parseStageHints(out string) (map[string]string, error) {
	var table struct {
		Data [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &table); err != nil {
		return nil, fmt.Errorf("reading ovn-sbctl's listing of logical flows: %w", err)
	}
	hints := map[string]string{}
	for _, row := range table.Data {
		if len(row) != 2 {
			continue
		}
		var uuid [2]string
		var ids struct {
			Kind  string
			Pairs [][2]string
		}
		var raw []json.RawMessage
		if json.Unmarshal(row[0], &uuid) != nil || json.Unmarshal(row[1], &raw) != nil || len(raw) != 2 {
			continue
		}
		if json.Unmarshal(raw[0], &ids.Kind) != nil || json.Unmarshal(raw[1], &ids.Pairs) != nil {
			continue
		}
		for _, kv := range ids.Pairs {
			if kv[0] == "stage-hint" && len(uuid[1]) >= 8 {
				hints[uuid[1][:8]] = kv[1]
			}
		}
	}
	return hints, nil
}

// row finds the Northbound row whose UUID starts with prefix among the
// tables a stage hint points at.
func (z *zoneReader) row(ctx context.Context, prefix string) (*Row, error) {
	if prefix == "" {
		return nil, nil
	}
	has := func(uuid string) bool { return strings.HasPrefix(uuid, prefix) }
	var acls []nbdb.ACL
	if err := z.nb.WhereCache(func(r *nbdb.ACL) bool { return has(r.UUID) }).List(ctx, &acls); err != nil {
		return nil, err
	}
	if len(acls) > 0 {
		a := acls[0]
		name := ""
		if a.Name != nil {
			name = *a.Name
		}
		return &Row{Table: "ACL", UUID: a.UUID, Name: name, Match: a.Match, Priority: a.Priority, Action: string(a.Action), Direction: string(a.Direction), ExternalIDs: a.ExternalIDs}, nil
	}
	var policies []nbdb.LogicalRouterPolicy
	if err := z.nb.WhereCache(func(r *nbdb.LogicalRouterPolicy) bool { return has(r.UUID) }).List(ctx, &policies); err != nil {
		return nil, err
	}
	if len(policies) > 0 {
		p := policies[0]
		return &Row{Table: "Logical_Router_Policy", UUID: p.UUID, Match: p.Match, Priority: p.Priority, Action: string(p.Action), ExternalIDs: p.ExternalIDs}, nil
	}
	var routes []nbdb.LogicalRouterStaticRoute
	if err := z.nb.WhereCache(func(r *nbdb.LogicalRouterStaticRoute) bool { return has(r.UUID) }).List(ctx, &routes); err != nil {
		return nil, err
	}
	if len(routes) > 0 {
		r := routes[0]
		row := &Row{Table: "Logical_Router_Static_Route", UUID: r.UUID, Match: r.IPPrefix, Action: "via " + r.Nexthop, ExternalIDs: r.ExternalIDs}
		if r.OutputPort != nil {
			row.OutputPort = *r.OutputPort
		}
		return row, nil
	}
	var nats []nbdb.NAT
	if err := z.nb.WhereCache(func(r *nbdb.NAT) bool { return has(r.UUID) }).List(ctx, &nats); err != nil {
		return nil, err
	}
	if len(nats) > 0 {
		n := nats[0]
		return &Row{Table: "NAT", UUID: n.UUID, Match: n.LogicalIP, Action: string(n.Type) + " to " + n.ExternalIP, ExternalIDs: n.ExternalIDs}, nil
	}
	var lbs []nbdb.LoadBalancer
	if err := z.nb.WhereCache(func(r *nbdb.LoadBalancer) bool { return has(r.UUID) }).List(ctx, &lbs); err != nil {
		return nil, err
	}
	if len(lbs) > 0 {
		l := lbs[0]
		return &Row{Table: "Load_Balancer", UUID: l.UUID, Name: l.Name, ExternalIDs: l.ExternalIDs}, nil
	}
	return nil, nil
}

// rowOn finds the Northbound row behind a logical flow of datapath. northd
// shares one flow among datapaths whose rows are alike (the same isolation
// policy on every network's router, the same route of two networks with
// one subnet) and its stage hint names one of those rows: when that row is
// a router's policy or route but not datapath's, the like row of
// datapath's own router is the one.
func (z *zoneReader) rowOn(ctx context.Context, prefix, datapath string) (*Row, error) {
	r, err := z.row(ctx, prefix)
	if err != nil || r == nil || (r.Table != "Logical_Router_Policy" && r.Table != "Logical_Router_Static_Route") {
		return r, err
	}
	var routers []nbdb.LogicalRouter
	if err := z.nb.WhereCache(func(lr *nbdb.LogicalRouter) bool { return lr.Name == datapath }).List(ctx, &routers); err != nil || len(routers) == 0 {
		return r, err
	}
	own := routers[0].Policies
	if r.Table == "Logical_Router_Static_Route" {
		own = routers[0].StaticRoutes
	}
	if contains(own, r.UUID) {
		return r, nil
	}
	for _, uuid := range own {
		o, err := z.row(ctx, uuid)
		if err != nil {
			return nil, err
		}
		if o != nil && o.Table == r.Table && o.Priority == r.Priority && o.Match == r.Match && o.Action == r.Action {
			return o, nil
		}
	}
	return r, nil
}

// policyOn returns the policy of router datapath with the priority and
// match, or nil.
func (z *zoneReader) policyOn(ctx context.Context, datapath string, priority int, match string) (*Row, error) {
	var routers []nbdb.LogicalRouter
	if err := z.nb.WhereCache(func(lr *nbdb.LogicalRouter) bool { return lr.Name == datapath }).List(ctx, &routers); err != nil || len(routers) == 0 {
		return nil, err
	}
	for _, uuid := range routers[0].Policies {
		o, err := z.row(ctx, uuid)
		if err != nil {
			return nil, err
		}
		if o != nil && o.Table == "Logical_Router_Policy" && o.Priority == priority && o.Match == match {
			return o, nil
		}
	}
	return nil, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
