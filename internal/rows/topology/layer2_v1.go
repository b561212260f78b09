package topology

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// The old Layer2 topology (seed 000's 1.0) and the ports that carry
// traffic between it and the transit-router topology (2.0) while a cluster
// moves node by node (seed 000, "Rolling upgrade and traffic disruption").
//
// In 1.0 each node's gateway router sits on the network's switch: its port
// rtos-GR_<network>_<node> holds the gateway address (the same on every
// node) and the node's join address, with a MAC derived from the join
// address; the switch's port toward it, stor-GR_<network>_<node>, has the
// node's key (NodeRouterPortKey), and every other zone has a remote port
// of that name and key, answering ARP for the join address. The
// management-port SNAT and the node reroute are the gateway router's.
//
// A 2.0 node, while some node is at 1.0, adds to its switch a router port
// stotr-<switch>-upgrade with its own node key, so that what 1.0 nodes send
// to its join address arrives; that port's peer on the transit router,
// trtos-<switch>-upgrade, has the gateway router's MAC and a dummy join
// address (the join subnet's last but one), and the transit router routes
// each 1.0 node's join address (/32, /128: longer than any pod subnet's
// source route) to that port, where the remote stor-GR port of that node
// answers. The join addresses are the one subnet both topologies route,
// which is why load balancers SNAT to them (lb_force_snat_ip): a service
// reply crosses between versions through them. These ports go when no node
// is at 1.0 any more.

// UpgradePortSuffix ends the names of the ports that carry traffic between
// the two Layer2 topologies during a rolling upgrade (stotr-<switch>-upgrade,
// trtos-<switch>-upgrade).
const UpgradePortSuffix = "-upgrade"

// IsUpgradeRouterPort reports whether port is a transit router's upgrade
// port (trtos-<switch>-upgrade), not merely a name that ends the same (a
// node named x-upgrade).
func IsUpgradeRouterPort(port string) bool {
	return strings.HasPrefix(port, "trtos-") && strings.HasSuffix(port, Layer2SwitchSuffix+UpgradePortSuffix)
}

// layer2V1 renders a Layer2 primary network's switch ports, gateway router
// and remote gateway router ports in the old topology.
func layer2V1(b *builder, ls *nbdb.LogicalSwitch, local nodeinfo.Info, remotes []nodeinfo.Info, cfg config.Cluster, gws, mgmt []netip.Prefix) error {
	n := b.n
	gr := n.GatewayRouter(local.Name)
	rtos, stor := "rtos-"+gr, "stor-"+gr
	key, err := NodeRouterPortKey(local.ID)
	if err != nil {
		return fmt.Errorf("network %s: node %s: %w", n.Name, local.Name, err)
	}
	ls.Ports = append(ls.Ports,
		b.routerTypePort(stor, rtos, local.Name, keyOption(key)),
		b.managementPortWith(n.ManagementPort(local.Name), local.Name, mgmt, keyOption(ManagementPortKey)))
	for _, r := range remotes {
		id, err := b.oldGatewayRouterRemote(r)
		if err != nil {
			b.skip(r.Name, err.Error())
			continue
		}
		ls.Ports = append(ls.Ports, id)
	}
	grJoin := b.joinIPs(local.ID)
	b.add(&nbdb.LogicalRouterPort{UUID: lrpID(rtos), Name: rtos, MAC: PortMAC(grJoin),
		Networks: PrefixStrings(append(append([]netip.Prefix{}, grJoin...), gws...)), ExternalIDs: b.ext(local.Name),
		Options: gatewayMTU(n)})
	policies := append(b.nodeReroutes(gr, rtos, local, primaryAddrs(local), mgmt), b.isolation(gr, cfg)...)
	nats := b.managementSNAT(gr, "", local, mgmt, cfg)
	b.layer2GatewayRouter(local, gr, grJoin, []string{lrpID(rtos)}, nil, policies, nats, cfg)
	return nil
}

