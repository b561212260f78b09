// Package allocator holds the pure allocators of ovn-udn's cluster-wide
// resources: integer IDs (network IDs, node IDs, tunnel keys), per-node subnets
// carved from a network's subnet, and the addresses derived from IDs (transit,
// join and masquerade addresses). Nothing here talks to an API server: the
// controllers in internal/clustermanager/netalloc persist and recover the state.
package allocator

import (
	"errors"
	"fmt"
	"sync"
)

// ErrExhausted is returned when no ID is left in the range.
var ErrExhausted = errors.New("range exhausted")

// IDs hands out integers in [min, max] to names: a name keeps its ID until it is
// released. Allocation is next-fit (it continues after the last ID handed out),
// so a released ID is reused as late as possible: a zone that has not yet
// removed the rows of a deleted network never sees its ID reappear at once.
// IDs is safe for concurrent use.
type IDs struct {
	mu       sync.Mutex
	min, max int
	// reserveMax is the largest ID Reserve accepts (max unless
	// NewIDsKeeping widened it); above counts the IDs held above max.
	reserveMax, above int
	byName            map[string]int
	byID              map[int]string
	next              int
}

// NewIDs returns an allocator of [min, max]. An empty range (max < min, from
// a misconfiguration) holds nothing: Allocate reports ErrExhausted and Reserve
// an ID outside the range, rather than the caller panicking.
func NewIDs(min, max int) *IDs {
	return NewIDsKeeping(min, max, max)
}

// NewIDsKeeping returns an allocator of [min, max] that also keeps IDs up to
// keepMax found in persisted state (Reserve): how a range narrowed by a
// release still honours what an older one handed out, without handing
// such IDs out again.
func NewIDsKeeping(lo, hi, keepMax int) *IDs {
	return &IDs{min: lo, max: hi, reserveMax: max(hi, keepMax), byName: map[string]int{}, byID: map[int]string{}, next: lo}
}

// Allocate returns name's ID, allocating one if it has none.
func (a *IDs) Allocate(name string) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id, ok := a.byName[name]; ok {
		return id, nil
	}
	size := a.max - a.min + 1
	if len(a.byID)-a.above >= size {
		return 0, fmt.Errorf("allocating for %s: all %d IDs in [%d, %d] are in use: %w", name, size, a.min, a.max, ErrExhausted)
	}
	id := a.next
	for {
		if _, taken := a.byID[id]; !taken {
			break
		}
		id++
		if id > a.max {
			id = a.min
		}
	}
	a.assign(name, id)
	return id, nil
}

// Reserve records that name holds id, as found in persisted state. It fails if
// id is out of range or held by another name, and replaces a different ID name
// held before (releasing it).
func (a *IDs) Reserve(name string, id int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id < a.min || id > a.reserveMax {
		return fmt.Errorf("ID %d of %s is outside [%d, %d]", id, name, a.min, a.reserveMax)
	}
	if holder, ok := a.byID[id]; ok && holder != name {
		return fmt.Errorf("ID %d of %s is already held by %s", id, name, holder)
	}
	if old, ok := a.byName[name]; ok && old != id {
		a.drop(old)
	}
	if _, had := a.byID[id]; !had && id > a.max {
		a.above++
	}
	a.byName[name] = id
	a.byID[id] = name
	return nil
}

// drop forgets who holds id.
func (a *IDs) drop(id int) {
	if _, ok := a.byID[id]; ok && id > a.max {
		a.above--
	}
	delete(a.byID, id)
}

func (a *IDs) assign(name string, id int) {
	a.byName[name] = id
	a.byID[id] = name
	a.next = id + 1
	if a.next > a.max {
		a.next = a.min
	}
}

// Release frees name's ID, if it has one.
func (a *IDs) Release(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id, ok := a.byName[name]; ok {
		delete(a.byName, name)
		a.drop(id)
	}
}

// Get returns name's ID.
func (a *IDs) Get(name string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := a.byName[name]
	return id, ok
}

// Holder returns the name holding id.
func (a *IDs) Holder(id int) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n, ok := a.byID[id]
	return n, ok
}

// Len is the number of IDs in use.
func (a *IDs) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byID)
}

// Names returns every name holding an ID, with its ID.
func (a *IDs) Names() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.byName))
	for n, id := range a.byName {
		out[n] = id
	}
	return out
}
