// Package dot draws the Northbound rows a zone holds as a Graphviz graph: one
// cluster per zone, holding one cluster per network, with the network's
// routers and switches as tables of their ports (addresses as labels) and
// edges between peer ports. It reads rows only; `ovn-udn render -o dot`
// prints it.
package dot

import (
	"fmt"
	"html"
	"net/netip"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Zone is one zone's networks, drawn as one cluster.
type Zone struct {
	Name     string
	Networks []Network
}

// Network is one network's rows in a zone, drawn as one cluster.
type Network struct {
	// Definition names the network and gives the topology, role and subnets
	// of its cluster's label; only Name is required.
	Definition topology.Network
	// NotRendered says why the zone holds no rows for the network, if so.
	NotRendered string
	// Rows are the network's desired rows, their IDs in their UUID fields
	// (topology.RowID); rows other than routers, switches, their ports and
	// static routes are not drawn.
	Rows []model.Model
}

// Levels put the physical network at the top of a picture and the pods'
// switches at the bottom: an edge goes from the lower level to the higher.
const (
	levelPhysical = iota
	levelExternal
	levelGateway
	levelJoin
	levelCluster
	levelPods
)

// datapath is a router or switch: a table whose rows are its ports.
type datapath struct {
	id     string // DOT node ID
	level  int
	title  string // the row's name
	kind   string // "gateway router on chassis-node1", "join switch", ...
	router bool
	ports  []port
}

// port is a table cell that edges attach to.
type port struct {
	name   string
	lines  []string
	remote bool // another node's port
}

// end is an edge's end: a datapath's port.
type end struct {
	dp   *datapath
	port string
}

func (e end) String() string { return quote(e.dp.id) + ":" + quote(e.port) }

// Graph returns the zones as one undirected DOT graph. Datapaths are sorted
// by level and name, ports by name and edges by their text: the same rows
// always give the same text.
func Graph(zones []Zone) string {
	var b strings.Builder
	b.WriteString("graph ovn {\n")
	b.WriteString("\tgraph [fontname=\"Helvetica\" fontsize=12 labeljust=l newrank=true];\n")
	b.WriteString("\tnode [shape=plain fontname=\"Helvetica\" fontsize=10];\n")
	for zi, z := range zones {
		fmt.Fprintf(&b, "\tsubgraph cluster_%d {\n\t\tlabel=%s;\n", zi, quote("zone "+z.Name))
		for ni, n := range z.Networks {
			fmt.Fprintf(&b, "\t\tsubgraph cluster_%d_%d {\n\t\t\tlabel=%s;\n\t\t\tstyle=rounded;\n", zi, ni, quote(networkLabel(n)))
			writeNetwork(&b, z.Name+"/"+n.Definition.Name+"/", n)
			b.WriteString("\t\t}\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// networkLabel is "network <name>", its topology and role, and its subnets.
func networkLabel(n Network) string {
	d := n.Definition
	lines := []string{"network " + d.Name}
	if kind := strings.TrimSpace(d.Topology + " " + d.Role); kind != "" {
		lines = append(lines, kind)
	}
	if len(d.Subnets) > 0 {
		lines = append(lines, "subnets "+netconf.JoinList(d.Subnets))
	}
	return strings.Join(lines, "\n")
}

// writeNetwork writes a network's datapaths and edges; prefix makes their
// IDs unique in the graph.
func writeNetwork(b *strings.Builder, prefix string, n Network) {
	if n.NotRendered != "" || len(n.Rows) == 0 {
		note := "no rows"
		if n.NotRendered != "" {
			note = "not rendered: " + n.NotRendered
		}
		fmt.Fprintf(b, "\t\t\t%s [shape=note label=%s];\n", quote(prefix+"note"), quote(note))
		return
	}
	g := build(prefix, n)
	for _, dp := range g.datapaths {
		fmt.Fprintf(b, "\t\t\t%s [label=<%s>];\n", quote(dp.id), table(dp))
	}
	for _, p := range g.physical {
		fmt.Fprintf(b, "\t\t\t%s [shape=ellipse style=dashed label=%s];\n", quote(p), quote("physical network\n"+strings.TrimPrefix(p, prefix+"physnet:")))
	}
	for _, e := range g.edges {
		fmt.Fprintf(b, "\t\t\t%s;\n", e)
	}
}

// graph is one network's datapaths, physical networks and edges, sorted.
type graph struct {
	datapaths []*datapath
	physical  []string // DOT node IDs
	edges     []string
}

// build reads a network's routers and switches, their ports and the edges
// between them; prefix starts their DOT IDs.
func build(prefix string, n Network) graph {
	byID := map[string]model.Model{}
	for _, r := range n.Rows {
		byID[topology.RowID(r)] = r
	}
	routes := staticRoutes(n.Rows)
	var g graph
	routerPorts := map[string]end{} // LRP name -> its cell
	type lspAt struct {
		p  *nbdb.LogicalSwitchPort
		dp *datapath
	}
	type lrpAt struct {
		p  *nbdb.LogicalRouterPort
		dp *datapath
	}
	var switchPorts []lspAt
	var peered []lrpAt
	for _, r := range n.Rows {
		switch v := r.(type) {
		case *nbdb.LogicalRouter:
			dp := &datapath{id: prefix + topology.RowID(v), title: v.Name, router: true}
			dp.kind, dp.level = routerKind(n.Definition, v)
			for _, id := range v.Ports {
				p, ok := byID[id].(*nbdb.LogicalRouterPort)
				if !ok {
					continue
				}
				dp.ports = append(dp.ports, routerPort(p, routes))
				routerPorts[p.Name] = end{dp, p.Name}
				if p.Peer != nil {
					peered = append(peered, lrpAt{p, dp})
				}
			}
			g.datapaths = append(g.datapaths, dp)
		case *nbdb.LogicalSwitch:
			dp := &datapath{id: prefix + topology.RowID(v), title: v.Name}
			dp.kind, dp.level = switchKind(n.Definition, v)
			for _, id := range v.Ports {
				if p, ok := byID[id].(*nbdb.LogicalSwitchPort); ok {
					dp.ports = append(dp.ports, switchPort(p, routes))
					switchPorts = append(switchPorts, lspAt{p, dp})
				}
			}
			g.datapaths = append(g.datapaths, dp)
		}
	}
	edges := map[string]bool{}
	link := func(a, b end) {
		if a.dp.level > b.dp.level || a.dp.level == b.dp.level && a.String() > b.String() {
			a, b = b, a
		}
		edges[a.String()+" -- "+b.String()] = true
	}
	physical := map[string]bool{}
	for _, at := range switchPorts {
		p, here := at.p, end{at.dp, at.p.Name}
		switch p.Type {
		case "router":
			if peer, ok := routerPorts[p.Options["router-port"]]; ok {
				link(here, peer)
			}
		case "localnet":
			id := prefix + "physnet:" + p.Options["network_name"]
			physical[id] = true
			edges[quote(id)+" -- "+here.String()] = true
		}
	}
	for _, at := range peered {
		if peer, ok := routerPorts[*at.p.Peer]; ok {
			link(end{at.dp, at.p.Name}, peer)
		}
	}
	for _, dp := range g.datapaths {
		sort.Slice(dp.ports, func(i, j int) bool { return dp.ports[i].name < dp.ports[j].name })
	}
	sort.Slice(g.datapaths, func(i, j int) bool {
		a, b := g.datapaths[i], g.datapaths[j]
		if a.level != b.level {
			return a.level < b.level
		}
		return a.title < b.title
	})
	g.physical, g.edges = sortedKeys(physical), sortedKeys(edges)
	return g
}

// routerKind names a router's role in the network and its level.
func routerKind(n topology.Network, r *nbdb.LogicalRouter) (string, int) {
	switch {
	case r.Name == n.ClusterRouter():
		return "cluster router", levelCluster
	case r.Name == n.TransitRouter():
		return "transit router", levelJoin
	case r.Options["chassis"] != "":
		return "gateway router on " + r.Options["chassis"], levelGateway
	}
	return "router", levelCluster
}

// switchKind names a switch's role in the network and its level.
func switchKind(n topology.Network, s *nbdb.LogicalSwitch) (string, int) {
	node := s.ExternalIDs[topology.NodeKey]
	switch s.Name {
	case n.TransitSwitch():
		return "transit switch", levelPods
	case n.JoinSwitch():
		return "join switch", levelJoin
	case n.Layer2Switch():
		return "layer2 switch", levelPods
	case n.LocalnetSwitch():
		return "localnet switch", levelExternal
	case n.ExternalSwitch(node):
		return "external switch", levelExternal
	case n.NodeSwitch(node):
		return "node switch", levelPods
	}
	return "switch", levelPods
}

// routerPort is a router port's cell: its networks, and for another node's
// port (bound to another chassis, no peer here) the prefixes routed through
// it.
func routerPort(p *nbdb.LogicalRouterPort, routes []*nbdb.LogicalRouterStaticRoute) port {
	out := port{name: p.Name, lines: []string{p.Name}}
	chassis := p.Options["requested-chassis"]
	out.remote = chassis != "" && p.Peer == nil
	if out.remote {
		out.lines = append(out.lines, "remote on "+chassis)
	}
	out.lines = append(out.lines, sorted(p.Networks)...)
	if out.remote {
		// The next hop is the other node's end of the link.
		out.lines = append(out.lines, reached(routes, func(hop netip.Addr) bool {
			for _, s := range p.Networks {
				if pre, err := netip.ParsePrefix(s); err == nil && pre.Contains(hop) && pre.Addr() != hop {
					return true
				}
			}
			return false
		})...)
	}
	return out
}

// switchPort is a switch port's cell: its type and addresses; a remote port
// also says its chassis and the prefixes routed to its addresses.
func switchPort(p *nbdb.LogicalSwitchPort, routes []*nbdb.LogicalRouterStaticRoute) port {
	out := port{name: p.Name, lines: []string{p.Name}}
	switch p.Type {
	case "router":
		return out // the edge to its router port says it
	case "localnet":
		line := "localnet " + p.Options["network_name"]
		if p.TagRequest != nil {
			line += fmt.Sprintf(" vlan %d", *p.TagRequest)
		}
		out.lines = append(out.lines, line)
		return out
	case "remote":
		out.remote = true
		out.lines = append(out.lines, "remote on "+p.Options["requested-chassis"])
	case "":
	default:
		out.lines = append(out.lines, "type "+p.Type)
	}
	out.lines = append(out.lines, sorted(p.Addresses)...)
	if out.remote {
		out.lines = append(out.lines, reached(routes, func(hop netip.Addr) bool {
			for _, a := range p.Addresses {
				for _, f := range strings.Fields(a) {
					addr, _, _ := strings.Cut(f, "/")
					if a, err := netip.ParseAddr(addr); err == nil && a == hop {
						return true
					}
				}
			}
			return false
		})...)
	}
	return out
}

// staticRoutes are the rows' destination-based static routes.
func staticRoutes(rows []model.Model) []*nbdb.LogicalRouterStaticRoute {
	var out []*nbdb.LogicalRouterStaticRoute
	for _, r := range rows {
		if rt, ok := r.(*nbdb.LogicalRouterStaticRoute); ok && (rt.Policy == nil || *rt.Policy != nbdb.LogicalRouterStaticRoutePolicySrcIP) {
			out = append(out, rt)
		}
	}
	return out
}

// reached is a line "routes <prefixes>" naming the destinations of the
// routes whose next hop via says is through the port (another node's
// slices and addresses), or nothing when there are none.
func reached(routes []*nbdb.LogicalRouterStaticRoute, via func(netip.Addr) bool) []string {
	var prefixes []string
	for _, rt := range routes {
		if hop, err := netip.ParseAddr(rt.Nexthop); err == nil && via(hop) {
			prefixes = append(prefixes, rt.IPPrefix)
		}
	}
	if len(prefixes) == 0 {
		return nil
	}
	return []string{"routes " + strings.Join(sorted(prefixes), " ")}
}

// Colours of a table's title row and of other nodes' ports.
const (
	routerColour = "#cfe2f3"
	switchColour = "#d9ead3"
	remoteColour = "#eeeeee"
)

// table is a datapath's HTML-like label: its name and kind, then a cell per
// port that edges attach to (PORT is the port's name).
func table(dp *datapath) string {
	colour := switchColour
	if dp.router {
		colour = routerColour
	}
	var b strings.Builder
	b.WriteString(`<table border="0" cellborder="1" cellspacing="0" cellpadding="3">`)
	fmt.Fprintf(&b, "\n\t\t\t\t<tr><td bgcolor=%q><b>%s</b><br/>%s</td></tr>", colour, html.EscapeString(dp.title), html.EscapeString(dp.kind))
	for _, p := range dp.ports {
		bg := ""
		if p.remote {
			bg = fmt.Sprintf(" bgcolor=%q", remoteColour)
		}
		lines := make([]string, len(p.lines))
		for i, l := range p.lines {
			lines[i] = html.EscapeString(l)
		}
		fmt.Fprintf(&b, "\n\t\t\t\t<tr><td port=\"%s\"%s>%s</td></tr>", html.EscapeString(p.name), bg, strings.Join(lines, "<br/>"))
	}
	b.WriteString("\n\t\t\t</table>")
	return b.String()
}

// quote is a DOT double-quoted string; "\n" in it breaks the line.
func quote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
