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

	"github.com/ovn-udn/ovn-udn/internal/node/announce"
)

// Gratuitous ARP (IPv4) and unsolicited neighbour advertisements (IPv6,
// package announce builds both) for the egress IPs the node takes over.
// The outside's neighbour caches still point an egress IP that moved at
// the node that held it: without an announcement, replies to the new
// holder's connections go to the old node until those entries expire.

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
// AnnounceInterval). began is when the reconcile began (logged with the
// first announcement: how long the flows before it took).
func (r *GatewayReconciler) announce(ctx context.Context, began time.Time, macText string, physical int, ips []netip.Addr) (pending bool, err error) {
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
			pkt = announce.GARP(mac, ip)
		} else {
			pkt = announce.UnsolicitedNA(mac, ip)
		}
		out := fmt.Sprintf("in_port=controller,packet=%s,actions=output:%d", hex.EncodeToString(pkt), physical)
		if b, err := r.ofctl("packet-out", r.mgmt(), out).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", ip, err, strings.TrimSpace(string(b))))
			continue // again at the next reconcile
		}
		now[ip] = sent + 1
		if sent == 0 {
			ctrl.LoggerFrom(ctx).Info("egress IP announced", "address", ip, "bridge", r.bridge().Bridge,
				"reconcileMillis", time.Since(began).Milliseconds())
		}
		pending = pending || now[ip] < Announcements
	}
	r.announced = now
	if len(errs) > 0 {
		return pending, fmt.Errorf("announcing egress IPs on %s: %s", r.bridge().Bridge, strings.Join(errs, "; "))
	}
	return pending, nil
}
