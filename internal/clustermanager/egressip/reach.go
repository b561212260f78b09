package egressip

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultHealthPort is where node agents answer cluster-manager's
// reachability probes (ovn-kubernetes' egressip-node-healthcheck-port).
const DefaultHealthPort = 9107

// Reachability probes the egress-assignable nodes' agents, so that an
// egress IP leaves a node that vanished within a fraction of a second,
// long before the node's Ready condition turns (40 s by default).
//
// Each tracked node has one TCP connection to its agent (Port on the
// node's primary address), on which a byte is sent every Interval; its
// echo counts whenever it comes back. A node is unreachable after Misses
// intervals in a row with no answer at all, and a silence longer than its
// recent echoes took (rttEstimator; a connect that timed out, or no route,
// is no answer): the machine or its network is gone. A refused connection or a
// closed one is an answer (the node's kernel is there, only the agent is
// not: restarting, or older than the probe), so a restarting agent never
// moves an address; the Ready condition still covers a node that stays
// down. A node reachable again answers at its next probe.
//
// The probes run while the manager's leader runs (Start); Track says
// which nodes to probe, Unreachable what was found, and Changes carries an
// event each time a node's verdict changes.
type Reachability struct {
	// Port is the agents' probe port.
	Port int
	// Interval is the time between probes, and a connect's timeout.
	Interval time.Duration
	// Misses is how many intervals in a row without an answer make a node
	// unreachable (with a silence beyond its round-trip time).
	Misses int
	// Dial opens a connection (net.Dialer's by default; the sandbox dials
	// from the nodes' network namespace).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu          sync.Mutex
	ctx         context.Context // set by Start
	probes      map[string]*probe
	unreachable map[string]bool
	changes     chan event.TypedGenericEvent[*corev1.Node]
}

// probe is one node's probing goroutine.
type probe struct {
	addr      netip.Addr
	cancel    context.CancelFunc
	flapLevel atomic.Uint32 // flapDamping's level, for logs and tests
}

// Changes is the channel of verdict changes (for source.Channel).
func (r *Reachability) Changes() chan event.TypedGenericEvent[*corev1.Node] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changes == nil {
		r.changes = make(chan event.TypedGenericEvent[*corev1.Node], 64)
	}
	return r.changes
}

