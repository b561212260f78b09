package gatewayflows

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Gratuitous ARP for the egress IPs the node takes over (IPv4; IPv6
// egress IPs have no neighbour answers on the bridge yet, docs/egressip.md).
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

// announce sends a gratuitous ARP out of the bridge's uplink port for each
// IPv4 egress IP the node holds and had not announced yet, and forgets the
// ones it no longer holds (announced again if they come back).
func (r *GatewayReconciler) announce(ctx context.Context, macText string, physical int, ips []netip.Addr) error {
	mac, err := net.ParseMAC(macText)
	if err != nil {
		return fmt.Errorf("gateway MAC %q: %w", macText, err)
	}
	now := map[netip.Addr]bool{}
	var errs []string
	for _, ip := range ips {
		if !ip.Is4() {
			continue
		}
		now[ip] = true
		if r.announced[ip] {
			continue
		}
		out := fmt.Sprintf("in_port=controller,packet=%s,actions=output:%d", hex.EncodeToString(garp(mac, ip)), physical)
		if b, err := r.ofctl("packet-out", r.mgmt(), out).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", ip, err, strings.TrimSpace(string(b))))
			now[ip] = false // again at the next reconcile
			continue
		}
		ctrl.LoggerFrom(ctx).Info("egress IP announced (gratuitous ARP)", "address", ip, "bridge", r.bridge().Bridge)
	}
	r.announced = now
	if len(errs) > 0 {
		return fmt.Errorf("announcing egress IPs on %s: %s", r.bridge().Bridge, strings.Join(errs, "; "))
	}
	return nil
}
