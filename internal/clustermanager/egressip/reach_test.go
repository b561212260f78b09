package egressip

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// agent is a probe target on loopback: it echoes each byte while echo is
// set, delay after it came (a loaded machine), and swallows them (a node
// that went silent) otherwise. While stall is held, it reads nothing: the
// bytes wait and are echoed once it is released (a stalled process).
type agent struct {
	l      net.Listener
	echo   atomic.Bool
	echoed atomic.Int64
	delay  time.Duration
	stall  sync.Mutex
}

func newAgent(t *testing.T) *agent { return newDelayedAgent(t, 0) }

func newDelayedAgent(t *testing.T, delay time.Duration) *agent {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{l: l, delay: delay}
	a.echo.Store(true)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b := make([]byte, 1)
				for {
					a.stall.Lock()
					a.stall.Unlock()
					if _, err := c.Read(b); err != nil {
						return
					}
					if !a.echo.Load() {
						continue
					}
					if a.delay == 0 {
						if _, err := c.Write(b); err != nil {
							return
						}
						a.echoed.Add(1)
						continue
					}
					go func() {
						time.Sleep(a.delay) // the late answer itself, not synchronisation
						if _, err := c.Write([]byte{1}); err == nil {
							a.echoed.Add(1)
						}
					}()
				}
			}()
		}
	}()
	return a
}

func (a *agent) port() int { return a.l.Addr().(*net.TCPAddr).Port }

func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReachability: a node whose agent answers is reachable; one that goes
// silent is unreachable after Misses probes, with an event, and reachable
// again at its first answer; a refused connection (an agent restarting)
// never makes a node unreachable.
func TestReachability(t *testing.T) {
	a := newAgent(t)
	r := &Reachability{Port: a.port(), Interval: 20 * time.Millisecond, Misses: 3}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Start(ctx) }()
	lo := netip.MustParseAddr("127.0.0.1")
	r.Track(map[string]netip.Addr{"n1": lo})
	changes := r.Changes()

	waitFor(t, "five probes answered", func() bool { return a.echoed.Load() >= 5 })
	if r.Unreachable("n1") {
		t.Fatal("n1 answers, yet is unreachable")
	}
	a.echo.Store(false)
	start := time.Now()
	waitFor(t, "n1 unreachable", func() bool { return r.Unreachable("n1") })
	if took := time.Since(start); took < 2*r.Interval {
		t.Errorf("n1 unreachable after %s: sooner than %d probes of %s", took, r.Misses, r.Interval)
	}
	select {
	case e := <-changes:
		if e.Object.Name != "n1" {
			t.Errorf("change event for %q, want n1", e.Object.Name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no change event for n1")
	}
	// A hung agent: its kernel still completes the handshakes of the
	// probes dialled again, which must not bring the node back. Watched
	// for 15 intervals (a measurement window, not a wait for an event).
	for end := time.Now().Add(15 * r.Interval); time.Now().Before(end); time.Sleep(r.Interval / 4) {
		if !r.Unreachable("n1") {
			t.Fatal("n1 accepts connections but echoes nothing, and came back")
		}
	}
	a.echo.Store(true)
	waitFor(t, "n1 reachable again", func() bool { return !r.Unreachable("n1") })

	// A port nothing listens on: refused, an answer.
	closed := newAgent(t)
	_ = closed.l.Close()
	var dials atomic.Int64
	r2 := &Reachability{Port: closed.port(), Interval: 20 * time.Millisecond, Misses: 2,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			defer dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
	go func() { _ = r2.Start(ctx) }()
	r2.Track(map[string]netip.Addr{"n2": lo})
	waitFor(t, "ten refused probes", func() bool { return dials.Load() >= 10 })
	if r2.Unreachable("n2") {
		t.Error("a refused connection made n2 unreachable")
	}

	// Untracked, or tracked at another address: the verdict is forgotten,
	// and said (the IPs it kept away may come back).
	a.echo.Store(false)
	waitFor(t, "n1 unreachable", func() bool { return r.Unreachable("n1") })
	for len(changes) > 0 {
		<-changes
	}
	r.Track(map[string]netip.Addr{"n1": netip.MustParseAddr("127.0.0.2")})
	if r.Unreachable("n1") {
		t.Error("a node tracked at a new address keeps the old address's verdict")
	}
	select {
	case <-changes:
	case <-time.After(5 * time.Second):
		t.Error("no change event when a verdict was dropped")
	}
	r.Track(nil)
	if r.Unreachable("n1") {
		t.Error("an untracked node keeps its verdict")
	}
}

// TestReachabilityLateAnswers: an agent whose echoes come back later than
// the interval (a loaded machine) stays reachable, as long as answers keep
// coming; the probes of the first version timed each one out, closed the
// connection and counted it missed, and a loaded sandbox saw its egress IPs
// move back and forth between nodes every few seconds.
func TestReachabilityLateAnswers(t *testing.T) {
	const interval, delay = 20 * time.Millisecond, 50 * time.Millisecond
	a := newDelayedAgent(t, delay)
	r := &Reachability{Port: a.port(), Interval: interval, Misses: 3}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Start(ctx) }()
	r.Track(map[string]netip.Addr{"n1": netip.MustParseAddr("127.0.0.1")})
	changes := r.Changes()
	waitFor(t, "fifty late answers", func() bool { return a.echoed.Load() >= 50 })
	if r.Unreachable("n1") {
		t.Fatal("n1 answers every probe 2.5 intervals late, yet is unreachable")
	}
	select {
	case e := <-changes:
		t.Errorf("a verdict changed for %q while every probe was answered late", e.Object.Name)
	default:
	}
}

// TestReachabilityFlap: a node given up whose echoes then come, late, on
// the connection open at the verdict (a stalled agent, not a gone one) was
// given up wrongly: its flap level rises, so that it is allowed a longer
// silence next time. A node that really went silent, and answers again on
// a new connection, raises nothing.
func TestReachabilityFlap(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stall     bool // hold the agent (its bytes wait) rather than drop the bytes
		wantLevel uint
	}{
		{"stalled agent: a flap", true, 1},
		{"silent node: no flap", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAgent(t)
			// 50 ms intervals: the evidence window after a verdict is
			// 2 × 150 ms, wide enough for the poll below on a loaded machine.
			r := &Reachability{Port: a.port(), Interval: 50 * time.Millisecond, Misses: 3}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = r.Start(ctx) }()
			r.Track(map[string]netip.Addr{"n1": netip.MustParseAddr("127.0.0.1")})
			waitFor(t, "ten echoes", func() bool { return a.echoed.Load() >= 10 })
			if tc.stall {
				a.stall.Lock()
			} else {
				a.echo.Store(false)
			}
			waitFor(t, "n1 unreachable", func() bool { return r.Unreachable("n1") })
			if tc.stall {
				a.stall.Unlock()
			} else {
				a.echo.Store(true)
			}
			waitFor(t, "n1 reachable again", func() bool { return !r.Unreachable("n1") })
			if tc.stall {
				waitFor(t, "the flap counted", func() bool { return r.flapLevel("n1") == tc.wantLevel })
			}
			// The silent node's level must still be 0 after its evidence
			// window (2 × 150 ms) closed.
			time.Sleep(400 * time.Millisecond) // letting the window pass is the point, not synchronisation
			if got := r.flapLevel("n1"); got != tc.wantLevel {
				t.Errorf("flap level %d, want %d", got, tc.wantLevel)
			}
		})
	}
}

