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
	"github.com/ovn-udn/ovn-udn/internal/proc"
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
// With --uplink-bridges N, the last N routers are each on an underlay
// segment of their own instead, 192.168.(100+k).0/24 (router k at .1, node
// i at .(10+i)), which every node reaches through a bridge of its own,
// br-ex<k> on eth<k>, mapped to physical network physnet<k> and given to
// the node agent as an --extra-uplink: every gateway router then has an
// external port on that bridge too, and ECMP spreads over next hops on
// both kinds of uplink.
//
// Each router counts, with nftables, the packets it receives from the
// nodes toward the outside world (UplinkCounters).

// MaxUplinks is the most routers a sandbox runs.
const MaxUplinks = 4

// underlayRouterIP is the k-th (from 1) outside router's address when it
// is on the nodes' underlay (a next hop on br-ex); Options.routerIP gives
// any router's, State.Routers every running one's.
func underlayRouterIP(k int) string { return fmt.Sprintf("192.168.100.%d", k) }

// bridgeUplink is a router on an underlay segment of its own (k is its
// number, from 1).
type bridgeUplink struct{ k int }

// bridgeUplinks are the routers on segments of their own: the last
// UplinkBridges.
func (o Options) bridgeUplinks() []bridgeUplink {
	var out []bridgeUplink
	for k := o.Uplinks - o.UplinkBridges + 1; k <= o.Uplinks; k++ {
		out = append(out, bridgeUplink{k})
	}
	return out
}

// ownSegment reports whether router k is on a segment of its own.
func (o Options) ownSegment(k int) bool { return k > o.Uplinks-o.UplinkBridges }

// routerIP is router k's address on the segment it shares with the nodes.
func (o Options) routerIP(k int) string {
	if o.ownSegment(k) {
		return bridgeUplink{k}.routerIP()
	}
	return underlayRouterIP(k)
}

// segment is the router's underlay subnet.
func (u bridgeUplink) segment() string { return fmt.Sprintf("192.168.%d.0/24", 100+u.k) }

func (u bridgeUplink) routerIP() string { return fmt.Sprintf("192.168.%d.1", 100+u.k) }

// nodeIP is node i's address on the segment, with its prefix length;
// nodeAddr the address alone.
func (u bridgeUplink) nodeIP(i int) string { return u.nodeAddr(i) + "/24" }

func (u bridgeUplink) nodeAddr(i int) string { return fmt.Sprintf("192.168.%d.%d", 100+u.k, 10+i) }

// mac is node i's bridge MAC on the segment (GatewayMAC's form).
func (u bridgeUplink) mac(i int) string { return fmt.Sprintf("02:00:c0:a8:%02x:%02x", 100+u.k, 10+i) }

func (u bridgeUplink) bridge() string  { return fmt.Sprintf("br-ex%d", u.k) }
func (u bridgeUplink) iface() string   { return fmt.Sprintf("eth%d", u.k) }
func (u bridgeUplink) physnet() string { return fmt.Sprintf("physnet%d", u.k) }

// underlayBridge is the segment's Linux bridge in UnderlayNetns.
func (u bridgeUplink) underlayBridge() string { return fmt.Sprintf("br%d", u.k) }

// agentFlag is node i's --extra-uplink for the router.
func (u bridgeUplink) agentFlag(i int) string {
	return fmt.Sprintf("bridge=%s,interface=%s,physical-network=%s,ip=%s,mac=%s,next-hop=%s",
		u.bridge(), u.iface(), u.physnet(), u.nodeIP(i), u.mac(i), u.routerIP())
}

// nodeUplinkBridge gives node i its link to the router's segment and the
// bridge on it, holding the node's address there.
func (s *supervisor) nodeUplinkBridge(i int, u bridgeUplink) error {
	ns, ul := s.l.NodeNetns(NodeName(i)), s.l.UnderlayNetns()
	link := fmt.Sprintf("%su%d", underlayLink(i), u.k)
	if err := ipCmds(
		[]string{"link", "add", link, "netns", ul, "type", "veth", "peer", "name", u.iface(), "netns", ns},
		[]string{"-n", ul, "link", "set", link, "master", u.underlayBridge(), "up"},
		[]string{"-n", ns, "link", "set", u.iface(), "up"},
	); err != nil {
		return err
	}
	if err := uplinkPortQuiet(ns, u.iface()); err != nil {
		return err
	}
	n := s.nodes[NodeName(i)]
	if _, err := n.VSCtl("--may-exist", "add-br", u.bridge(), "--", "set", "Bridge", u.bridge(), "datapath_type=netdev",
		"other_config:hwaddr="+u.mac(i), "--", "--may-exist", "add-port", u.bridge(), u.iface()); err != nil {
		return err
	}
	if err := proc.WaitFor(10*time.Second, 20*time.Millisecond, func() (bool, error) {
		err := ipCmds([]string{"-n", ns, "link", "show", u.bridge()})
		return err == nil, err
	}); err != nil {
		return err
	}
	return ipCmds(
		[]string{"-n", ns, "addr", "add", u.nodeIP(i), "dev", u.bridge()},
		[]string{"-n", ns, "link", "set", u.bridge(), "up"},
	)
}

