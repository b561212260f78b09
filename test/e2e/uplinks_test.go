package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// uplinkBFDInterval is the BFD interval of TestUplinks' sandbox: FRR's
// default on the routers, and the same on the gateway routers (OVN's own
// default is 1 s); OVN_UDN_E2E_BFD_INTERVAL (a duration) measures failover
// with others (docs/gateway.md).
func uplinkBFDInterval(t *testing.T) time.Duration {
	v := os.Getenv("OVN_UDN_E2E_BFD_INTERVAL")
	if v == "" {
		return 300 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("OVN_UDN_E2E_BFD_INTERVAL=%q: %v", v, err)
	}
	return d
}

// uplinkRouters is how many outside routers TestUplinks' node has: routers
// 1 and 2 are next hops on its br-ex, router 3 is on a segment of its own
// behind a second bridge (br-ex3), so both forms of several uplinks are
// exercised at once.
const uplinkRouters = 3

// uplinkSandbox is a one-node sandbox with three outside routers running
// BFD (sandbox up --nodes 1 --uplinks 3 --uplink-bridges 1), with
// testdata/uplinks.yaml applied.
type uplinkSandbox struct {
	dir string
	c   client.Client
	nb  string // node1's Northbound database
	// routers are the routers' addresses; nodeIPs the node's address on
	// each router's segment (index k-1 for router k).
	routers, nodeIPs []string
}

func startUplinkSandbox(t *testing.T, bfd time.Duration) *uplinkSandbox {
	t.Helper()
	s := &uplinkSandbox{dir: filepath.Join(t.TempDir(), "uplinks")}
	if err := sandbox.Up(sandbox.Options{Dir: s.dir, Nodes: 1, Uplinks: uplinkRouters, UplinkBridges: 1, BFDInterval: bfd, Binary: binary, Attached: true}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.Down(s.dir, &bytes.Buffer{}) })
	var err error
	if s.c, err = sandbox.Client(s.dir); err != nil {
		t.Fatal(err)
	}
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(s.dir))
	if err != nil {
		t.Fatal(err)
	}
	s.nb = st.Nodes[0].NB
	s.routers = st.Routers
	s.nodeIPs = []string{st.Nodes[0].IP, st.Nodes[0].IP}
	s.nodeIPs = append(s.nodeIPs, st.Nodes[0].UplinkIPs...)
	for i := range s.nodeIPs {
		s.nodeIPs[i] = strings.Split(s.nodeIPs[i], "/")[0]
	}
	if len(s.routers) != uplinkRouters || len(s.nodeIPs) != uplinkRouters {
		t.Fatalf("sandbox state: routers %v, node addresses %v; want %d of each", s.routers, s.nodeIPs, uplinkRouters)
	}
	if err := sandbox.Apply(context.Background(), s.dir, &bytes.Buffer{}, filepath.Join(kubetest.RepoRoot(), "test", "e2e", "testdata", "uplinks.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"up-plain/a", "up-l3/a", "up-plain/web", "up-l3/web"} {
		eventually(t, func() error {
			_, err := sandbox.PodNetns(context.Background(), s.dir, s.c, p)
			return err
		})
	}
	return s
}

// nbBFD returns the zone's BFD sessions: next hop → status.
func (s *uplinkSandbox) nbBFD() (map[string]string, error) {
	out, err := deps.OVNCommand("ovn-nbctl", "--db="+s.nb, "--format=csv", "--no-headings", "--data=bare", "--columns=dst_ip,status", "list", "BFD").Output()
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if hop, status, ok := strings.Cut(line, ","); ok {
			got[hop] = status
		}
	}
	return got, nil
}

// neighbours returns every router's neighbour table (ip neigh), for logs.
func (s *uplinkSandbox) neighbours() string {
	l, err := sandbox.NewLayout(s.dir)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for k := 1; k <= uplinkRouters; k++ {
		out, err := sandbox.Command(context.Background(), l.RouterNetns(k), []string{deps.OVNProgram("ip"), "neigh"}).CombinedOutput()
		fmt.Fprintf(&b, "router %d neighbours (%v):\n%s", k, err, out)
	}
	return b.String()
}