// Start implements manager.Runnable: probes run until ctx ends.
func (r *Reachability) Start(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	for name, p := range r.probes {
		r.startLocked(name, p)
	}
	r.mu.Unlock()
	<-ctx.Done()
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the
// leader assigns, so only the leader probes.
func (r *Reachability) NeedLeaderElection() bool { return true }

// Track probes exactly these nodes (name → primary address): new ones
// start, those gone or moved stop and forget their verdict.
func (r *Reachability) Track(nodes map[string]netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probes == nil {
		r.probes, r.unreachable = map[string]*probe{}, map[string]bool{}
	}
	dropped := false
	for name, p := range r.probes {
		if a, ok := nodes[name]; ok && a == p.addr {
			continue
		}
		if p.cancel != nil {
			p.cancel()
		}
		delete(r.probes, name)
		dropped = dropped || r.unreachable[name]
		delete(r.unreachable, name)
	}
	if dropped {
		// A verdict that kept a node's IPs away is gone: assign again.
		r.notifyLocked("")
	}
	for name, a := range nodes {
		if _, ok := r.probes[name]; ok {
			continue
		}
		p := &probe{addr: a}
		r.probes[name] = p
		if r.ctx != nil {
			r.startLocked(name, p)
		}
	}
}

// Unreachable reports whether the node's probes went unanswered (false
// for a node not tracked).
func (r *Reachability) Unreachable(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable[node]
}

func (r *Reachability) startLocked(name string, p *probe) {
	ctx, cancel := context.WithCancel(r.ctx)
	p.cancel = cancel
	go r.run(ctx, name, p)
}

// run probes one node until ctx ends.
//
// While the node is reachable, the connection is kept: a byte goes every
// interval, and a reader takes the echoes whenever they come, so a late
// answer (a loaded machine's scheduler, a userspace datapath) still counts
// as one. An interval is missed when no answer came during it; a round
// that lasted more than two intervals is not counted either way (this
// process itself was not running: its silence says nothing of the node).
// Once the node is unreachable, a new connection is dialled every
// interval, and only an echo on it, or a refusal, counts: a hung agent's
// kernel still completes handshakes. The connection open at the verdict is
// kept a while: an echo on it soon after says the verdict was wrong, and
// the node's allowed silence grows (flapDamping).
func (r *Reachability) run(ctx context.Context, name string, p *probe) {
	addr := p.addr
	logger := log.FromContext(ctx).WithValues("node", name, "address", addr)
	target := net.JoinHostPort(addr.String(), strconv.Itoa(r.Port))
	dial := r.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	interval, misses := r.Interval, r.Misses
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if misses <= 0 {
		misses = 3
	}
	// Times are offsets on the monotonic clock from base: a step of the
	// wall clock must not read as a silence.
	base := time.Now()
	mono := func() time.Duration { return time.Since(base) }
	var heard atomic.Int64 // when the last answer came
	est := &rttEstimator{}
	var c, suspect *echoConn // suspect: the connection open when the node was given up
	var suspectAt, evidence time.Duration
	defer func() {
		for _, x := range []*echoConn{c, suspect} {
			if x != nil {
				_ = x.conn.Close()
			}
		}
	}()
	missed, down := 0, false
	var damp flapDamping
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		begun := mono()
		var err error
		if c != nil && (down || c.closed()) {
			_ = c.conn.Close()
			c = nil
		}
		if c == nil {
			dctx, cancel := context.WithTimeout(ctx, interval)
			conn, derr := dial(dctx, "tcp", target)
			cancel()
			switch {
			case derr == nil:
				est.reset()
				c = newEchoConn(conn, &heard, est, mono)
				if !down {
					heard.Store(int64(mono())) // the handshake is an answer, but not one that brings a node back
				}
			case refused(derr):
				heard.Store(int64(mono()))
			default:
				err = derr
			}
		}
		if c != nil {
			_ = c.conn.SetWriteDeadline(time.Now().Add(interval))
			est.sent(time.Now())
			if _, werr := c.conn.Write([]byte{1}); werr != nil {
				err = werr
				_ = c.conn.Close()
			}
		}
		if ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := mono()
		if suspect != nil {
			switch {
			case suspect.last.Load() >= int64(suspectAt):
				// An echo of a byte sent before the verdict: the node was
				// there all along.
				damp.flap(now)
				p.flapLevel.Store(uint32(damp.level))
				logger.Info("egress node given up wrongly: its allowed silence grows", "flapLevel", damp.level)
				fallthrough
			case now-suspectAt > evidence:
				_ = suspect.conn.Close()
				suspect = nil
			}
		}
		damp.calm(down, now)
		p.flapLevel.Store(uint32(damp.level))
		switch answered := heard.Load() >= int64(begun); {
		case answered:
			missed = 0
		case now-begun <= 2*interval:
			missed++
		}
		silence := now - time.Duration(heard.Load())
		floor := min(time.Duration(misses)*interval<<damp.level, maxSilenceIntervals*interval)
		giveUp := est.timeout(floor, maxSilenceIntervals*interval)
		if verdict := missed >= misses && silence > giveUp; verdict != down {
			down = verdict
			if down && c != nil {
				if suspect != nil {
					_ = suspect.conn.Close()
				}
				suspect, suspectAt, evidence, c = c, now, 2*giveUp, nil
			}
			if r.set(name, p, down) {
				if err == nil && down {
					err = errors.New("no answer for " + strconv.Itoa(misses) + " intervals of " + interval.String())
				}
				logger.Info("egress node reachability changed", "reachable", !down, "lastError", err, "flapLevel", damp.level)
			}
		}
	}
}

// maxSilenceIntervals bounds how long a node may stay silent, in
// intervals, however slow its recent answers were: 30 (3 s by default).
const maxSilenceIntervals = 30

// flapDamping makes a node given up wrongly slower to give up again: each
// false verdict (an echo, soon after it, of a byte sent before it) doubles
// the silence the node is allowed (level, at most maxFlapLevel), and each
// calmPeriod without one halves it again. A machine so loaded that answers
// stall for half a second at a time then stops moving egress IPs between
// healthy nodes after a few moves; a node really gone, whose link comes
// back later, raises nothing, and a quiet machine keeps its sub-second
// failover.
type flapDamping struct {
	level uint
	since time.Duration // the last flap or decay
}

const (
	calmPeriod   = 5 * time.Minute
	maxFlapLevel = 4
)