// UplinkNodeAddr is node i's address on uplink k's segment (k ≥ 2).
func UplinkNodeAddr(k, i int) string { return (bridgeUplink{k}).nodeAddr(i) }

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
	for k := 1; k <= s.opts.Uplinks; k++ {
		s.state.Routers = append(s.state.Routers, s.opts.routerIP(k))
	}
	for k := 2; k <= s.opts.Uplinks; k++ {
		ns := s.l.RouterNetns(k)
		outside, router := routerLink(k)
		table := strconv.Itoa(100 + k)
		// The router's segment: the nodes' underlay, or one of its own.
		bridge, segment := "br0", "192.168.100.0/24"
		var cmds [][]string
		if s.opts.ownSegment(k) {
			u := bridgeUplink{k}
			bridge, segment = u.underlayBridge(), u.segment()
			cmds = append(cmds, []string{"-n", ul, "link", "add", bridge, "type", "bridge"}, []string{"-n", ul, "link", "set", bridge, "up"})
		}
		cmds = append(cmds,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", fmt.Sprintf("ulr%d", k), "netns", ul, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", ul, "link", "set", fmt.Sprintf("ulr%d", k), "master", bridge, "up"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "addr", "add", s.opts.routerIP(k) + "/24", "dev", "eth0"},
			[]string{"link", "add", fmt.Sprintf("r%d", k), "netns", ext, "type", "veth", "peer", "name", "world", "netns", ns},
			[]string{"-n", ext, "addr", "add", outside + "/30", "dev", fmt.Sprintf("r%d", k)},
			[]string{"-n", ext, "link", "set", fmt.Sprintf("r%d", k), "up"},
			[]string{"-n", ns, "addr", "add", router + "/30", "dev", "world"},
			[]string{"-n", ns, "link", "set", "world", "up"},
			[]string{"-n", ns, "route", "add", "198.51.100.0/24", "via", outside},
			// Clients entering through router k.
			[]string{"-n", ext, "addr", "add", UplinkClientIP(k) + "/32", "dev", "lo"},
			[]string{"-n", ext, "rule", "add", "from", UplinkClientIP(k), "lookup", table},
			[]string{"-n", ext, "route", "add", segment, "via", router, "table", table},
		)
		if s.opts.ownSegment(k) {
			// The outside world reaches the segment through its router only.
			cmds = append(cmds, []string{"-n", ext, "route", "add", segment, "via", router})
		} else {
			// The outside world's way back when its own underlay port is down.
			cmds = append(cmds, []string{"-n", ext, "route", "add", segment, "via", router, "metric", strconv.Itoa(100 + k)})
		}
		if err := ipCmds(cmds...); err != nil {
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

// nextHops are the routers on the nodes' underlay, the next hops on br-ex,
// in order.
func (o Options) nextHops() []string {
	var out []string
	for k := 1; k <= o.Uplinks; k++ {
		if !o.ownSegment(k) {
			out = append(out, underlayRouterIP(k))
		}
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
		peer := NodeAddr(NodeName(i))
		if s.opts.ownSegment(k) {
			peer = bridgeUplink{k}.nodeAddr(i)
		}
		fmt.Fprintf(&conf, " peer %s\n  receive-interval %d\n  transmit-interval %d\n exit\n", peer, ms, ms)
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
// SYN-ACKs (replies to connections the outside opened); and what it passed
// the other way: SYN-ACKs the outside answered the cluster's connections
// with, as they came in (SYNACKIn) and as they left toward the nodes
// (SYNACKToNodes: a reply that comes in but does not leave is stuck in the
// router, e.g. on its neighbour resolution).
type UplinkCount struct {
	Packets, SYN, SYNACK    uint64
	SYNACKIn, SYNACKToNodes uint64
}

// countTable is the nftables table of a router's counters.
const countTable = "ovnudn"

// countUplink installs the router's counters.
func countUplink(ns string) error {
	rules := `table inet ` + countTable + ` {
	counter to_outside {}
	counter syn_out {}
	counter synack_out {}
	counter synack_in {}
	counter synack_to_nodes {}
	chain prerouting {
		type filter hook prerouting priority -300; policy accept;
		iifname "eth0" ip saddr 192.168.0.0/16 ip daddr 198.51.100.0/24 counter name "to_outside"
		iifname "eth0" ip saddr 192.168.0.0/16 ip daddr 198.51.100.0/24 tcp flags & (syn | ack) == syn counter name "syn_out"
		iifname "eth0" ip saddr 192.168.0.0/16 ip daddr 198.51.100.0/24 tcp flags & (syn | ack) == syn | ack counter name "synack_out"
		iifname "world" ip saddr 198.51.100.0/24 ip daddr 192.168.0.0/16 tcp flags & (syn | ack) == syn | ack counter name "synack_in"
	}
	chain postrouting {
		type filter hook postrouting priority 300; policy accept;
		oifname "eth0" ip saddr 198.51.100.0/24 ip daddr 192.168.0.0/16 tcp flags & (syn | ack) == syn | ack counter name "synack_to_nodes"
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
			case "synack_in":
				out[k-1].SYNACKIn = e.Counter.Packets
			case "synack_to_nodes":
				out[k-1].SYNACKToNodes = e.Counter.Packets
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

// uplinkPortQuiet keeps the node's kernel from answering on a bridge's
// uplink port (eth0, eth<k>). The userspace datapath reads the veth with a
// packet socket, so the kernel also sees every frame on it and, by default,
// answers ARP for the node's address with the veth's own MAC, racing the
// bridge's answer: a router that takes the veth's MAC sends the node's
// traffic where the bridge's flows pass it on but the gateway routers drop
// it (not their MAC), and the kernel resets TCP it does not know, until
// the router's neighbour entry expires (~30 s: seen as a BFD session that
// stays down after its router came back). A NIC enslaved to a kernel
// datapath bridge never reaches the host stack; this makes the veth as
// quiet: no ARP answers, no IPv6 (no neighbour discovery).
func uplinkPortQuiet(ns, dev string) error {
	return netnsShell(ns, fmt.Sprintf("echo 8 >/proc/sys/net/ipv4/conf/%[1]s/arp_ignore && echo 1 >/proc/sys/net/ipv6/conf/%[1]s/disable_ipv6", dev))
}