// oldGatewayRouterRemote adds the remote port of node r's gateway router in
// the old topology (or of its upgrade port, which stands in for it once r
// has moved) and returns its ID.
func (b *builder) oldGatewayRouterRemote(r nodeinfo.Info) (string, error) {
	n := b.n
	key, err := NodeRouterPortKey(r.ID)
	if err != nil {
		return "", fmt.Errorf("network %s: node %s: %w", n.Name, r.Name, err)
	}
	join := b.joinIPs(r.ID)
	name := "stor-" + n.GatewayRouter(r.Name)
	opts := keyOption(key)
	opts["requested-chassis"] = r.ChassisID
	b.add(&nbdb.LogicalSwitchPort{UUID: lspID(name), Name: name, Type: "remote",
		Addresses: []string{joinAddrs(PortMAC(join), PrefixStrings(join)...)}, Options: opts, ExternalIDs: b.ext(r.Name)})
	return lspID(name), nil
}

// upgradePorts adds, on a 2.0 node while the nodes old are at 1.0, the
// upgrade ports and the remote gateway router ports and join routes of the
// old nodes. It returns the transit router's port, the switch's ports, the
// transit router's routes, and the management masquerade addresses the
// gateway port must hold so that it alone answers ARP for them; no port
// ("") when the local node has no key for it (its ID is too large), and
// then the old nodes are left out (skipped), as is an old node without a
// key.
func (b *builder) upgradePorts(local nodeinfo.Info, old []nodeinfo.Info, cfg config.Cluster) (trPort string, lsps, routes []string, masq []netip.Prefix, err error) {
	n := b.n
	sw := n.Layer2Switch()
	tr := n.TransitRouter()
	trtos, stotr := "trtos-"+sw+UpgradePortSuffix, "stotr-"+sw+UpgradePortSuffix
	key, err := NodeRouterPortKey(local.ID)
	if err != nil {
		// No upgrade port: the old nodes cannot reach this one's join
		// address, so they are left out rather than half connected.
		for _, r := range old {
			b.skip(r.Name, fmt.Sprintf("at the old Layer2 topology, and node %s has no upgrade port: %v", local.Name, err))
		}
		return "", nil, nil, nil, nil
	}
	lsps = append(lsps, b.routerTypePort(stotr, trtos, local.Name, keyOption(key)))
	var dummy []netip.Prefix
	for _, j := range n.Join {
		if d := lastAddress(j).Prev(); j.Contains(d) && d != j.Masked().Addr() {
			dummy = append(dummy, netip.PrefixFrom(d, j.Bits()))
		}
	}
	b.add(&nbdb.LogicalRouterPort{UUID: lrpID(trtos), Name: trtos, MAC: PortMAC(b.joinIPs(local.ID)), Networks: PrefixStrings(dummy),
		ExternalIDs: b.ext(local.Name)})
	for _, r := range old {
		id, err := b.oldGatewayRouterRemote(r)
		if err != nil {
			b.skip(r.Name, err.Error())
			continue
		}
		lsps = append(lsps, id)
		for _, j := range b.joinIPs(r.ID) {
			routes = append(routes, b.route(tr, "", hostPrefix(j.Addr()), j.Addr().String(), trtos, r.Name))
		}
	}
	for _, s := range n.Subnets {
		m, ok := FamilyOf(cfg.MasqueradeSubnets, s.CIDR.Addr())
		if !ok {
			continue
		}
		if _, mp, err := allocator.MasqueradeIPs(m, n.ID, config.MasqueradeReserved); err == nil {
			masq = append(masq, hostPrefix(mp))
		}
	}
	return lrpID(trtos), lsps, routes, masq, nil
}

// lastAddress is the last address of prefix p.
func lastAddress(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := range b {
		bits := p.Bits() - 8*i
		switch {
		case bits >= 8:
		case bits <= 0:
			b[i] = 0xff
		default:
			b[i] |= byte(0xff >> bits)
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
