// Package whereused decides which slices of primary Layer3 networks a node
// holds when cluster-manager gives them only where they are used
// (docs/allocation.md "Slices only where used"): the rule node by node
// (activity.NetworksOn) over Kubernetes objects (View), and when a slice no
// longer used is released (Usage). netalloc's node controller asks it.
package whereused

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/activity"
)

// Usage decides which slices a node holds when cluster-manager allocates a
// primary user-defined network's node slices only on the nodes that use it
// (docs/allocation.md "Slices only where used"): the networks
// activity.NetworksOn names for the node, plus, for Delay after it stopped
// using one, that one. A slice whose Delay is over is released only if the
// node's pods, read from the API server (Live), confirm it is unused. It
// remembers in memory: after a restart every slice not used is kept for
// Delay from the node's first reconcile. Safe for concurrent use.
type Usage struct {
	// Cache answers NetworksOn from the manager's caches; Live the same
	// with the node's pods read from the API server.
	Cache, Live func(ctx context.Context) activity.NodeView
	// Delay is how long a node keeps a slice of a network it stopped using.
	// cluster-manager sets it a quarter longer than the zone controllers'
	// grace period, so that zones stop rendering the node first.
	Delay time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu sync.Mutex
	// since is, by node and network, when the node was first seen holding a
	// slice of the network without using it.
	since map[string]map[string]time.Time
}

// LiveRetry is how soon Decide asks to be called again when the API server
// could not confirm a release.
const LiveRetry = 5 * time.Second

// ReleaseDelay is how long cluster-manager keeps a node's slice of a
// network the node stopped using, given the zone controllers' grace period.
func ReleaseDelay(grace time.Duration) time.Duration { return grace + grace/4 }

// Decide returns which networks node is to hold slices of: every network
// primary does not report, the ones it uses, and those of held it stopped
// using less than Delay ago; and how long until one of those is due (0:
// none).
func (u *Usage) Decide(ctx context.Context, node string, held []string, primary func(network string) bool) (use func(network string) bool, next time.Duration, err error) {
	used, err := activity.NetworksOn(u.Cache(ctx), node)
	if err != nil {
		return nil, 0, err
	}
	now := time.Now()
	if u.Now != nil {
		now = u.Now()
	}
	kept, due, next := u.keep(node, held, used, primary, now)
	if len(due) > 0 {
		// The cache may not show a pod that just landed; the API server does.
		live, err := activity.NetworksOn(u.Live(ctx), node)
		if err != nil {
			// Nothing is released unconfirmed; the rest goes on.
			log.FromContext(ctx).Error(err, "cannot confirm what the node no longer uses; its slices are kept", "node", node)
			for _, n := range due {
				kept[n] = true
			}
			return func(n string) bool { return !primary(n) || used[n] || kept[n] }, LiveRetry, nil
		}
		for _, n := range due {
			if live[n] {
				kept[n] = true
				u.forgetNetwork(node, n)
			}
		}
	}
	return func(n string) bool { return !primary(n) || used[n] || kept[n] }, next, nil
}

// keep updates what is remembered of node and returns the held networks
// kept for their delay, those whose delay is over, and the time left
// until the first kept one is due.
func (u *Usage) keep(node string, held []string, used map[string]bool, primary func(string) bool, now time.Time) (kept map[string]bool, due []string, next time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.since == nil {
		u.since = map[string]map[string]time.Time{}
	}
	since := map[string]time.Time{}
	kept = map[string]bool{}
	for _, n := range held {
		if !primary(n) || used[n] {
			continue
		}
		t, ok := u.since[node][n]
		if !ok {
			t = now
		}
		since[n] = t
		left := t.Add(u.Delay).Sub(now)
		if left <= 0 {
			due = append(due, n)
			continue
		}
		kept[n] = true
		if next == 0 || left < next {
			next = left
		}
	}
	if len(since) == 0 {
		delete(u.since, node)
	} else {
		u.since[node] = since
	}
	return kept, due, next
}

func (u *Usage) forgetNetwork(node, network string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.since[node], network)
}

// Forget drops what is remembered of a node (it is gone).
func (u *Usage) Forget(node string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.since, node)
}