// flap records a false verdict at now.
func (d *flapDamping) flap(now time.Duration) {
	if d.level < maxFlapLevel {
		d.level++
	}
	d.since = now
}

// calm lowers the level once per calmPeriod without a flap while the node
// is reachable.
func (d *flapDamping) calm(down bool, now time.Duration) {
	if down || d.level == 0 {
		return
	}
	if now-d.since >= calmPeriod {
		d.level--
		d.since = now
	}
}

// rttEstimator measures how long the echoes of one node take to come
// back, as TCP does for its retransmission timeout (RFC 6298: a smoothed
// round-trip time and its mean deviation), so that a node is given up only
// after a silence well beyond what its recent answers took: Misses
// intervals on a quiet machine, longer where answers have been slow (a
// loaded machine, a userspace datapath), at most maxSilenceIntervals.
type rttEstimator struct {
	mu           sync.Mutex
	sends        []time.Time // bytes sent on the current connection, not yet echoed
	srtt, rttvar time.Duration
	sampled      bool
}

// reset forgets the bytes in flight (a new connection); the estimate stays.
func (e *rttEstimator) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sends = e.sends[:0]
}

// sent records a byte sent at t.
func (e *rttEstimator) sent(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sends) >= 1024 {
		return // a node silent this long is unreachable long since
	}
	e.sends = append(e.sends, t)
}

// echoed records n bytes echoed at t, the oldest ones sent first.
func (e *rttEstimator) echoed(n int, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ; n > 0 && len(e.sends) > 0; n-- {
		r := at.Sub(e.sends[0])
		e.sends = e.sends[1:]
		if !e.sampled {
			e.srtt, e.rttvar, e.sampled = r, r/2, true
			continue
		}
		d := e.srtt - r
		if d < 0 {
			d = -d
		}
		e.rttvar = (3*e.rttvar + d) / 4
		e.srtt = (7*e.srtt + r) / 8
	}
}

// timeout is how long a silence must last before the node is given up:
// srtt + 4·rttvar, within [lo, hi].
func (e *rttEstimator) timeout(lo, hi time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return min(max(lo, e.srtt+4*e.rttvar), hi)
}

// echoConn is a probe connection and its reader, which records when each
// echo came back.
type echoConn struct {
	conn net.Conn
	done chan struct{} // closed when the reader ends
	last atomic.Int64  // when an echo last came back on it (run's clock)
}

func newEchoConn(conn net.Conn, heard *atomic.Int64, est *rttEstimator, mono func() time.Duration) *echoConn {
	c := &echoConn{conn: conn, done: make(chan struct{})}
	c.last.Store(-1)
	go func() {
		defer close(c.done)
		buf := make([]byte, 64)
		for {
			n, err := conn.Read(buf)
			if n > 0 {
				est.echoed(n, time.Now())
				now := int64(mono())
				c.last.Store(now)
				heard.Store(now)
			}
			if err != nil {
				if errors.Is(err, io.EOF) || refused(err) {
					// The agent closed or reset it: its kernel answered.
					heard.Store(int64(mono()))
				}
				return
			}
		}
	}()
	return c
}

// closed reports whether the reader ended (the connection was reset or
// closed: the next round dials again).
func (c *echoConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// set records a node's verdict from its probe p, and reports whether it
// changed (then an event goes to Changes). A probe Track replaced records
// nothing.
func (r *Reachability) set(name string, p *probe, down bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.probes[name] != p || r.unreachable[name] == down {
		return false
	}
	r.unreachable[name] = down
	r.notifyLocked(name)
	return true
}

// notifyLocked sends a change event (r.mu held; the channel is made
// here if Changes was not called yet).
func (r *Reachability) notifyLocked(name string) {
	if r.changes == nil {
		r.changes = make(chan event.TypedGenericEvent[*corev1.Node], 64)
	}
	n := &corev1.Node{}
	n.Name = name
	select {
	case r.changes <- event.TypedGenericEvent[*corev1.Node]{Object: n}:
	default: // a reconcile is queued already: it reads every verdict
	}
}

// flapLevel is the node's flapDamping level (0 for a node not tracked).
func (r *Reachability) flapLevel(node string) uint {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.probes[node]; p != nil {
		return uint(p.flapLevel.Load())
	}
	return 0
}

// refused reports whether a failed connect was answered by the node (a
// refusal or a reset) rather than met with silence.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
