package activity

import (
	"sync"
	"time"
)

// DefaultGracePeriod is how long a network stays on a node after its last
// pod there is gone (OVN-Kubernetes' default for the same thing): a pod
// replaced on the same node does not tear the network down and build it
// again.
const DefaultGracePeriod = 120 * time.Second

// Grace keeps a node in a network's set for Period after it stopped being
// in the set Apply is given (the network's last pod there is gone). It
// remembers in memory only: after a restart a node without pods leaves at
// once. Safe for concurrent use.
type Grace struct {
	Period time.Duration

	mu sync.Mutex
	// since is, by network and node, when the node was first seen out of
	// the network's set (zero while it is in it).
	since map[string]map[string]time.Time
	// everywhere is, by network, when it was first seen used on only
	// some nodes after being used on every node (zero while it is).
	everywhere map[string]time.Time
}

// Apply returns cur plus the nodes that left the network's set less than
// Period before now, and how long until the first of those leaves (0 when
// none is kept). A node leaves the set when an Apply does not have it
// after one that had it: that Apply starts its period. A network that
// was on every node (a node-port Service) and is no longer stays on every
// node for Period, as each node that stops using it would.
func (g *Grace) Apply(network string, cur Nodes, now time.Time) (Nodes, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur.All() {
		// Every node: nothing to remember node by node.
		delete(g.since, network)
		if g.everywhere == nil {
			g.everywhere = map[string]time.Time{}
		}
		g.everywhere[network] = time.Time{}
		return cur, 0
	}
	out, next := g.applyNodes(network, cur, now)
	if t, ok := g.everywhere[network]; ok {
		if t.IsZero() {
			t = now
			g.everywhere[network] = now
		}
		if left := t.Add(g.Period).Sub(now); left > 0 {
			return Everywhere(), left
		}
		delete(g.everywhere, network)
	}
	return out, next
}

// applyNodes is Apply for a set of some nodes, node by node.
func (g *Grace) applyNodes(network string, cur Nodes, now time.Time) (Nodes, time.Duration) {
	if g.since == nil {
		g.since = map[string]map[string]time.Time{}
	}
	since := g.since[network]
	if since == nil {
		since = map[string]time.Time{}
		g.since[network] = since
	}
	for n := range cur.only {
		since[n] = time.Time{}
	}
	out := On(cur.Names()...)
	var next time.Duration
	for n, t := range since {
		if cur.only[n] {
			continue
		}
		if t.IsZero() {
			t = now
			since[n] = now
		}
		left := t.Add(g.Period).Sub(now)
		if left <= 0 {
			delete(since, n)
			continue
		}
		out.only[n] = true
		if next == 0 || left < next {
			next = left
		}
	}
	if len(since) == 0 {
		delete(g.since, network)
	}
	return out, next
}

// Forget drops what is remembered of a network (it is gone).
func (g *Grace) Forget(network string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.since, network)
	delete(g.everywhere, network)
}
