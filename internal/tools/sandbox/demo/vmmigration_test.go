package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestVMMigrationChecks: the verdicts hold the VM's losses and gaps to the
// pod that does not move in the same window (a stall of the whole machine
// shows in both), and fail when the VM alone loses.
func TestVMMigrationChecks(t *testing.T) {
	ms := func(edit func(*Migration)) []Migration {
		m := Migration{From: "node1", To: "node2", Kept: true, BlockedAnswers: 10, FirstAnswer: 150 * time.Millisecond,
			Gap: 200 * time.Millisecond, OutsideGap: 150 * time.Millisecond, ControlGap: 50 * time.Millisecond,
			ControlFirstStall: 50 * time.Millisecond, ControlAnswered: 25, Activated: true, GARP: true, NeighbourKept: true}
		edit(&m)
		return []Migration{m}
	}
	failing := func(ms []Migration) []string {
		var out []string
		for _, c := range VMMigrationChecks(ms) {
			if !c.Pass() {
				out = append(out, strings.SplitN(c.Name, " (", 2)[0])
			}
		}
		return out
	}
	const (
		lost     = "once every zone has moved the port, every attempt reaches the target, until the source pod has gone and after"
		first    = "after its RARP the target answers, the source pod still running"
		gap      = "longest gap in answers, the source silent from the RARP on, probing every 50 ms"
		outside  = "the same through the NodePort on node1, from outside"
		blocked  = "until the VM announces itself the source answers, the target's binding blocked"
		activate = "the target's zone records the activation on its pod"
	)
	for _, tc := range []struct {
		name string
		edit func(*Migration)
		want []string
	}{
		{"a quiet migration", func(*Migration) {}, nil},
		{"the VM alone loses 2 attempts after the move", func(m *Migration) { m.SourceLate = 2 }, nil},
		{"the VM alone loses 3 attempts after the move", func(m *Migration) { m.SourceLate = 3 }, []string{lost}},
		{"a stall: the VM loses twice the pod that does not move, and 2", func(m *Migration) { m.SourceLate, m.ControlLate = 12, 5 }, nil},
		{"a stall: the VM loses one more", func(m *Migration) { m.SourceLate, m.ControlLate = 13, 5 }, []string{lost}},
		{"the pod that does not move answered too few to compare with", func(m *Migration) { m.ControlAnswered = minControlAnswers - 1 }, []string{lost}},
		{"first answer and gaps at the bound", func(m *Migration) {
			m.FirstAnswer, m.Gap, m.OutsideGap = moveBound+m.ControlFirstStall, moveBound+m.ControlGap, moveBound+m.ControlGap
		}, nil},
		{"first answer just past the bound", func(m *Migration) { m.FirstAnswer = moveBound + m.ControlFirstStall + time.Millisecond }, []string{first}},
		{"the gap from node3 just past the bound", func(m *Migration) { m.Gap = moveBound + m.ControlGap + time.Millisecond }, []string{gap}},
		{"the gap from outside just past the bound", func(m *Migration) { m.OutsideGap = moveBound + m.ControlGap + time.Millisecond }, []string{outside}},
		{"as slow, in stalls as long", func(m *Migration) {
			m.FirstAnswer, m.ControlFirstStall = 4*time.Second, 1500*time.Millisecond
			m.Gap, m.OutsideGap, m.ControlGap = 4*time.Second, 4*time.Second, 1500*time.Millisecond
		}, nil},
		{"a stall elsewhere in the window does not excuse a slow first answer", func(m *Migration) {
			m.FirstAnswer, m.ControlGap = 4*time.Second, 2*time.Second
		}, []string{first}},
		{"the target never answered", func(m *Migration) { m.FirstAnswer = 0 }, []string{first}},
		{"the target answered before the RARP", func(m *Migration) { m.TargetEarly = 1 }, []string{blocked}},
		{"no activation recorded", func(m *Migration) { m.Activated = false }, []string{activate}},
	} {
		if diff := cmp.Diff(tc.want, failing(ms(tc.edit))); diff != "" {
			t.Errorf("%s: failing rows (-want +got):\n%s", tc.name, diff)
		}
	}
}
