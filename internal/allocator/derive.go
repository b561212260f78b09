package allocator

import (
	"fmt"
	"net"
	"net/netip"
)

// Addresses derived from IDs: no annotation holds them, every component
// computes them the same way from the node ID or network ID.
//
// Node IDs start at FirstNodeID because offset 1 of each network's join subnet
// belongs to its cluster router (Layer3), and offsets 0 and 1 of the transit
// subnet are the network address and the first /31.

// FirstNodeID is the smallest node ID.
const FirstNodeID = 2

// MaxNodeID is the largest node ID: port tunnel keys are node IDs, and OVN
// logical port keys are 15 bits; the /31 of node 32767 is the last of a /16.
const MaxNodeID = 1<<15 - 1

// TransitSwitchIP is a node's address on a Layer3 network's transit switch:
// transit base + node ID, with the transit prefix length (node ID 2 in
// 100.88.0.0/16 → 100.88.0.2/16).
func TransitSwitchIP(transit netip.Prefix, nodeID int) (netip.Prefix, error) {
	a, err := offsetIn(transit, uint64(nodeID))
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, transit.Bits()), nil
}

// TransitPeers returns the two ends of the point-to-point link between a
// Layer2 network's transit router and a node's gateway router (seed 000,
// "Router to router direct connection"): the /31 (IPv4) or /127 (IPv6) at
// transit base + 2 × node ID; the transit router's port takes the first
// address, the gateway router's port the second. Node ID 2 in 100.88.0.0/16 →
// 100.88.0.4/31 and 100.88.0.5/31; node ID 4 in fd97::/64 → fd97::8/127 and
// fd97::9/127.
func TransitPeers(transit netip.Prefix, nodeID int) (routerSide, gatewaySide netip.Prefix, err error) {
	bits := 31
	if transit.Addr().Is6() {
		bits = 127
	}
	first, err := offsetIn(transit, 2*uint64(nodeID))
	if err != nil {
		return netip.Prefix{}, netip.Prefix{}, err
	}
	second, err := offsetIn(transit, 2*uint64(nodeID)+1)
	if err != nil {
		return netip.Prefix{}, netip.Prefix{}, err
	}
	return netip.PrefixFrom(first, bits), netip.PrefixFrom(second, bits), nil
}

// GatewayJoinIP is a node's gateway-router address on a network's join subnet:
// join base + node ID (node ID 2 in 100.65.0.0/16 → 100.65.0.2/16).
func GatewayJoinIP(join netip.Prefix, nodeID int) (netip.Prefix, error) {
	a, err := offsetIn(join, uint64(nodeID))
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, join.Bits()), nil
}

// RouterJoinIP is a Layer3 network's cluster-router address on its join
// subnet: join base + 1.
func RouterJoinIP(join netip.Prefix) netip.Prefix {
	a, _ := offsetIn(join, 1)
	return netip.PrefixFrom(a, join.Bits())
}

// MasqueradeIPs are a network's two addresses in a masquerade subnet: the
// gateway router SNATs egress to the first, and the second is used for traffic
// toward the node's management port. They follow the reserved block:
// base + MasqueradeReserved + 2 × network ID, and the next one.
func MasqueradeIPs(masq netip.Prefix, networkID, reserved int) (gateway, management netip.Addr, err error) {
	off := uint64(reserved + 2*networkID)
	if gateway, err = offsetIn(masq, off); err != nil {
		return
	}
	management, err = offsetIn(masq, off+1)
	return
}

// NthAddress returns the address at offset n of prefix (1 is the first host of
// an IPv4 subnet, the conventional gateway).
func NthAddress(p netip.Prefix, n uint64) (netip.Addr, error) { return offsetIn(p, n) }

func offsetIn(p netip.Prefix, off uint64) (netip.Addr, error) {
	p = p.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits < 64 && off >= 1<<uint(hostBits) {
		return netip.Addr{}, fmt.Errorf("offset %d does not fit in %s", off, p)
	}
	return AddOffset(p.Addr(), off), nil
}

// MAC derives a MAC from an address, as OVN-Kubernetes does: 0a:58 followed by
// the IPv4 address's four bytes, or by the last four bytes of an IPv6 address.
// (10.128.1.3 → 0a:58:0a:80:01:03.)
func MAC(a netip.Addr) net.HardwareAddr {
	b := a.AsSlice()
	b = b[len(b)-4:]
	return net.HardwareAddr{0x0a, 0x58, b[0], b[1], b[2], b[3]}
}

// LinkLocal returns the IPv6 link-local address derived from a MAC by EUI-64
// (0a:58:cb:cb:00:01 → fe80::858:cbff:fecb:1), the gateway address VMs learn
// from router advertisements.
func LinkLocal(mac net.HardwareAddr) netip.Addr {
	var b [16]byte
	b[0], b[1] = 0xfe, 0x80
	b[8] = mac[0] ^ 0x02
	b[9], b[10] = mac[1], mac[2]
	b[11], b[12] = 0xff, 0xfe
	b[13], b[14], b[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(b)
}
