package topology

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
)

// PortsResult is what workload ports add to a network in one zone: their
// own rows (Logical_Switch_Ports), and their membership of rows the network
// owns (the pod switch's ports; for an isolated default-network port, the
// isolation port group's ports), as contributions. A pod's ports are planned
// and written on their own, so adding a pod costs O(its ports), not a
// re-plan of its network (docs/topology.md "Who owns what").
type PortsResult struct {
	Rows          []model.Model
	Contributions []ovsdbsync.Contribution
	// Skipped lists ports left out and why.
	Skipped []Problem
}

// RenderPorts returns the rows of in.Ports in in.Zone (the rest of in is
// read as by Render): a local port bound to the local chassis, on a Layer2
// network's distributed switch a remote port for a workload on another ready
// node, nothing for workloads elsewhere (reached by routing or the physical
// network). A local node that is not ready is an error wrapping ErrNotReady;
// one where the network is not active (in.Active) has no ports of it, and no
// zone has a port for a workload on a node where it is not active.
func RenderPorts(in Input) (PortsResult, error) {
	local, remotes, _, err := split(in.Network, in.Nodes, in.Zone, in.Active)
	if errors.Is(err, errInactive) {
		return PortsResult{}, nil
	}
	if err != nil {
		return PortsResult{}, err
	}
	return renderPorts(in.Network, local, remotes, in.Ports), nil
}

func renderPorts(n Network, local nodeinfo.Info, remotes []nodeinfo.Info, ports []Port) PortsResult {
	b := &builder{n: n}
	remote := make(map[string]nodeinfo.Info, len(remotes))
	for _, r := range remotes {
		remote[r.Name] = r
	}
	distributed := n.Topology == netconf.TopologyLayer2
	sorted := append([]Port(nil), ports...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out PortsResult
	var onSwitch, isolated []string
	for _, p := range sorted {
		addr := p.MAC
		for _, ip := range p.IPs {
			addr += " " + ip.Addr().String()
		}
		lsp := &nbdb.LogicalSwitchPort{UUID: lspID(p.Name), Name: p.Name, Addresses: []string{addr}, ExternalIDs: b.ext(p.Node)}
		for k, v := range p.ExternalIDs {
			lsp.ExternalIDs[k] = v
		}
		opts := map[string]string{}
		if distributed && p.TunnelKey > 0 {
			opts["requested-tnl-key"] = strconv.Itoa(p.TunnelKey)
		}
		target, migrating := remote[p.MigrationTarget]
		if p.MigrationTarget == local.Name {
			target, migrating = local, true
		}
		migrating = migrating && distributed && p.MigrationTarget != p.Node
		switch r, isRemote := remote[p.Node]; {
		case p.Node == local.Name:
			opts["requested-chassis"] = local.ChassisID
			if migrating {
				opts["requested-chassis"] += "," + target.ChassisID
				opts["activation-strategy"] = "rarp"
			}
			lsp.PortSecurity = []string{addr}
		case isRemote && migrating && p.MigrationTarget == local.Name:
			// The target's zone binds the port here as an additional
			// chassis (blocked until the VM announces itself); northd
			// binds the main chassis, a remote one, itself.
			opts["requested-chassis"] = r.ChassisID + "," + local.ChassisID
			opts["activation-strategy"] = "rarp"
			lsp.PortSecurity = []string{addr}
		case isRemote && distributed:
			if p.TunnelKey == 0 {
				out.Skipped = append(out.Skipped, Problem{Node: p.Node, Reason: "port " + p.Name + " has no tunnel key"})
				continue
			}
			lsp.Type = "remote"
			opts["requested-chassis"] = r.ChassisID
		default:
			continue
		}
		lsp.Options = opts
		out.Rows = append(out.Rows, lsp)
		onSwitch = append(onSwitch, lsp.UUID)
		if p.Isolated && p.Node == local.Name && n.IsDefault() {
			isolated = append(isolated, lsp.UUID)
		}
	}
	if len(onSwitch) > 0 {
		out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
			Target: &nbdb.LogicalSwitch{Name: n.PodSwitch(local.Name)}, Column: "ports", Members: onSwitch})
	}
	if len(isolated) > 0 {
		out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
			Target: &nbdb.PortGroup{Name: IsolatedPortGroup}, Column: "ports", Members: isolated})
	}
	return out
}

// Merge returns a network's rows with ports' rows added and their
// contributions made members of the network's rows: the zone's Northbound
// as a whole (render and explain show it so; the zone writes the two
// apart). A contribution to a row the network does not have is an error.
func Merge(network []model.Model, ports PortsResult) ([]model.Model, error) {
	out := make([]model.Model, 0, len(network)+len(ports.Rows))
	for _, m := range network {
		out = append(out, model.Clone(m))
	}
	for _, c := range ports.Contributions {
		found := false
		for _, m := range out {
			switch t := m.(type) {
			case *nbdb.LogicalSwitch:
				if sw, ok := c.Target.(*nbdb.LogicalSwitch); ok && c.Column == "ports" && sw.Name == t.Name {
					t.Ports, found = append(t.Ports, c.Members...), true
				}
			case *nbdb.PortGroup:
				if pg, ok := c.Target.(*nbdb.PortGroup); ok && c.Column == "ports" && pg.Name == t.Name {
					t.Ports, found = append(t.Ports, c.Members...), true
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("ports contribute to %T %+v.%s, which the network does not have", c.Target, c.Target, c.Column)
		}
	}
	out = append(out, ports.Rows...)
	SortRows(out)
	return out, nil
}
