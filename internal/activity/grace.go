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

// Grace keeps a node in a network's set for Period after the network was
// last seen active there. It remembers in memory only: after a restart a
// node without pods leaves at once. Safe for concurrent use.
type Grace struct {
	Period time.Duration

	mu   sync.Mutex
	seen map[string]map[string]time.Time // network → node → last seen active
}

// Apply returns cur plus the nodes seen active on the network less than
// Period before now, and how long until the first of those leaves (0 when
// none is kept). It records cur's nodes as seen at now.
func (g *Grace) Apply(network string, cur Nodes, now time.Time) (Nodes, time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if cur.All() {
		// Every node: nothing to remember; if the network is later
		// restricted, nodes without pods leave at once.
		delete(g.seen, network)
		return cur, 0
	}
	if g.seen == nil {
		g.seen = map[string]map[string]time.Time{}
	}
	seen := g.seen[network]
	if seen == nil {
		seen = map[string]time.Time{}
		g.seen[network] = seen
	}
	for n := range cur.only {
		seen[n] = now
	}
	out := On(cur.Names()...)
	var next time.Duration
	for n, t := range seen {
		if cur.only[n] {
			continue
		}
		left := t.Add(g.Period).Sub(now)
		if left <= 0 {
			delete(seen, n)
			continue
		}
		out.only[n] = true
		if next == 0 || left < next {
			next = left
		}
	}
	if len(seen) == 0 {
		delete(g.seen, network)
	}
	return out, next
}

// Forget drops what is remembered of a network (it is gone).
func (g *Grace) Forget(network string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.seen, network)
}
