package egressip

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
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
// node's primary address), on which a byte is sent every Interval and
// must come back within it. A node is unreachable after Misses probes in
// a row got no answer at all (a connect or a read that timed out, or no
// route): the machine or its network is gone. A refused connection or a
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
	// Interval is both the time between probes and each probe's timeout.
	Interval time.Duration
	// Misses is how many unanswered probes in a row make a node
	// unreachable.
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
	addr   netip.Addr
	cancel context.CancelFunc
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
	var conn net.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	missed := 0
	tick := time.NewTicker(interval)
	defer tick.Stop()
	buf := []byte{1}
	for {
		answered, err := true, error(nil)
		if conn == nil {
			dctx, cancel := context.WithTimeout(ctx, interval)
			conn, err = dial(dctx, "tcp", target)
			cancel()
			if err != nil {
				conn, answered = nil, refused(err)
			}
		}
		if conn != nil {
			_ = conn.SetDeadline(time.Now().Add(interval))
			if _, err = conn.Write(buf); err == nil {
				_, err = conn.Read(buf)
			}
			if err != nil {
				var ne net.Error
				answered = !(errors.As(err, &ne) && ne.Timeout())
				_ = conn.Close()
				conn = nil
			}
		}
		if ctx.Err() != nil {
			return
		}
		if answered {
			missed = 0
		} else {
			missed++
		}
		if down := missed >= misses; r.set(name, p, down) {
			logger.Info("egress node reachability changed", "reachable", !down, "lastError", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
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

// refused reports whether a failed connect was answered by the node (a
// refusal or a reset) rather than met with silence.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
