package ovsdb

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"
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

// viewRow is a model with a name and external IDs, as the view's
// indexes read them (by field index).
type viewRow struct {
	UUID        string
	Name        string
	ExternalIDs map[string]string
}

// TestViewIndexesFollowRows drives a view table through the updates a
// monitor applies (inserts, two rows of one name and of one owner, a
// rename, an owner change, deletes) and checks after each that Named and
// KeyedEach give exactly the rows that bear each name and owner.
func TestViewIndexesFollowRows(t *testing.T) {
	const owner = "k8s.ovn.org/owner"
	vt := &viewTable{rows: map[string]model.Model{}, name: 1, named: map[string]uuidSet{}, extIDs: 2, key: owner, keyed: map[string]uuidSet{}}
	v := &View{tables: map[string]*viewTable{"T": vt}}
	row := func(uuid, name, own string) *viewRow {
		return &viewRow{UUID: uuid, Name: name, ExternalIDs: map[string]string{owner: own, "other": "x"}}
	}
	type state struct{ Named, Keyed map[string][]string }
	// want is what the rows say.
	want := func() state {
		st := state{Named: map[string][]string{}, Keyed: map[string][]string{}}
		for u, m := range vt.rows {
			r := m.(*viewRow)
			st.Named[r.Name] = append(st.Named[r.Name], u)
			st.Keyed[r.ExternalIDs[owner]] = append(st.Keyed[r.ExternalIDs[owner]], u)
		}
		return st
	}
	// got is what the view's readers say.
	got := func() state {
		st := state{Named: map[string][]string{}, Keyed: map[string][]string{}}
		for name := range vt.named {
			uuids, _ := v.Named("T", name)
			st.Named[name] = uuids
		}
		values, _ := v.KeyValues("T", owner)
		for _, val := range values {
			v.KeyedEach(owner, val, func(table, uuid string, m model.Model) {
				if m == nil || m.(*viewRow).UUID != uuid {
					t.Errorf("KeyedEach gave %s with row %v", uuid, m)
				}
				st.Keyed[val] = append(st.Keyed[val], uuid)
			})
		}
		return st
	}
	sorted := cmp.Transformer("sort", func(in []string) []string {
		out := slices.Clone(in)
		slices.Sort(out)
		return out
	})
	for i, step := range []struct {
		uuid string
		m    *viewRow // nil: deleted
	}{
		{"u1", row("u1", "sw", "net:a")},
		{"u2", row("u2", "sw", "net:a")},
		{"u3", row("u3", "lr", "net:b")},
		{"u1", row("u1", "sw-renamed", "net:a")},
		{"u2", row("u2", "sw", "net:b")},
		{"u3", nil},
		{"u2", nil},
		{"u4", row("u4", "sw-renamed", "net:a")},
		{"u1", nil},
		{"u4", nil},
	} {
		v.mu.Lock()
		if step.m == nil {
			vt.set(step.uuid, nil)
		} else {
			vt.set(step.uuid, step.m)
		}
		v.mu.Unlock()
		if d := cmp.Diff(want(), got(), sorted); d != "" {
			t.Fatalf("after step %d (%s): indexes (-rows +view):\n%s", i, step.uuid, d)
		}
	}
	if len(vt.named) != 0 || len(vt.keyed) != 0 {
		t.Fatalf("emptied indexes keep %v and %v", vt.named, vt.keyed)
	}
}
