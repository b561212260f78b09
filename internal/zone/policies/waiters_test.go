package policies

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// TestPortWaiters: what a key waits for is replaced on each wait, so a port
// that never comes (its pod deleted first) is not held for ever; ready
// hands out the keys of ports that exist and forgets them.
func TestPortWaiters(t *testing.T) {
	var w portWaiters
	p, q := feature.PolicyKey("a", "p"), feature.PolicyKey("a", "q")
	state := func() map[string][]string {
		out := map[string][]string{}
		for p, keys := range w.byPort {
			for k := range keys {
				out[p] = append(out[p], k.String())
			}
			slices.Sort(out[p])
		}
		return out
	}
	exists := func(ports ...string) func(string) bool {
		return func(p string) bool { return slices.Contains(ports, p) }
	}
	w.wait(p, []string{"port1", "port2"})
	w.wait(q, []string{"port2"})
	if diff := cmp.Diff(map[string][]string{"port1": {"np:a/p"}, "port2": {"np:a/p", "np:a/q"}}, state()); diff != "" {
		t.Fatalf("after two waits (-want +got):\n%s", diff)
	}
	// port1's pod was deleted before its port came: p now waits for port2 only.
	w.wait(p, []string{"port2"})
	if diff := cmp.Diff(map[string][]string{"port2": {"np:a/p", "np:a/q"}}, state()); diff != "" {
		t.Fatalf("after p waits for port2 only (-want +got):\n%s", diff)
	}
	if got := w.ready(exists("port1")); len(got) != 0 {
		t.Fatalf("port1 woke %v, nobody waits for it", got)
	}
	got := owners(w.ready(exists("port2")))
	slices.Sort(got)
	if diff := cmp.Diff([]string{"np:a/p", "np:a/q"}, got); diff != "" {
		t.Fatalf("port2 woke (-want +got):\n%s", diff)
	}
	if len(w.byPort) != 0 || len(w.byKey) != 0 {
		t.Fatalf("left after every port came: byPort %v, byKey %v", w.byPort, w.byKey)
	}
	// A key that waits for nothing any more leaves nothing behind.
	w.wait(p, []string{"port3"})
	w.wait(p, nil)
	if len(w.byPort) != 0 || len(w.byKey) != 0 {
		t.Fatalf("left after the key stopped waiting: byPort %v, byKey %v", w.byPort, w.byKey)
	}
}

// owners spells keys as their OVSDB owners.
func owners(keys []feature.Key) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}
