package ovsdb

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUUIDSet(t *testing.T) {
	members := func(s uuidSet) []string {
		var out []string
		s.each(func(u string) { out = append(out, u) })
		slices.Sort(out)
		return out
	}
	type step struct {
		add, remove string
		want        []string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one member stays inline", []step{
			{add: "a", want: []string{"a"}},
			{add: "a", want: []string{"a"}},
			{remove: "a"},
		}},
		{"the inline member goes and another takes its place", []step{
			{add: "a", want: []string{"a"}},
			{add: "b", want: []string{"a", "b"}},
			{add: "c", want: []string{"a", "b", "c"}},
			{remove: "a", want: []string{"b", "c"}},
			{remove: "b", want: []string{"c"}},
			{add: "b", want: []string{"b", "c"}},
			{remove: "c", want: []string{"b"}},
			{remove: "b"},
		}},
		{"removing a non-member changes nothing", []step{
			{remove: "x"},
			{add: "a", want: []string{"a"}},
			{remove: "x", want: []string{"a"}},
			{add: "b", want: []string{"a", "b"}},
			{remove: "x", want: []string{"a", "b"}},
			{add: "b", want: []string{"a", "b"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s uuidSet
			for i, st := range tc.steps {
				if st.add != "" {
					s.add(st.add)
				} else {
					s.remove(st.remove)
				}
				if d := cmp.Diff(st.want, members(s)); d != "" {
					t.Fatalf("step %d (%+v): members (-want +got):\n%s", i, st, d)
				}
				if s.empty() != (len(st.want) == 0) {
					t.Fatalf("step %d: empty() = %v with %v", i, s.empty(), st.want)
				}
				if len(st.want) <= 1 && s.more != nil {
					t.Fatalf("step %d: a map kept for %d members", i, len(st.want))
				}
			}
		})
	}
}

// TestViewIndexesFollowRenames drives a view table's indexes through
// several rows of one name and renames, as the monitor's updates do.
func TestViewIndexesFollowRenames(t *testing.T) {
	idx := map[string]uuidSet{}
	index(idx, "sw", "u1")
	index(idx, "sw", "u2")
	unindex(idx, "sw", "u1")
	index(idx, "sw-renamed", "u1")
	unindex(idx, "gone", "u9")
	got := map[string][]string{}
	for n, s := range idx {
		s.each(func(u string) { got[n] = append(got[n], u) })
	}
	if d := cmp.Diff(map[string][]string{"sw": {"u2"}, "sw-renamed": {"u1"}}, got); d != "" {
		t.Fatalf("index (-want +got):\n%s", d)
	}
	unindex(idx, "sw", "u2")
	if _, ok := idx["sw"]; ok {
		t.Fatal("an emptied name stays in the index")
	}
}
