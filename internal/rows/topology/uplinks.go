package topology

import (
	"net/netip"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// Default routes of a gateway router through the node's next hops (the
// seed 004's router attributes, applied to every network's gateway router).
// A node has one or more uplinks (external bridges), each with next hops on
// its subnets; the gateway router has an external port on each (external
// switch and localnet port per uplink, the first with the original names,
// a further one's suffixed "_<physical network>": uplinkSuffix).
//
//   - ECMP: one default route per next hop of a family, and when a family
//     has several, each carries options:ecmp_symmetric_reply (replies to a
//     connection leave through the next hop it came from); off, the first
//     next hop of each family only (the "compatibility gateway").
//   - BFD: one BFD session per node and next hop, run by the default
//     network's gateway router (logical_port = its external port on the
//     next hop's uplink), and the
//     default routes of every network's gateway router on the node refer to
//     it. All gateway routers of a node share the node's address, so N
//     sessions from one address to one peer would look like one flapping
//     session to the peer: sharing is required, not only cheaper.

// UplinkPolicy is the node's effective default-route policy: the zone's
// config.Gateway with the node's overrides.
func UplinkPolicy(g config.Gateway, node *nodeinfo.ParsedGateway) config.Gateway {
	if node != nil && node.ECMP != nil {
		g.ECMP = *node.ECMP
	}
	if node != nil && node.BFD != nil {
		g.BFD = *node.BFD
	}
	return g
}

// exit is a next hop and the gateway router's external port it is reached
// by (the port of the uplink whose subnet holds it).
type exit struct {
	hop  netip.Addr
	port string
}

// defaultRouteExits are the next hops the gateway router routes through, in
// the node's order (uplinks in order, each uplink's next hops in order): all
// of them with ECMP, else the first of each family (the compatibility
// gateway: the first uplink's first next hop).
func defaultRouteExits(exits []exit, ecmp bool) []exit {
	if ecmp {
		return exits
	}
	var out []exit
	seen := map[bool]bool{}
	for _, e := range exits {
		if !seen[e.hop.Is4()] {
			seen[e.hop.Is4()] = true
			out = append(out, e)
		}
	}
	return out
}

// defaultRoutes renders the gateway router's default routes through exits
// and, for the default network, the node's BFD rows.
func (b *builder) defaultRoutes(local nodeinfo.Info, gr string, exits []exit) []string {
	policy := UplinkPolicy(b.gw, local.Gateway)
	exits = defaultRouteExits(exits, policy.ECMP)
	perFamily := map[bool]int{}
	for _, e := range exits {
		perFamily[e.hop.Is4()]++
	}
	var routes []string
	for _, e := range exits {
		def := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		if e.hop.Is6() {
			def = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		}
		r := b.routeRow(gr, "", def, e.hop.String(), e.port, local.Name)
		if perFamily[e.hop.Is4()] > 1 {
			r.Options = map[string]string{"ecmp_symmetric_reply": "true"}
		}
		if policy.BFD {
			if ref, ok := b.bfd(local.Name, e.port, e.hop, policy); ok {
				r.BFD = &ref
			}
		}
		routes = append(routes, r.UUID)
	}
	return routes
}

// BFDRowID is the row ID of the default network's BFD session with hop on
// its gateway router's external port rtoe: a named UUID within the network's
// rows, and what another network's routes refer to where no Northbound says
// the row's UUID (render).
func BFDRowID(rtoe string, hop netip.Addr) string { return "bfd:" + rtoe + ":" + hop.String() }

// bfd returns what a route through hop refers to for BFD: the default
// network renders the shared row on its external port rtoe (and refers to
// its ID); another network refers to that row's UUID when the zone has it
// (Input.SharedBFD), and goes without until then.
func (b *builder) bfd(node, rtoe string, hop netip.Addr, policy config.Gateway) (string, bool) {
	if !b.n.IsDefault() {
		u, ok := b.sharedBFD[hop]
		if !ok {
			b.waitingForBFD = append(b.waitingForBFD, hop)
		}
		return u, ok
	}
	id := BFDRowID(rtoe, hop)
	row := &nbdb.BFD{UUID: id, LogicalPort: rtoe, DstIP: hop.String(), ExternalIDs: b.ext(node)}
	for _, t := range []struct {
		v   int
		dst **int
	}{{policy.BFDMinTx, &row.MinTx}, {policy.BFDMinRx, &row.MinRx}, {policy.BFDDetectMult, &row.DetectMult}} {
		if t.v > 0 {
			v := t.v
			*t.dst = &v
		}
	}
	b.add(row)
	return id, true
}

// uplinkSuffix ends the names of a gateway router's objects on its i-th
// uplink: none on the first (the original names), "_<physical network>" on
// a further one (node names cannot hold "_").
func uplinkSuffix(i int, physnet string) string {
	if i == 0 {
		return ""
	}
	return "_" + physnet
}