// counters reads every router's packet counters.
func (s *uplinkSandbox) counters(t *testing.T) []sandbox.UplinkCount {
	t.Helper()
	c, err := sandbox.UplinkCounters(context.Background(), s.dir, uplinkRouters)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// quietCounters returns the routers' counters once two reads 200 ms apart
// agree (no packet in flight, delayed ACKs included), or the last read
// after 5 s.
func (s *uplinkSandbox) quietCounters(t *testing.T) []sandbox.UplinkCount {
	t.Helper()
	prev := s.counters(t)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond) // the interval between the two reads compared, not a wait for an event
		cur := s.counters(t)
		if slices.Equal(cur, prev) {
			return cur
		}
		prev = cur
	}
	return prev
}

// probe opens n connections at once (one attempt each) from a network
// namespace to addr and returns how many answered and the answers.
func (s *uplinkSandbox) probe(t *testing.T, netns, source, addr string, n int, timeout time.Duration) (int, []string) {
	t.Helper()
	argv := []string{binary, "sandbox", "probe", "--count", fmt.Sprint(n), "--timeout", timeout.String(), addr}
	if source != "" {
		argv = append(argv, "--source", source)
	}
	out, err := sandbox.Command(context.Background(), netns, argv).Output()
	if err != nil {
		t.Fatalf("probe from %s: %v", netns, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	ok := 0
	for _, l := range lines {
		if !strings.HasPrefix(l, "error: ") {
			ok++
		}
	}
	return ok, lines
}

func (s *uplinkSandbox) podNetns(t *testing.T, pod string) string {
	t.Helper()
	ns, err := sandbox.PodNetns(context.Background(), s.dir, s.c, pod)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestUplinks runs a node with three outside routers, each running FRR's
// bfdd: two are next hops on its br-ex, the third is on a segment of its
// own behind a second bridge, where every network's gateway router has a
// second external port. It checks with real packets what the gateway
// routers do with them: ECMP spreads egress over all three (out through
// either port, the outside seeing the node's address on that uplink),
// replies to a connection from outside leave through the router it came
// in by, a router that dies (one on br-ex, then the one on the second
// bridge) is withdrawn by BFD while new connections and the existing ones
// through the other routers go on, and it is taken back when it returns.
// It prints the failover and recovery times.
func TestUplinks(t *testing.T) {
	bfd := uplinkBFDInterval(t)
	s := startUplinkSandbox(t, bfd)
	nodeIP := s.nodeIPs[0]
	server := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)
	l := sandbox.NewLayoutMust(s.dir)

	t.Run("BFD sessions up at both ends", func(t *testing.T) {
		eventually(t, func() error {
			got, err := s.nbBFD()
			if err != nil {
				return err
			}
			for _, r := range s.routers {
				if got[r] != "up" {
					return fmt.Errorf("Northbound BFD sessions %v, want every router %v up", got, s.routers)
				}
			}
			if len(got) != uplinkRouters {
				return fmt.Errorf("Northbound BFD sessions %v, want one per next hop for all networks", got)
			}
			for k := 1; k <= uplinkRouters; k++ {
				peers, err := sandbox.RouterBFD(context.Background(), s.dir, k)
				if err != nil {
					return err
				}
				if len(peers) != 1 || peers[0].Peer != s.nodeIPs[k-1] || peers[0].Status != "up" {
					return fmt.Errorf("router %d's bfdd: %+v, want one session with %s, up", k, peers, s.nodeIPs[k-1])
				}
			}
			return nil
		})
	})

	t.Run("render writes the zone's rows, BFD references included", func(t *testing.T) {
		s.renderMatches(t, bfd)
	})

	t.Run("egress of each network spreads over every uplink", func(t *testing.T) {
		for _, pod := range []string{"up-plain/a", "up-l3/a"} {
			netns := s.podNetns(t, pod)
			const n = 48
			before := s.counters(t)
			ok, answers := s.probe(t, netns, "", server, n, 3*time.Second)
			if ok != n {
				t.Fatalf("%s: %d of %d connections to %s answered: %v", pod, ok, n, server, answers)
			}
			seen := map[string]int{}
			for _, a := range answers {
				seen[a]++
			}
			// Through router 3 the outside sees the node's address on the
			// second bridge, through the others the one on br-ex.
			if len(seen) != 2 || seen[nodeIP] == 0 || seen[s.nodeIPs[2]] == 0 {
				t.Fatalf("%s: the outside saw %v, want the node's addresses %s and %s", pod, seen, nodeIP, s.nodeIPs[2])
			}
			after := s.counters(t)
			var per []uint64
			var sum uint64
			for k := range after {
				per = append(per, after[k].SYN-before[k].SYN)
				sum += per[k]
			}
			t.Logf("%s: %d connections, SYNs through routers 1, 2, 3: %v; sources seen %v", pod, n, per, seen)
			// Binomial(48, 1/3): fewer than 4 on one router has
			// probability below 1e-5.
			for k, c := range per {
				if c < 4 {
					t.Errorf("%s: SYNs through router %d: %d of %v; want %d connections spread over all", pod, k+1, c, per, n)
				}
			}
			if sum < n {
				t.Errorf("%s: %d SYNs in all for %d connections", pod, sum, n)
			}
		}
	})

	t.Run("replies leave through the uplink the connection came in by", func(t *testing.T) {
		ext := l.ExternalNetns()
		nodePorts := []struct{ name, port string }{{"up-plain/web", "30280"}, {"up-l3/web", "30281"}}
		// The services' backends and flows come with the pods' readiness,
		// which the sandbox's start does not wait for: each node port
		// answers first, then the replies' way is measured.
		for _, svc := range nodePorts {
			eventually(t, func() error {
				if ok, answers := s.probe(t, ext, sandbox.UplinkClientIP(1), s.nodeIPs[0]+":"+svc.port, 1, 3*time.Second); ok != 1 {
					return fmt.Errorf("%s through router 1: %v", svc.name, answers)
				}
				return nil
			})
		}
		for _, svc := range nodePorts {
			for k := 1; k <= uplinkRouters; k++ {
				const n = 16
				before := s.counters(t)
				// Router 3's clients reach the node port at the node's
				// address on the second bridge.
				ok, answers := s.probe(t, ext, sandbox.UplinkClientIP(k), s.nodeIPs[k-1]+":"+svc.port, n, 3*time.Second)
				if ok != n {
					t.Fatalf("%s from outside through router %d: %d of %d answered: %v", svc.name, k, ok, n, answers)
				}
				after := s.counters(t)
				got := make([]uint64, uplinkRouters)
				want := make([]uint64, uplinkRouters)
				for j := range got {
					got[j] = after[j].SYNACK - before[j].SYNACK
				}
				want[k-1] = n
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s, %d connections in through router %d: SYN-ACKs out through routers 1..%d: %v, want %v (ecmp_symmetric_reply)", svc.name, n, k, uplinkRouters, got, want)
				}
			}
		}
	})

	t.Run("ECMP off: the compatibility gateway only; BFD off: no sessions", func(t *testing.T) {
		// The node's overrides, as an operator sets them on the annotation
		// (the node agent keeps them: it was given none).
		off := false
		orig := s.setGatewayPolicy(t, &off, nil)
		t.Cleanup(func() { s.restoreGateway(t, orig) })
		eventually(t, func() error {
			got, err := s.nbBFD()
			if err != nil {
				return err
			}
			if len(got) != 1 || got[s.routers[0]] != "up" {
				return fmt.Errorf("Northbound BFD sessions %v, want router 1's only (the one route left)", got)
			}
			return nil
		})
		oneWay := func(what string) {
			for _, pod := range []string{"up-plain/a", "up-l3/a"} {
				const n = 24
				before := s.counters(t)
				ok, answers := s.probe(t, s.podNetns(t, pod), "", server, n, 3*time.Second)
				if ok != n {
					t.Fatalf("%s, %s: %d of %d answered: %v", what, pod, ok, n, answers)
				}
				after := s.counters(t)
				for k := 1; k < uplinkRouters; k++ {
					if d := after[k].SYN - before[k].SYN; d != 0 {
						t.Errorf("%s, %s: %d SYNs through router %d, want all through router 1 (the first next hop)", what, pod, d, k+1)
					}
				}
				if d := after[0].SYN - before[0].SYN; d < n {
					t.Errorf("%s, %s: %d SYNs through router 1 for %d connections", what, pod, d, n)
				}
			}
		}
		oneWay("ECMP off")
		s.setGatewayPolicy(t, &off, &off)
		eventually(t, func() error {
			if got, err := s.nbBFD(); err != nil || len(got) != 0 {
				return fmt.Errorf("Northbound BFD sessions %v (%v), want none with BFD off", got, err)
			}
			return nil
		})
		oneWay("ECMP and BFD off")
		s.restoreGateway(t, orig)
		eventually(t, func() error {
			got, err := s.nbBFD()
			if err != nil {
				return err
			}
			if len(got) != uplinkRouters {
				return fmt.Errorf("Northbound BFD sessions %v after restoring the node's policy, want %d", got, uplinkRouters)
			}
			for _, st := range got {
				if st != "up" {
					return fmt.Errorf("Northbound BFD sessions %v after restoring the node's policy, want all up", got)
				}
			}
			return nil
		})
	})

	// Router 2 is a next hop on br-ex; router 3 is behind the second bridge.
	for _, dead := range []int{2, 3} {
		t.Run(fmt.Sprintf("dead router %d is withdrawn, new connections go through the others", dead), func(t *testing.T) {
			s.failover(t, dead, bfd, server)
		})
	}
}

// setGatewayPolicy sets the node's default-route overrides in its
// l3-gateway-config (nil leaves one as it is) and returns the annotation it
// replaced.
func (s *uplinkSandbox) setGatewayPolicy(t *testing.T, ecmp, bfd *bool) string {
	t.Helper()
	node := &corev1.Node{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Name: "node1"}, node); err != nil {
		t.Fatal(err)
	}
	orig := node.Annotations[nodeinfo.GatewayAnnotation]
	var g nodeinfo.Gateway
	if err := json.Unmarshal([]byte(orig), &g); err != nil {
		t.Fatal(err)
	}
	if ecmp != nil {
		g.DefaultRouteECMP = ecmp
	}
	if bfd != nil {
		g.DefaultRouteBFD = bfd
	}
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	s.restoreGateway(t, string(b))
	return orig
}

