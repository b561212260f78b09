package podnet

import (
	"hash/fnv"
	"net"
	"net/netip"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Attach builds the annotation entry of request r given its addresses (with
// their on-link prefix lengths) and the gateways of those subnets (nil for
// networks without a router). mac overrides the derived MAC (a pod's request).
//
// Routes, as the seed's example and routing tables show:
//   - a pod with no primary user-defined network: the default network is its
//     default route (gateway_ips), plus routes to the cluster subnets and the
//     default join subnet through its gateway;
//   - a pod with one: the default network keeps only the routes to the
//     cluster subnets and join subnet (role infrastructure-locked) and to
//     the cluster IPs of the infrastructure services (r.ServiceRoutes), and the
//     primary network is the default route, with the service CIDRs and the
//     network's join subnets (and a Layer3 network's subnets) through its
//     gateway;
//   - a secondary Layer3 network routes its subnets through the node's
//     gateway of it; secondary Layer2 and Localnet networks are on-link;
//   - a secondary network with an egress gateway that the pod asks for its
//     default route (default-route) is the default route of those IP
//     families, and the default network keeps for them the routes to the
//     cluster subnets, join subnet and service CIDRs
//     (Request.DefaultRouteElsewhere), and to the pod's node's own
//     addresses (Request.NodeAddresses).
func Attach(r Request, addrs []netip.Prefix, gateways []netip.Addr, mac string, podKey string, cfg config.Cluster) Attachment {
	a := Attachment{Role: r.Role, MAC: mac}
	for _, p := range addrs {
		a.IPs = append(a.IPs, p.String())
	}
	if a.MAC == "" {
		a.MAC = DeriveMAC(addrs, r.Network+"/"+podKey)
	}
	var routeTo []netip.Prefix
	switch {
	case r.Key == DefaultKey:
		for _, s := range cfg.ClusterSubnets {
			routeTo = append(routeTo, s.CIDR)
		}
		routeTo = append(routeTo, cfg.DefaultJoinSubnets...)
		if r.Role == RoleInfrastructure {
			routeTo = append(routeTo, r.ServiceRoutes...)
		}
		for _, s := range cfg.ServiceCIDRs {
			if r.DefaultRouteElsewhere[s.Addr().Is4()] {
				routeTo = append(routeTo, s)
			}
		}
		for _, n := range r.NodeAddresses {
			if r.DefaultRouteElsewhere[n.Is4()] {
				routeTo = append(routeTo, netip.PrefixFrom(n, n.BitLen()))
			}
		}
	case r.Role == RolePrimary:
		if r.Topology() == netconf.TopologyLayer3 {
			for _, s := range r.Conf.ParsedSubnets() {
				routeTo = append(routeTo, s.CIDR)
			}
		}
		routeTo = append(routeTo, cfg.ServiceCIDRs...)
		routeTo = append(routeTo, r.Conf.JoinPrefixes()...)
	case r.Topology() == netconf.TopologyLayer3:
		for _, s := range r.Conf.ParsedSubnets() {
			routeTo = append(routeTo, s.CIDR)
		}
	}
	for _, dst := range routeTo {
		for _, gw := range gateways {
			if gw.Is4() == dst.Addr().Is4() {
				a.Routes = append(a.Routes, Route{Dest: dst.String(), NextHop: gw.String()})
			}
		}
	}
	var asked map[bool]bool // a secondary network's default-route families
	if r.Role == RoleSecondary && r.Selection != nil && r.Conf.HasGateway() {
		asked = r.Selection.DefaultRouteFamilies()
	}
	for _, gw := range gateways {
		if (r.Role == RolePrimary && !r.DefaultRouteElsewhere[gw.Is4()]) || asked[gw.Is4()] {
			a.Gateways = append(a.Gateways, gw.String())
		}
	}
	return a
}

// DeriveMAC is the MAC of a port holding addrs: 0a:58 followed by the first
// IPv4 address (else the first address's last four bytes). A port without
// addresses (IPAM disabled) gets 0a:58 followed by a hash of seed, so it is
// stable for the pod and network.
func DeriveMAC(addrs []netip.Prefix, seed string) string {
	for _, p := range addrs {
		if p.Addr().Is4() {
			return allocator.MAC(p.Addr()).String()
		}
	}
	if len(addrs) > 0 {
		return allocator.MAC(addrs[0].Addr()).String()
	}
	h := fnv.New32a()
	h.Write([]byte(seed))
	s := h.Sum32()
	return net.HardwareAddr{0x0a, 0x58, byte(s >> 24), byte(s >> 16), byte(s >> 8), byte(s)}.String()
}