// TestRTTEstimatorTimeout: the silence a node is allowed follows its
// recent echoes' round-trip times, within the floor and the ceiling.
func TestRTTEstimatorTimeout(t *testing.T) {
	const lo, hi = 300 * time.Millisecond, 3 * time.Second
	for _, tc := range []struct {
		name string
		rtts []time.Duration
		want time.Duration
	}{
		{"no echo yet: the floor", nil, lo},
		{"quick echoes: the floor", []time.Duration{time.Millisecond, 2 * time.Millisecond, time.Millisecond}, lo},
		{"one slow echo: srtt + 4 rttvar", []time.Duration{200 * time.Millisecond}, 600 * time.Millisecond},
		{"very slow echoes: the ceiling", []time.Duration{2 * time.Second, 2 * time.Second}, hi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &rttEstimator{}
			at := time.Unix(1000, 0)
			for _, r := range tc.rtts {
				e.sent(at)
				e.echoed(1, at.Add(r))
				at = at.Add(time.Second)
			}
			if got := e.timeout(lo, hi); got != tc.want {
				t.Errorf("timeout = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestFlapDamping: false verdicts raise the level, up to its bound; calm
// periods lower it again, not half of one.
func TestFlapDamping(t *testing.T) {
	var d flapDamping
	at := time.Hour
	for range 6 {
		d.flap(at)
		at += time.Second
	}
	if d.level != maxFlapLevel {
		t.Fatalf("after six flaps: level %d, want %d", d.level, maxFlapLevel)
	}
	last := at - time.Second
	d.calm(false, last+calmPeriod/2)
	if d.level != maxFlapLevel {
		t.Errorf("half a calm period lowered the level to %d", d.level)
	}
	d.calm(true, last+calmPeriod)
	if d.level != maxFlapLevel {
		t.Errorf("a calm period spent unreachable lowered the level to %d", d.level)
	}
	d.calm(false, last+calmPeriod)
	d.calm(false, last+2*calmPeriod)
	if d.level != maxFlapLevel-2 {
		t.Errorf("after two calm periods: level %d, want %d", d.level, maxFlapLevel-2)
	}
}
