package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// Several uplinks (`sandbox up --uplinks K`): the outside world has K
// routers on the nodes' underlay segment, 192.168.100.1 to 192.168.100.K,
// and every node publishes all of them as next hops, so every network's
// gateway router has K ECMP default routes. Router 1 is ExternalNetns, which
// also holds the servers; router k (k ≥ 2) is a namespace of its own,
// linked to ExternalNetns by 203.0.113.(4k)/30 and forwarding between the
// two. ExternalNetns sends what it answers to the nodes straight out of its
// own underlay port, and through router K..2 only when that port is down.
//
// With K ≥ 2 each router runs FRR's BFD daemon (bfdd, chrooted in the OVN
// root) with a single-hop session to every node, and the node agents turn
// BFD on for their node (--default-route-bfd), so a router that dies is
// withdrawn from every gateway router's ECMP routes.
//
// Each router counts, with nftables, the packets it receives from the
// nodes toward the outside world (UplinkCounters).

// MaxUplinks is the most routers a sandbox runs.
const MaxUplinks = 4

// RouterIP is the k-th (from 1) outside router's address on the underlay.
func RouterIP(k int) string { return fmt.Sprintf("192.168.100.%d", k) }

// UplinkClientIP is an outside address whose packets to the nodes go through
// router k (policy routing in ExternalNetns): a client bound to it enters
// the cluster through that uplink.
func UplinkClientIP(k int) string { return fmt.Sprintf("198.51.100.%d", 100+k) }

// RouterNetns is the network namespace of the k-th outside router.
func (l Layout) RouterNetns(k int) string {
	if k == 1 {
		return l.ExternalNetns()
	}
	return fmt.Sprintf("%sexternal%d", l.prefix(), k)
}

// routerLink returns the k-th router's (k ≥ 2) link to ExternalNetns: the
// outside world's address and the router's.
func routerLink(k int) (outside, router string) {
	return fmt.Sprintf("203.0.113.%d", 4*k+1), fmt.Sprintf("203.0.113.%d", 4*k+2)
}

// bfddRunDir is where the k-th router's bfdd keeps its configuration, PID
// file and vty socket, as the chrooted daemon sees it; on the machine it is
// under deps.OVNRoot(). The netns name in it is unique to the sandbox (and
// lets cleanup find the daemon).
func (l Layout) bfddRunDir(k int) string { return "/run/ovn-udn/" + l.RouterNetns(k) }

// bfddRunPrefix starts every router's bfddRunDir (router 1's netns name
// is a prefix of the others'): cleanup finds the daemons and their files by
// it.
func (l Layout) bfddRunPrefix() string { return l.bfddRunDir(1) }

// startRouters brings up routers 2..K and, with K ≥ 2, the BFD daemons and
// every router's packet counters. Router 1 (startExternal) must exist.
func (s *supervisor) startRouters() error {
	ext, ul := s.l.ExternalNetns(), s.l.UnderlayNetns()
	for k := 2; k <= s.opts.Uplinks; k++ {
		ns := s.l.RouterNetns(k)
		outside, router := routerLink(k)
		table := strconv.Itoa(100 + k)
		if err := ipCmds(
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", fmt.Sprintf("ulr%d", k), "netns", ul, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", ul, "link", "set", fmt.Sprintf("ulr%d", k), "master", "br0", "up"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "addr", "add", RouterIP(k) + "/24", "dev", "eth0"},
			[]string{"link", "add", fmt.Sprintf("r%d", k), "netns", ext, "type", "veth", "peer", "name", "world", "netns", ns},
			[]string{"-n", ext, "addr", "add", outside + "/30", "dev", fmt.Sprintf("r%d", k)},
			[]string{"-n", ext, "link", "set", fmt.Sprintf("r%d", k), "up"},
			[]string{"-n", ns, "addr", "add", router + "/30", "dev", "world"},
			[]string{"-n", ns, "link", "set", "world", "up"},
			[]string{"-n", ns, "route", "add", "198.51.100.0/24", "via", outside},
			// The outside world's way back when its own underlay port is down.
			[]string{"-n", ext, "route", "add", "192.168.100.0/24", "via", router, "metric", strconv.Itoa(100 + k)},
			// Clients entering through router k.
			[]string{"-n", ext, "addr", "add", UplinkClientIP(k) + "/32", "dev", "lo"},
			[]string{"-n", ext, "rule", "add", "from", UplinkClientIP(k), "lookup", table},
			[]string{"-n", ext, "route", "add", "192.168.100.0/24", "via", router, "table", table},
		); err != nil {
			return err
		}
		if err := netnsShell(ns, "echo 1 >/proc/sys/net/ipv4/ip_forward"); err != nil {
			return err
		}
		for _, dev := range [][2]string{{ns, "eth0"}, {ns, "world"}, {ext, fmt.Sprintf("r%d", k)}} {
			if err := checksumsOff(dev[0], dev[1]); err != nil {
				return err
			}
		}
	}
	if s.opts.Uplinks < 2 {
		return nil
	}
	// Router 1's own client address needs no policy: it is on the underlay.
	if err := ipCmds([]string{"-n", ext, "addr", "add", UplinkClientIP(1) + "/32", "dev", "lo"}); err != nil {
		return err
	}
	if err := s.symmetricOutside(); err != nil {
		return err
	}
	for k := 1; k <= s.opts.Uplinks; k++ {
		if err := countUplink(s.l.RouterNetns(k)); err != nil {
			return err
		}
		if err := s.startBFDD(k); err != nil {
			return err
		}
	}
	return nil
}

