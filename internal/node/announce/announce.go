// Package announce builds the frames a node sends to make neighbours learn
// where an address now lives: a gratuitous ARP (IPv4), an unsolicited
// neighbour advertisement and a router advertisement (IPv6). They are pure
// byte builders; the callers put them on the wire (ovs-ofctl packet-out).
package announce

import (
	"net"
	"net/netip"
)

// GARP returns a broadcast gratuitous ARP request for ip from mac: sender
// and target address both ip, padded to Ethernet's 60-byte minimum.
func GARP(mac net.HardwareAddr, ip netip.Addr) []byte {
	b := make([]byte, 0, 60)
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	b = append(b, mac...)
	b = append(b, 0x08, 0x06)       // ARP
	b = append(b, 0x00, 0x01)       // Ethernet
	b = append(b, 0x08, 0x00, 6, 4) // IPv4, address lengths
	b = append(b, 0x00, 0x01)       // request
	a := ip.As4()
	b = append(b, mac...)
	b = append(b, a[:]...)
	b = append(b, 0, 0, 0, 0, 0, 0)
	b = append(b, a[:]...)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// allNodes is the IPv6 all-nodes multicast address.
var allNodes = netip.MustParseAddr("ff02::1")

// UnsolicitedNA returns an unsolicited neighbour advertisement for ip from
// mac to all nodes (ff02::1): the Override flag set, so that neighbours
// holding another link-layer address for ip take mac (RFC 4861 7.2.6).
func UnsolicitedNA(mac net.HardwareAddr, ip netip.Addr) []byte {
	icmp := make([]byte, 0, 32)
	icmp = append(icmp, 136, 0, 0, 0)  // advertisement, code 0, checksum below
	icmp = append(icmp, 0x20, 0, 0, 0) // Override
	t := ip.As16()
	icmp = append(icmp, t[:]...) // target
	icmp = append(icmp, 2, 1)    // target link-layer address, 8 bytes
	icmp = append(icmp, mac...)
	return icmpv6(multicastMAC(allNodes), mac, ip, allNodes, icmp)
}

// RouterLifetime is the lifetime RouterAdvertisement announces, the most
// RFC 4861 allows (6.2.1: at most 9000 s).
const RouterLifetime = 9000

// RouterAdvertisement returns an unsolicited router advertisement from a
// router at link-local address lla and MAC mac, sent to dstMAC (one host)
// and all nodes: a default router for RouterLifetime, with its source
// link-layer address, and no prefix (addresses are not its to give).
func RouterAdvertisement(mac net.HardwareAddr, lla netip.Addr, dstMAC net.HardwareAddr) []byte {
	icmp := make([]byte, 0, 24)
	icmp = append(icmp, 134, 0, 0, 0) // router advertisement, code 0, checksum below
	icmp = append(icmp, 64, 0)        // current hop limit, no flags
	icmp = append(icmp, RouterLifetime>>8, RouterLifetime&0xff)
	icmp = append(icmp, 0, 0, 0, 0, 0, 0, 0, 0) // reachable time, retransmission timer: unspecified
	icmp = append(icmp, 1, 1)                   // source link-layer address, 8 bytes
	icmp = append(icmp, mac...)
	return icmpv6(dstMAC, mac, lla, allNodes, icmp)
}

// LinkLocal is the IPv6 link-local address EUI-64 makes of mac
// (fe80::/64 with the MAC's universal/local bit flipped and ff:fe in the
// middle), as OVN gives router ports.
func LinkLocal(mac net.HardwareAddr) netip.Addr {
	var a [16]byte
	a[0], a[1] = 0xfe, 0x80
	a[8], a[9], a[10] = mac[0]^0x02, mac[1], mac[2]
	a[11], a[12] = 0xff, 0xfe
	a[13], a[14], a[15] = mac[3], mac[4], mac[5]
	return netip.AddrFrom16(a)
}

// multicastMAC is the Ethernet address of an IPv6 multicast address.
func multicastMAC(a netip.Addr) net.HardwareAddr {
	b := a.As16()
	return net.HardwareAddr{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

// icmpv6 wraps an ICMPv6 message (its checksum still zero) in IPv6 (hop
// limit 255, as neighbour discovery requires) and Ethernet, filling the
// checksum over the pseudo-header.
func icmpv6(dstMAC, srcMAC net.HardwareAddr, src, dst netip.Addr, icmp []byte) []byte {
	s, d := src.As16(), dst.As16()
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(s[:])
	add(d[:])
	add([]byte{0, 0, byte(len(icmp) >> 8), byte(len(icmp)), 0, 0, 0, 58})
	add(icmp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	c := ^uint16(sum)
	icmp[2], icmp[3] = byte(c>>8), byte(c)
	b := make([]byte, 0, 14+40+len(icmp))
	b = append(b, dstMAC...)
	b = append(b, srcMAC...)
	b = append(b, 0x86, 0xdd)
	b = append(b, 0x60, 0, 0, 0, byte(len(icmp)>>8), byte(len(icmp)), 58, 255) // version 6, length, ICMPv6, hop limit 255
	b = append(b, s[:]...)
	b = append(b, d[:]...)
	return append(b, icmp...)
}