// restoreGateway writes the node's l3-gateway-config.
func (s *uplinkSandbox) restoreGateway(t *testing.T, v string) {
	t.Helper()
	node := &corev1.Node{}
	if err := s.c.Get(context.Background(), client.ObjectKey{Name: "node1"}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations[nodeinfo.GatewayAnnotation] = v
	if err := s.c.Patch(context.Background(), node, patch); err != nil {
		t.Fatal(err)
	}
}

// failover takes router dead's segment port down and checks that BFD
// withdraws it from the gateway routers' ECMP routes: new connections all
// answer through the others (timed), connections held through the others
// go on, and when it comes back it gets new connections again (timed).
func (s *uplinkSandbox) failover(t *testing.T, dead int, bfd time.Duration, server string) {
	netns := s.podNetns(t, "up-l3/a")
	// Held connections, sorted by the router they leave through (a line
	// sent on each moves one router's counters): with 12, some go through
	// the routers that stay (none has probability 3^-12).
	via := make([][]*heldConn, uplinkRouters)
	dropped := 0
	for i := 0; i < 12; i++ {
		// A fresh connection opened right after the previous router came
		// back has, about one run in three on 2026-11-25's machine, gone
		// unanswered for 5 s (not diagnosed; docs/gateway.md): it is opened
		// again once, and the test says so, before any fault is injected.
		// Read for the log below only (an error is logged, not fatal).
		first, firstErr := sandbox.UplinkCounters(context.Background(), s.dir, uplinkRouters)
		h, got := tryHoldIn(t, s.dir, s.c, "up-l3/a", s.nodeIPs...)
		retried := h == nil
		if retried {
			// What each router saw of it (SYN out, SYN-ACK in from the
			// outside, SYN-ACK on toward the nodes), and what the routers
			// know of their neighbours: for the undiagnosed flake.
			then, thenErr := sandbox.UplinkCounters(context.Background(), s.dir, uplinkRouters)
			t.Logf("held connection %d: no answer on the first try (the outside saw %q); opened again; routers' counters %+v (%v) → %+v (%v)\n%s",
				i, got, first, firstErr, then, thenErr, s.neighbours())
			h = holdIn(t, s.dir, s.c, "up-l3/a", s.nodeIPs...)
		}
		// Counted once the routers see no more packets: a delayed ACK of
		// the connection before this one must not land in this one's
		// window (it moved another router's counters on a machine whose
		// timing differed).
		// Under load a retransmission of another connection can land in
		// the window (2026-11-28, a loaded machine): a line whose counters
		// moved on two routers is sent again, up to three times. One that
		// moves two every time is left out below (at most three); more
		// than that fails the test.
		var before, after []sandbox.UplinkCount
		moved, twice := -1, false
		for try := 0; try < 3 && (try == 0 || twice); try++ {
			before = s.quietCounters(t)
			h.still(t, fmt.Sprintf("before %d.%d", i, try))
			after = s.quietCounters(t)
			moved, twice = -1, false
			for k := range after {
				if after[k].Packets > before[k].Packets {
					twice = twice || moved >= 0
					moved = k
				}
			}
		}
		if twice && dropped < 3 {
			// Seen (2026-11-26) right after that flake, and (2026-11-28, a
			// loaded machine) on a connection opened once: the line moved
			// two routers' counters at each of the three tries. At most
			// three such connections are left out of the count rather
			// than classified; a path that really takes two routers moves
			// every connection's, and fails below.
			t.Logf("held connection %d (opened again: %v): counters moved on two routers: %+v → %+v; left out", i, retried, before, after)
			_ = h.in.Close()
			_ = h.cmd.Process.Kill()
			dropped++
			i--
			continue
		}
		if twice {
			t.Fatalf("held connection %d: counters moved on two routers: %+v → %+v", i, before, after)
		}
		if moved < 0 {
			t.Fatalf("held connection %d: counters moved on no router: %+v → %+v", i, before, after)
		}
		via[moved] = append(via[moved], h)
	}
	var kept []*heldConn
	for k, hs := range via {
		if k != dead-1 {
			kept = append(kept, hs...)
		}
	}
	if len(kept) == 0 {
		t.Fatalf("held connections per router %v: none through the routers that stay", lens(via))
	}

	down := time.Now()
	if err := sandbox.SetUplink(s.dir, dead, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sandbox.SetUplink(s.dir, dead, true) })
	const n = 16
	var recovered time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, _ := s.probe(t, netns, "", server, n, 250*time.Millisecond)
		if ok == n {
			recovered = time.Since(down)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after router %d died, %d of %d new connections answer", dead, ok, n)
		}
	}
	t.Logf("router %d down: every new connection answers again after %s (BFD interval %s)", dead, recovered.Round(10*time.Millisecond), bfd)
	eventually(t, func() error {
		got, err := s.nbBFD()
		if err != nil {
			return err
		}
		for k, r := range s.routers {
			want := "up"
			if k == dead-1 {
				want = "down"
			}
			if got[r] != want {
				return fmt.Errorf("BFD sessions %v, want router %d down and the others up", got, dead)
			}
		}
		return nil
	})
	mid := s.counters(t)
	if ok, answers := s.probe(t, netns, "", server, n, 3*time.Second); ok != n {
		t.Fatalf("with router %d down, %d of %d connections answered: %v", dead, ok, n, answers)
	}
	if after := s.counters(t); after[dead-1].SYN != mid[dead-1].SYN {
		t.Errorf("with router %d down, %d SYNs still went to it", dead, after[dead-1].SYN-mid[dead-1].SYN)
	}
	// Connections through the other routers are untouched. Those through
	// the dead one are lost: in the sandbox each uplink's upstream answers
	// a connection through the router it came in by, and that router is
	// gone with their return path.
	for i, h := range kept {
		h.still(t, fmt.Sprintf("after failure %d", i))
	}
	t.Logf("held connections per router %v: %d through the others kept, %d through router %d lost with it", lens(via), len(kept), len(via[dead-1]), dead)

	up := time.Now()
	if err := sandbox.SetUplink(s.dir, dead, true); err != nil {
		t.Fatal(err)
	}
	var back time.Duration
	eventually(t, func() error {
		before := s.counters(t)
		if ok, answers := s.probe(t, netns, "", server, n, 3*time.Second); ok != n {
			return fmt.Errorf("with router %d back, %d of %d answered: %v", dead, ok, n, answers)
		}
		if after := s.counters(t); after[dead-1].SYN == before[dead-1].SYN {
			return fmt.Errorf("router %d is back but gets no new connections", dead)
		}
		back = time.Since(up)
		return nil
	})
	t.Logf("router %d up again: new connections spread to it after %s", dead, back.Round(10*time.Millisecond))
	for i, h := range kept {
		h.still(t, fmt.Sprintf("after recovery %d", i))
	}
}