// symmetricOutside makes the outside world answer a connection through the
// router it came in by, as each uplink's upstream would (a connection that
// left through router 2 and came back through router 1 would be pinned to
// router 1 by the gateway router's ecmp_symmetric_reply): connections
// arriving from router k are marked k, and marked answers are routed by
// table 100+k, through router k.
func (s *supervisor) symmetricOutside() error {
	ext := s.l.ExternalNetns()
	var rules strings.Builder
	rules.WriteString("table inet " + worldTable + " {\n\tchain prerouting {\n\t\ttype filter hook prerouting priority -150; policy accept;\n")
	for k := 2; k <= s.opts.Uplinks; k++ {
		fmt.Fprintf(&rules, "\t\tct state new iifname \"r%d\" ct mark set %d\n", k, k)
	}
	rules.WriteString("\t}\n\tchain output {\n\t\ttype route hook output priority -150; policy accept;\n\t\tct mark != 0 meta mark set ct mark\n\t}\n}\n")
	if err := nftApply(ext, rules.String()); err != nil {
		return err
	}
	for k := 2; k <= s.opts.Uplinks; k++ {
		if err := ipCmds([]string{"-n", ext, "rule", "add", "fwmark", strconv.Itoa(k), "lookup", strconv.Itoa(100 + k)}); err != nil {
			return err
		}
	}
	return nil
}

// worldTable is the nftables table of ExternalNetns's symmetric answers.
const worldTable = "ovnudn_world"

// nextHops are the routers the nodes route through, in order.
func (o Options) nextHops() []string {
	var out []string
	for k := 1; k <= o.Uplinks; k++ {
		out = append(out, RouterIP(k))
	}
	return out
}

// startBFDD runs FRR's bfdd in the k-th router with a single-hop session to
// every node, at the sandbox's BFD interval (FRR's 300 ms by default).
func (s *supervisor) startBFDD(k int) error {
	root := deps.OVNRoot()
	run := s.l.bfddRunDir(k)
	host := filepath.Join(root, run)
	if err := os.MkdirAll(host, 0o755); err != nil {
		return err
	}
	uid, gid, err := frrUser(root)
	if err != nil {
		return err
	}
	if err := os.Chown(host, uid, gid); err != nil {
		return err
	}
	ms := 300
	if s.opts.BFDInterval > 0 {
		ms = int(s.opts.BFDInterval / time.Millisecond)
	}
	var conf strings.Builder
	conf.WriteString("bfd\n")
	for i := 1; i <= s.opts.Nodes; i++ {
		fmt.Fprintf(&conf, " peer %s\n  receive-interval %d\n  transmit-interval %d\n exit\n", nodeAddr(NodeName(i)), ms, ms)
	}
	conf.WriteString("exit\n")
	if err := os.WriteFile(filepath.Join(host, "bfdd.conf"), []byte(conf.String()), 0o644); err != nil {
		return err
	}
	s.addComponent(&component{name: fmt.Sprintf("bfdd/router%d", k), path: deps.OVNProgram("ip"), args: []string{
		"netns", "exec", s.l.RouterNetns(k), "chroot", root, "/usr/lib/frr/bfdd",
		"-f", run + "/bfdd.conf", "--vty_socket", run, "-i", run + "/bfdd.pid", "-z", run + "/zserv.api",
		"-P", "0", "--log", "stdout"}})
	return nil
}

