package allocator

import (
	"errors"
	"testing"
)

func TestIDsAllocateIsStablePerName(t *testing.T) {
	a := NewIDs(1, 3)
	x, _ := a.Allocate("x")
	again, _ := a.Allocate("x")
	if x != 1 || again != 1 {
		t.Fatalf("x got %d then %d, want 1 twice", x, again)
	}
}

func TestIDsNextFitDelaysReuse(t *testing.T) {
	a := NewIDs(1, 3)
	for _, n := range []string{"a", "b"} {
		if _, err := a.Allocate(n); err != nil {
			t.Fatal(err)
		}
	}
	a.Release("a") // 1 is free, but 3 was never used: it comes first.
	if id, _ := a.Allocate("c"); id != 3 {
		t.Fatalf("c got %d, want 3 (next fit)", id)
	}
	if id, _ := a.Allocate("d"); id != 1 {
		t.Fatalf("d got %d, want the released 1 after wrapping", id)
	}
	if _, err := a.Allocate("e"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("e: err = %v, want ErrExhausted", err)
	}
	if got, want := a.Len(), 3; got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
}

func TestIDsReserve(t *testing.T) {
	a := NewIDs(1, 10)
	if err := a.Reserve("x", 5); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve("y", 5); err == nil {
		t.Fatal("reserving an ID held by another name succeeded")
	}
	if err := a.Reserve("y", 11); err == nil {
		t.Fatal("reserving an ID outside the range succeeded")
	}
	if err := a.Reserve("x", 6); err != nil {
		t.Fatal(err)
	}
	if h, ok := a.Holder(5); ok {
		t.Fatalf("5 still held by %s after x moved to 6", h)
	}
	if id, _ := a.Get("x"); id != 6 {
		t.Fatalf("x = %d, want 6", id)
	}
}

func TestTransitSwitchKey(t *testing.T) {
	if got := TransitSwitchKey(0); got != 16711680 {
		t.Errorf("TransitSwitchKey(0) = %d, want 16711680 (2^24-2^16)", got)
	}
	if got := TransitSwitchKey(4095); got != FirstAllocatedKey-1 {
		t.Errorf("TransitSwitchKey(4095) = %d, want %d: legacy and allocated ranges must touch, not overlap", got, FirstAllocatedKey-1)
	}
}

// TestEmptyRange: an empty range is not a panic, it is exhausted.
func TestEmptyRange(t *testing.T) {
	ids := NewIDs(5, 4)
	if _, err := ids.Allocate("a"); !errors.Is(err, ErrExhausted) {
		t.Errorf("Allocate in an empty range: err = %v, want ErrExhausted", err)
	}
	if err := ids.Reserve("a", 5); err == nil {
		t.Error("Reserve in an empty range succeeded")
	}
}

// TestIDsKeeping: an allocator narrowed by a release keeps the IDs above
// its range that persisted state holds, never hands them out, and counts
// only its range when it tells exhaustion.
func TestIDsKeeping(t *testing.T) {
	a := NewIDsKeeping(1, 3, 5)
	if err := a.Reserve("old", 5); err != nil {
		t.Fatalf("reserving a kept ID: %v", err)
	}
	if err := a.Reserve("bad", 6); err == nil {
		t.Error("reserved 6, above what is kept")
	}
	for _, n := range []string{"a", "b", "c"} {
		id, err := a.Allocate(n)
		if err != nil || id > 3 {
			t.Fatalf("Allocate(%s) = %d, %v; want an ID in [1, 3]", n, id, err)
		}
	}
	if _, err := a.Allocate("d"); !errors.Is(err, ErrExhausted) {
		t.Errorf("a fourth allocation: %v, want exhaustion", err)
	}
	a.Release("old")
	a.Release("a")
	if id, err := a.Allocate("d"); err != nil || id > 3 {
		t.Errorf("after releases: %d, %v", id, err)
	}
}