// lens returns the lengths of each router's held connections.
func lens(via [][]*heldConn) []int {
	out := make([]int, len(via))
	for i, v := range via {
		out[i] = len(v)
	}
	return out
}

// renderMatches checks that render of the sandbox's own objects, given the
// zone controllers' flags, gives every network's rows exactly as the zone
// holds them, with each user network's default routes referring to the
// default network's BFD sessions (issue: render used to leave them out).
func (s *uplinkSandbox) renderMatches(t *testing.T, bfd time.Duration) {
	t.Helper()
	ctx := context.Background()
	nb, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: s.nb, Tables: zone.NBTables, Indexes: ovsdbsync.Indexes(zone.NBTableNames...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Close)
	syncer, err := zone.NewSyncer(nb)
	if err != nil {
		t.Fatal(err)
	}
	ms := int(bfd / time.Millisecond)
	gw := config.Gateway{ECMP: true, BFDMinTx: ms, BFDMinRx: ms} // the sandbox's zone flags; the node's annotation turns BFD on
	var compared, userRefs int
	eventually(t, func() error {
		docs, _, err := snapshotFrom(ctx, s.c)
		if err != nil {
			return err
		}
		in, err := render.Check(docs)
		if err != nil {
			return err
		}
		res, err := render.Run(ctx, in, render.Options{Cluster: config.Default(), Gateway: &gw})
		if err != nil {
			return err
		}
		owners, err := syncer.Owners("net:")
		if err != nil {
			return err
		}
		compared, userRefs = 0, 0
		for _, z := range res.Zones {
			for _, n := range z.Networks {
				rows, refs, err := liveBFD(ctx, nb, n.Own)
				if err != nil {
					return err
				}
				if n.Network != "default" {
					userRefs += refs
				}
				if err := sameOwner(syncer, z.Name, "network "+n.Network, feature.NetworkKey(n.Network).String(), n.NotRendered, owners, rows, nil); err != nil {
					return err
				}
				compared += len(rows)
			}
		}
		if len(owners) > 0 {
			return fmt.Errorf("the Northbound has networks render does not: %v", owners)
		}
		return nil
	})
	// One user network (up-l3's), with a default route per next hop.
	if want := uplinkRouters; userRefs != want {
		t.Errorf("%d user-network routes refer to a BFD session, want %d", userRefs, want)
	}
	t.Logf("%d rows identical, %d user-network routes with their BFD session", compared, userRefs)
}