// frrUser is the frr user's and group's IDs in the root (bfdd drops its
// privileges to them; its files must be theirs).
func frrUser(root string) (uid, gid int, err error) {
	f, err := os.Open(filepath.Join(root, "etc", "passwd"))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) > 3 && fields[0] == "frr" {
			uid, err1 := strconv.Atoi(fields[2])
			gid, err2 := strconv.Atoi(fields[3])
			if err1 == nil && err2 == nil {
				return uid, gid, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("no frr user in %s/etc/passwd: run make deps (it installs FRR into the OVN root)", root)
}

// BFDPeer is one BFD session as a router's bfdd reports it.
type BFDPeer struct {
	Peer   string `json:"peer"`
	Status string `json:"status"`
}

// RouterBFD returns the BFD sessions of the k-th router's bfdd.
func RouterBFD(ctx context.Context, dir string, k int) ([]BFDPeer, error) {
	l, err := NewLayout(dir)
	if err != nil {
		return nil, err
	}
	run := l.bfddRunDir(k)
	out, err := Command(ctx, l.RouterNetns(k), []string{"chroot", deps.OVNRoot(), "/usr/bin/vtysh", "--vty_socket", run,
		"-c", "show bfd peers json"}).Output()
	if err != nil {
		return nil, fmt.Errorf("vtysh in router %d: %w", k, err)
	}
	var peers []BFDPeer
	if err := json.Unmarshal(out, &peers); err != nil {
		return nil, fmt.Errorf("vtysh in router %d: %w: %s", k, err, out)
	}
	return peers, nil
}

// UplinkCount is what one router received from the nodes toward the
// outside: packets, TCP SYNs (connections the cluster opened) and TCP
// SYN-ACKs (replies to connections the outside opened).
type UplinkCount struct {
	Packets, SYN, SYNACK uint64
}

// countTable is the nftables table of a router's counters.
const countTable = "ovnudn"

// countUplink installs the router's counters.
func countUplink(ns string) error {
	rules := `table inet ` + countTable + ` {
	counter to_outside {}
	counter syn_out {}
	counter synack_out {}
	chain prerouting {
		type filter hook prerouting priority -300; policy accept;
		iifname "eth0" ip saddr 192.168.100.0/24 ip daddr 198.51.100.0/24 counter name "to_outside"
		iifname "eth0" ip saddr 192.168.100.0/24 ip daddr 198.51.100.0/24 tcp flags & (syn | ack) == syn counter name "syn_out"
		iifname "eth0" ip saddr 192.168.100.0/24 ip daddr 198.51.100.0/24 tcp flags & (syn | ack) == syn | ack counter name "synack_out"
	}
}
`
	return nftApply(ns, rules)
}

// nftApply loads an nftables ruleset into a network namespace.
func nftApply(ns, rules string) error {
	cmd := Command(context.Background(), ns, []string{deps.OVNProgram("nft"), "-f", "-"})
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %v: %s", ns, err, out)
	}
	return nil
}

// UplinkCounters returns each router's counts (index 0 is router 1).
func UplinkCounters(ctx context.Context, dir string, uplinks int) ([]UplinkCount, error) {
	l, err := NewLayout(dir)
	if err != nil {
		return nil, err
	}
	out := make([]UplinkCount, uplinks)
	for k := 1; k <= uplinks; k++ {
		b, err := Command(ctx, l.RouterNetns(k), []string{deps.OVNProgram("nft"), "-j", "list", "counters", "table", "inet", countTable}).Output()
		if err != nil {
			return nil, fmt.Errorf("nft in router %d: %w", k, err)
		}
		var doc struct {
			Nftables []struct {
				Counter *struct {
					Name    string `json:"name"`
					Packets uint64 `json:"packets"`
				} `json:"counter"`
			} `json:"nftables"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("nft in router %d: %w", k, err)
		}
		for _, e := range doc.Nftables {
			if e.Counter == nil {
				continue
			}
			switch e.Counter.Name {
			case "to_outside":
				out[k-1].Packets = e.Counter.Packets
			case "syn_out":
				out[k-1].SYN = e.Counter.Packets
			case "synack_out":
				out[k-1].SYNACK = e.Counter.Packets
			}
		}
	}
	return out, nil
}

// SetUplink takes the k-th router's underlay port down (a dead router, as
// far as the nodes can tell) or brings it back up.
func SetUplink(dir string, k int, up bool) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	state := "down"
	if up {
		state = "up"
	}
	return ipCmds([]string{"-n", l.RouterNetns(k), "link", "set", "eth0", state})
}

// netnsShell runs a shell command in a network namespace.
func netnsShell(ns, script string) error {
	if out, err := deps.OVNCommand("ip", "netns", "exec", ns, "sh", "-c", script).CombinedOutput(); err != nil {
		return fmt.Errorf("%s in %s: %v: %s", script, ns, err, out)
	}
	return nil
}

// checksumsOff makes a veth hand over complete checksums (see startExternal).
func checksumsOff(ns, dev string) error {
	if out, err := deps.OVNCommand("ip", "netns", "exec", ns, deps.OVNProgram("ethtool"), "-K", dev, "tx", "off").CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool -K %s tx off in %s: %v: %s", dev, ns, err, out)
	}
	return nil
}
