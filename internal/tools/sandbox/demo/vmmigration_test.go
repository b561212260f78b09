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
			Activated: true, GARP: true, NeighbourKept: true}
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
		lost     = "once every zone has moved the port, every attempt reaches the target, through the source pod's deletion"
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
		{"the VM alone loses attempts after the move", func(m *Migration) { m.SourceLate = 5 }, []string{lost}},
		{"a stall loses as many to the pod that does not move", func(m *Migration) { m.SourceLate, m.ControlLate = 7, 5 }, nil},
		{"slow beyond the bound", func(m *Migration) { m.FirstAnswer, m.Gap, m.OutsideGap = 4*time.Second, 4*time.Second, 5*time.Second },
			[]string{first, gap, outside}},
		{"as slow, in a stall as long", func(m *Migration) {
			m.FirstAnswer, m.Gap, m.OutsideGap, m.ControlGap = 4*time.Second, 4*time.Second, 4*time.Second, 1500*time.Millisecond
		}, nil},
		{"the target never answered", func(m *Migration) { m.FirstAnswer = 0 }, []string{first}},
		{"the target answered before the RARP", func(m *Migration) { m.TargetEarly = 1 }, []string{blocked}},
		{"no activation recorded", func(m *Migration) { m.Activated = false }, []string{activate}},
	} {
		if diff := cmp.Diff(tc.want, failing(ms(tc.edit))); diff != "" {
			t.Errorf("%s: failing rows (-want +got):\n%s", tc.name, diff)
		}
	}
}
