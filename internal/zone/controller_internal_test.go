package zone

import (
	"sync"
	"sync/atomic"
	"testing"
)

// keyLocks lets one reconcile of a key run at a time, others in parallel,
// and keeps nothing once the key is idle.
func TestKeyLocks(t *testing.T) {
	var k keyLocks
	var inside [2]atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []string{"net:a", "pod:b"}[i%2]
			unlock := k.lock(key)
			defer unlock()
			if n := inside[i%2].Add(1); n != 1 {
				t.Errorf("%d reconciles of %s at once", n, key)
			}
			inside[i%2].Add(-1)
		}()
	}
	wg.Wait()
	if len(k.m) != 0 {
		t.Fatalf("%d keys kept after every reconcile ended", len(k.m))
	}
}
