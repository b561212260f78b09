package demo

import (
	"testing"
	"time"
)

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

// TestUnbroken: beyond the floor, a step passes only when no path went
// silent for longer than UpgradeGapBound.
func TestUnbroken(t *testing.T) {
	for _, c := range []struct {
		name string
		lost int
		gaps map[string]time.Duration
		want bool
	}{
		{"nothing lost", 0, nil, true},
		{"scattered timeouts", 300, map[string]time.Duration{"a → b": 900 * time.Millisecond, "b → a": 1200 * time.Millisecond}, true},
		{"one path stopped", 300, map[string]time.Duration{"a → b": 900 * time.Millisecond, "b → a": 12 * time.Second}, false},
		{"lost, no gaps measured", 300, nil, false},
	} {
		s := UpgradeStep{Probes: 1000, Lost: map[string]int{"a → b": c.lost}, FloorProbes: 100, Gaps: c.gaps}
		if got := s.Unbroken(); got != c.want {
			t.Errorf("%s: Unbroken() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestLongestSilence: a path never answered is silent for the whole
// window, one broken from some moment on until the window's end, and only
// answers ok accepts count.
func TestLongestSilence(t *testing.T) {
	from := time.Unix(1000, 0)
	to := from.Add(10 * time.Second)
	at := func(ms int, answer string) ProbeLine {
		return ProbeLine{Began: from.Add(time.Duration(ms) * time.Millisecond), Answer: answer}
	}
	ok := func(a string) bool { return a == "b" }
	for _, c := range []struct {
		name  string
		lines []ProbeLine
		want  time.Duration
	}{
		{"never answered", []ProbeLine{at(100, "error: timeout"), at(5000, "error: timeout")}, 10 * time.Second},
		{"nothing at all", nil, 10 * time.Second},
		{"broken from 2 s on", []ProbeLine{at(0, "b"), at(1000, "b"), at(2000, "b"), at(3000, "error: x")}, 8 * time.Second},
		{"answered late at first", []ProbeLine{at(4000, "b"), at(9000, "b"), at(10000, "b")}, 5 * time.Second},
		{"a wrong answer is no answer", []ProbeLine{at(0, "b"), at(5000, "c"), at(10000, "b")}, 10 * time.Second},
		{"answered throughout", []ProbeLine{at(0, "b"), at(2500, "b"), at(5000, "b"), at(7500, "b"), at(10000, "b")}, 2500 * time.Millisecond},
	} {
		p := &Prober{all: c.lines}
		if got := p.LongestSilence(from, to, ok); got != c.want {
			t.Errorf("%s: LongestSilence = %s, want %s", c.name, got, c.want)
		}
	}
}
