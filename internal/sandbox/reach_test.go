package sandbox

import (
	"bytes"
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
