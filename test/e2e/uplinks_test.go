package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/sandbox"
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

// uplinkSandbox is a one-node sandbox with two outside routers running BFD
// (sandbox up --nodes 1 --uplinks 2), with testdata/uplinks.yaml applied.
type uplinkSandbox struct {
	dir string
	c   client.Client
	nb  string // node1's Northbound database
}

func startUplinkSandbox(t *testing.T, bfd time.Duration) *uplinkSandbox {
	t.Helper()
	s := &uplinkSandbox{dir: filepath.Join(t.TempDir(), "uplinks")}
	if err := sandbox.Up(sandbox.Options{Dir: s.dir, Nodes: 1, Uplinks: 2, BFDInterval: bfd, Binary: binary, Attached: true}, &bytes.Buffer{}); err != nil {
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

// counters reads both routers' packet counters.
func (s *uplinkSandbox) counters(t *testing.T) []sandbox.UplinkCount {
	t.Helper()
	c, err := sandbox.UplinkCounters(context.Background(), s.dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	return c
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

// TestUplinks runs a node with two outside routers, both its next hops,
// each running FRR's bfdd, and checks with real packets what every
// network's gateway router does with them: ECMP spreads egress over both,
// replies to a connection from outside leave through the router it came in
// by, a router that dies is withdrawn by BFD while new and existing
// connections go on through the other, and it is taken back when it
// returns. It prints the failover and recovery times.
func TestUplinks(t *testing.T) {
	bfd := uplinkBFDInterval(t)
	s := startUplinkSandbox(t, bfd)
	nodeIP := strings.Split(sandbox.NodeIP(1), "/")[0]
	server := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)
	l := sandbox.NewLayoutMust(s.dir)

	t.Run("BFD sessions up at both ends", func(t *testing.T) {
		eventually(t, func() error {
			got, err := s.nbBFD()
			if err != nil {
				return err
			}
			if got[sandbox.RouterIP(1)] != "up" || got[sandbox.RouterIP(2)] != "up" || len(got) != 2 {
				return fmt.Errorf("Northbound BFD sessions %v, want both routers up (one session per next hop for all networks)", got)
			}
			for k := 1; k <= 2; k++ {
				peers, err := sandbox.RouterBFD(context.Background(), s.dir, k)
				if err != nil {
					return err
				}
				if len(peers) != 1 || peers[0].Peer != nodeIP || peers[0].Status != "up" {
					return fmt.Errorf("router %d's bfdd: %+v, want one session with %s, up", k, peers, nodeIP)
				}
			}
			return nil
		})
	})

	t.Run("egress of each network spreads over both uplinks", func(t *testing.T) {
		for _, pod := range []string{"up-plain/a", "up-l3/a"} {
			netns := s.podNetns(t, pod)
			const n = 32
			before := s.counters(t)
			ok, answers := s.probe(t, netns, "", server, n, 3*time.Second)
			if ok != n {
				t.Fatalf("%s: %d of %d connections to %s answered: %v", pod, ok, n, server, answers)
			}
			for _, a := range answers {
				if a != nodeIP {
					t.Fatalf("%s: the outside saw %q, want the node's address %s", pod, a, nodeIP)
				}
			}
			after := s.counters(t)
			r1, r2 := after[0].SYN-before[0].SYN, after[1].SYN-before[1].SYN
			t.Logf("%s: %d connections, SYNs through router 1: %d, router 2: %d", pod, n, r1, r2)
			// Binomial(32, 1/2): fewer than 4 on one side has probability
			// below 2e-6.
			if r1 < 4 || r2 < 4 || r1+r2 < n {
				t.Errorf("%s: SYNs through router 1: %d, router 2: %d; want %d connections spread over both", pod, r1, r2, n)
			}
		}
	})

	t.Run("replies leave through the uplink the connection came in by", func(t *testing.T) {
		ext := l.ExternalNetns()
		for _, svc := range []struct{ name, port string }{{"up-plain/web", "30280"}, {"up-l3/web", "30281"}} {
			for k := 1; k <= 2; k++ {
				const n = 16
				before := s.counters(t)
				ok, answers := s.probe(t, ext, sandbox.UplinkClientIP(k), nodeIP+":"+svc.port, n, 3*time.Second)
				if ok != n {
					t.Fatalf("%s from outside through router %d: %d of %d answered: %v", svc.name, k, ok, n, answers)
				}
				after := s.counters(t)
				got := []uint64{after[0].SYNACK - before[0].SYNACK, after[1].SYNACK - before[1].SYNACK}
				want := []uint64{0, 0}
				want[k-1] = n
				if got[0] != want[0] || got[1] != want[1] {
					t.Errorf("%s, %d connections in through router %d: SYN-ACKs out through routers 1, 2: %v, want %v (ecmp_symmetric_reply)", svc.name, n, k, got, want)
				}
			}
		}
	})

	t.Run("a dead router is withdrawn, new connections go through the other", func(t *testing.T) {
		netns := s.podNetns(t, "up-l3/a")
		// Held connections, sorted by the router they leave through (a line
		// sent on each moves one router's counters): with 12, some go
		// through each (all through one has probability 1/2048).
		var via [2][]*heldConn
		for i := range 12 {
			h := holdIn(t, s.dir, s.c, "up-l3/a", nodeIP)
			before := s.counters(t)
			h.still(t, fmt.Sprintf("before %d", i))
			after := s.counters(t)
			switch {
			case after[0].Packets > before[0].Packets && after[1].Packets == before[1].Packets:
				via[0] = append(via[0], h)
			case after[1].Packets > before[1].Packets && after[0].Packets == before[0].Packets:
				via[1] = append(via[1], h)
			default:
				t.Fatalf("held connection %d: counters moved on both routers or none: %+v → %+v", i, before, after)
			}
		}
		if len(via[0]) == 0 || len(via[1]) == 0 {
			t.Fatalf("held connections through router 1: %d, router 2: %d; want some through each", len(via[0]), len(via[1]))
		}

		down := time.Now()
		if err := sandbox.SetUplink(s.dir, 2, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sandbox.SetUplink(s.dir, 2, true) })
		const n = 16
		var failed bool
		var recovered time.Duration
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, _ := s.probe(t, netns, "", server, n, 250*time.Millisecond)
			if ok == n {
				recovered = time.Since(down)
				break
			}
			failed = true
			if time.Now().After(deadline) {
				t.Fatalf("30 s after router 2 died, %d of %d new connections answer", ok, n)
			}
		}
		if !failed {
			// The first round after the failure answered in full: either
			// BFD was faster than one round, or nothing went to router 2.
			t.Logf("the first round after the failure answered in full")
		}
		t.Logf("router 2 down: every new connection answers again after %s (BFD interval %s)", recovered.Round(10*time.Millisecond), bfd)
		eventually(t, func() error {
			got, err := s.nbBFD()
			if err != nil {
				return err
			}
			if got[sandbox.RouterIP(2)] != "down" || got[sandbox.RouterIP(1)] != "up" {
				return fmt.Errorf("BFD sessions %v, want router 2 down and router 1 up", got)
			}
			return nil
		})
		mid := s.counters(t)
		if ok, answers := s.probe(t, netns, "", server, n, 3*time.Second); ok != n {
			t.Fatalf("with router 2 down, %d of %d connections answered: %v", ok, n, answers)
		}
		if after := s.counters(t); after[1].SYN != mid[1].SYN {
			t.Errorf("with router 2 down, %d SYNs still went to it", after[1].SYN-mid[1].SYN)
		}
		// Connections through router 1 are untouched. Those through router
		// 2 are lost: in the sandbox each uplink's upstream answers a
		// connection through the router it came in by, and that router is
		// gone with their return path.
		for i, h := range via[0] {
			h.still(t, fmt.Sprintf("after failure %d", i))
		}
		t.Logf("held connections: %d through router 1 kept, %d through router 2 lost with it", len(via[0]), len(via[1]))

		up := time.Now()
		if err := sandbox.SetUplink(s.dir, 2, true); err != nil {
			t.Fatal(err)
		}
		var back time.Duration
		eventually(t, func() error {
			before := s.counters(t)
			if ok, answers := s.probe(t, netns, "", server, n, 3*time.Second); ok != n {
				return fmt.Errorf("with router 2 back, %d of %d answered: %v", ok, n, answers)
			}
			if after := s.counters(t); after[1].SYN == before[1].SYN {
				return fmt.Errorf("router 2 is back but gets no new connections")
			}
			back = time.Since(up)
			return nil
		})
		t.Logf("router 2 up again: new connections spread to it after %s", back.Round(10*time.Millisecond))
		for i, h := range via[0] {
			h.still(t, fmt.Sprintf("after recovery %d", i))
		}
	})
}
