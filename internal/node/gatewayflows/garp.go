package gatewayflows

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Gratuitous ARP (IPv4) and unsolicited neighbour advertisements (IPv6)
// for the egress IPs the node takes over.
// The outside's neighbour caches still point an egress IP that moved at
// the node that held it: without an announcement, replies to the new
// holder's connections go to the old node until those entries expire.

// garp returns a broadcast gratuitous ARP request for ip from mac: sender
// and target address both ip, padded to Ethernet's 60-byte minimum.
func garp(mac net.HardwareAddr, ip netip.Addr) []byte {
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

// unsolicitedNA returns an unsolicited neighbour advertisement for ip from
// mac to all nodes (ff02::1): the Override flag set, so that neighbours
// holding another link-layer address for ip take mac (RFC 4861 7.2.6).
func unsolicitedNA(mac net.HardwareAddr, ip netip.Addr) []byte {
	all := netip.MustParseAddr("ff02::1")
	icmp := make([]byte, 0, 32)
	icmp = append(icmp, 136, 0, 0, 0)  // advertisement, code 0, checksum below
	icmp = append(icmp, 0x20, 0, 0, 0) // Override
	t := ip.As16()
	icmp = append(icmp, t[:]...) // target
	icmp = append(icmp, 2, 1)    // target link-layer address, 8 bytes
	icmp = append(icmp, mac...)
	src, dst := ip.As16(), all.As16()
	// The checksum covers the pseudo-header: addresses, length, next header.
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	add(src[:])
	add(dst[:])
	add([]byte{0, 0, 0, byte(len(icmp)), 0, 0, 0, 58})
	add(icmp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	c := ^uint16(sum)
	icmp[2], icmp[3] = byte(c>>8), byte(c)
	b := make([]byte, 0, 14+40+len(icmp))
	b = append(b, 0x33, 0x33, 0, 0, 0, 1)
	b = append(b, mac...)
	b = append(b, 0x86, 0xdd)
	b = append(b, 0x60, 0, 0, 0, 0, byte(len(icmp)), 58, 255) // version 6, length, ICMPv6, hop limit 255
	b = append(b, src[:]...)
	b = append(b, dst[:]...)
	return append(b, icmp...)
}

// Announcements is how many copies of a take-over's announcement go out,
// AnnounceInterval apart: one lost frame does not leave the outside
// pointing at the node that left.
const (
	Announcements    = 3
	AnnounceInterval = 300 * time.Millisecond
)

// announce sends a gratuitous ARP (IPv4) or an unsolicited neighbour
// advertisement (IPv6) out of the bridge's uplink port for each egress IP
// the node holds and had not sent Announcements of yet, and forgets the
// ones it no longer holds (announced again if they come back). pending
// says copies are still due (the caller comes back after
// AnnounceInterval).
func (r *GatewayReconciler) announce(ctx context.Context, macText string, physical int, ips []netip.Addr) (pending bool, err error) {
	mac, err := net.ParseMAC(macText)
	if err != nil {
		return false, fmt.Errorf("gateway MAC %q: %w", macText, err)
	}
	now := map[netip.Addr]int{}
	var errs []string
	for _, ip := range ips {
		sent := r.announced[ip]
		now[ip] = sent
		if sent >= Announcements {
			continue
		}
		var pkt []byte
		if ip.Is4() {
			pkt = garp(mac, ip)
		} else {
			pkt = unsolicitedNA(mac, ip)
		}
		out := fmt.Sprintf("in_port=controller,packet=%s,actions=output:%d", hex.EncodeToString(pkt), physical)
		if b, err := r.ofctl("packet-out", r.mgmt(), out).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", ip, err, strings.TrimSpace(string(b))))
			continue // again at the next reconcile
		}
		now[ip] = sent + 1
		if sent == 0 {
			ctrl.LoggerFrom(ctx).Info("egress IP announced", "address", ip, "bridge", r.bridge().Bridge)
		}
		pending = pending || now[ip] < Announcements
	}
	r.announced = now
	if len(errs) > 0 {
		return pending, fmt.Errorf("announcing egress IPs on %s: %s", r.bridge().Bridge, strings.Join(errs, "; "))
	}
	return pending, nil
}
