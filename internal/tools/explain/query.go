// Package explain answers "does a packet from this pod reach that pod or
// address, and if not, why": it builds the packet the pod would send, traces
// it with ovn-trace in the source's zone, follows it through a remote port
// (transit switch or router, or a Layer2 switch's port on another node) into
// the zone that owns that port, and names what delivered or dropped it — the
// NetworkPolicy, namespace default deny or network isolation rule behind the
// Northbound row that made the decision (found through the logical flow's
// stage hint), or northd's own flow when no row of ours is involved.
//
// It reads pods and nodes from the API server and each zone's Northbound and
// Southbound databases; Explainer.Zones says where those are (the sandbox
// records them; on a cluster they are the nodes' zone databases).
package explain

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Query is what to explain.
type Query struct {
	// From is the source pod, "<namespace>/<name>".
	From string
	// To is a pod ("<namespace>/<name>") or an address, with an optional
	// destination port: "shop/echo-0:8080", "10.96.0.10:53",
	// "[fd00::5]:80", "8.8.8.8".
	To string
	// Attachment picks the source pod's attachment by its key ("default",
	// "<namespace>/<nad>"); empty means the pod's primary network.
	Attachment string
	// Protocol is "tcp", "udp" or "icmp" (echo request); empty means tcp
	// when a port is given, icmp otherwise.
	Protocol string
}

// target is a parsed Query.To.
type target struct {
	pod  string // "<namespace>/<name>", or ""
	addr netip.Addr
	port int
}

// parseTarget reads Query.To.
func parseTarget(s string) (target, error) {
	if s == "" {
		return target{}, fmt.Errorf("no destination: give a pod (<namespace>/<name>) or an address, with an optional :port")
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return target{addr: a}, nil
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		if ap.Port() == 0 {
			return target{}, fmt.Errorf("destination %q: port 0", s)
		}
		return target{addr: ap.Addr(), port: int(ap.Port())}, nil
	}
	ref, portStr, hasPort := strings.Cut(s, ":")
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return target{}, fmt.Errorf("destination %q is neither an address nor <namespace>/<pod>, each with an optional :port", s)
	}
	t := target{pod: ref}
	if hasPort {
		p, err := strconv.Atoi(portStr)
		if err != nil || p < 1 || p > 65535 {
			return target{}, fmt.Errorf("destination %q: port %q is not a number from 1 to 65535", s, portStr)
		}
		t.port = p
	}
	return t, nil
}

// protocol returns the protocol to trace: the query's, or tcp with a port
// and icmp without.
func protocol(q string, port int) (string, error) {
	switch q {
	case "":
		if port != 0 {
			return "tcp", nil
		}
		return "icmp", nil
	case "tcp", "udp":
		return q, nil
	case "icmp":
		if port != 0 {
			return "", fmt.Errorf("protocol icmp takes no destination port")
		}
		return q, nil
	}
	return "", fmt.Errorf("protocol %q: want tcp, udp or icmp", q)
}

// splitRef splits "<namespace>/<name>".
func splitRef(ref string) (string, string, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%q is not <namespace>/<pod>", ref)
	}
	return ns, name, nil
}
