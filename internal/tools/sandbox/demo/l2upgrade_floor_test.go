package demo

import "testing"

// TestLossWithinFloor: a step's lost probes pass only when none were lost,
// or when the same paths lost at least half that rate with nothing moving.
func TestLossWithinFloor(t *testing.T) {
	for _, c := range []struct {
		name                                 string
		lost, probes, floorLost, floorProbes int
		want                                 bool
	}{
		{"nothing lost", 0, 400, 0, 300, true},
		{"lost with a clean floor", 1, 400, 0, 300, false},
		{"no floor measured", 10, 400, 0, 0, false},
		{"a loaded machine, within twice the floor", 270, 1349, 40, 300, true},
		{"more than twice the floor", 270, 1349, 20, 300, false},
	} {
		s := UpgradeStep{Probes: c.probes, Lost: map[string]int{"a → b": c.lost}, FloorLost: c.floorLost, FloorProbes: c.floorProbes}
		if got := s.LossWithinFloor(); got != c.want {
			t.Errorf("%s: LossWithinFloor() = %v, want %v", c.name, got, c.want)
		}
	}
}
