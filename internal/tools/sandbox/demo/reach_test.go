package demo

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReachabilityDiffAndPrint(t *testing.T) {
	pods := []string{"x/a", "x/b", "y/a"}
	probes := []ReachProbe{{"tcp", 80}, {"udp", 80}}
	want := NewReachability(pods, probes)
	for i := range pods {
		for j := range pods {
			want.Set(i, j, 0, i != j)
			want.Set(i, j, 1, i != j && j != 2)
		}
	}
	got := NewReachability(pods, probes)
	got.Nodes = []string{"node1", "node2", "node1"}
	for i := range pods {
		for j := range pods {
			got.Set(i, j, 0, i != j && i != 1)
			got.Set(i, j, 1, i != j && j != 2)
		}
	}
	got.Set(0, 0, 1, true) // a pod and itself: not compared
	got.Note(1, 2, 0, "i/o timeout")
	mismatches, err := want.Mismatches(got)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range mismatches {
		lines = append(lines, m.String())
	}
	if diff := cmp.Diff([]string{"x/b -> x/a tcp/80: want reached, got blocked", "x/b -> y/a tcp/80: want reached, got blocked (i/o timeout)"}, lines); diff != "" {
		t.Errorf("Mismatches (-want +got):\n%s", diff)
	}
	if _, err := want.Mismatches(NewReachability(pods[:2], probes)); err == nil {
		t.Errorf("Mismatches of matrices of different pods: no error")
	}
	var out bytes.Buffer
	if err := got.Print(&out, want); err != nil {
		t.Fatal(err)
	}
	wantOut := `rows: from; columns: to; cells: tcp/80 udp/80 (. reached, X blocked); * differs
              1    2   3
1  x/a@node1  --   ..  .X
2  x/b@node2  X.*  --  XX*
3  y/a@node1  ..   ..  --
`
	if diff := cmp.Diff(wantOut, out.String()); diff != "" {
		t.Errorf("Print (-want +got):\n%s", diff)
	}
}

// Reach hands each source pod's answers to its own goroutine, and all of
// them write cells of one matrix; a map of notes crashed CI with
// "concurrent map writes". Every cell written at once must be kept.
func TestReachabilityConcurrentCells(t *testing.T) {
	pods := make([]string, 40)
	for i := range pods {
		pods[i] = fmt.Sprintf("x/p%d", i)
	}
	probes := []ReachProbe{{"tcp", 80}}
	want, got := NewReachability(pods, probes), NewReachability(pods, probes)
	var wg sync.WaitGroup
	for i := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range pods {
				want.Set(i, j, 0, i != j)
				if i != j {
					got.Note(i, j, 0, "answered by "+pods[(j+1)%len(pods)])
				}
			}
		}()
	}
	wg.Wait()
	ms, err := want.Mismatches(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(pods)*(len(pods)-1) {
		t.Fatalf("%d mismatches, want %d", len(ms), len(pods)*(len(pods)-1))
	}
	for _, m := range ms {
		if !strings.HasPrefix(m.Note, "answered by ") {
			t.Fatalf("mismatch %s lost its note", m)
		}
	}
}
