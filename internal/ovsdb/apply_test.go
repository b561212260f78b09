package ovsdb

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

func TestToggled(t *testing.T) {
	many := []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"} // over 8: the hashed path
	for _, tc := range []struct {
		name            string
		cur, diff, want []string
	}{
		{"add one", []string{"a", "b"}, []string{"c"}, []string{"a", "b", "c"}},
		{"remove one", []string{"a", "b", "c"}, []string{"b"}, []string{"a", "c"}},
		{"add and remove", []string{"a", "b"}, []string{"b", "c"}, []string{"a", "c"}},
		{"emptied", []string{"a"}, []string{"a"}, nil},
		{"onto nothing", nil, []string{"a"}, []string{"a"}},
		{"many added", []string{"a"}, many, append([]string{"a"}, many...)},
		{"many removed", append([]string{"a"}, many...), many, []string{"a"}},
		{"an element given twice is added once", nil, []string{"x", "x"}, []string{"x"}},
	} {
		if d := cmp.Diff(tc.want, toggled(tc.cur, tc.diff)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

func TestMapDiffApplied(t *testing.T) {
	cur := map[string]string{"keep": "1", "drop": "2", "change": "3"}
	got, ok := mapDiffApplied(cur, ovsdb.OvsMap{GoMap: map[any]any{"drop": "2", "change": "4", "new": "5"}})
	if want := map[string]string{"keep": "1", "change": "4", "new": "5"}; !ok || !cmp.Equal(want, got) {
		t.Errorf("got %v %v, want %v", got, ok, want)
	}
	if cur["drop"] != "2" || cur["change"] != "3" {
		t.Errorf("the current map was changed in place: %v", cur)
	}
	if got, ok := mapDiffApplied(map[string]string{"a": "1"}, ovsdb.OvsMap{GoMap: map[any]any{"a": "1"}}); !ok || got != nil {
		t.Errorf("emptied: %#v %v, want nil as libovsdb leaves it", got, ok)
	}
	if got, ok := mapDiffApplied(cur, wire.StringMap{"drop": "2", "change": "4", "new": "5"}); !ok || !cmp.Equal(map[string]string{"keep": "1", "change": "4", "new": "5"}, got) {
		t.Errorf("a wire.StringMap diff: got %v %v", got, ok)
	}
	if got, ok := stringElems(wire.StringSet{"a", "b"}); !ok || !cmp.Equal([]string{"a", "b"}, got) {
		t.Errorf("a wire.StringSet diff: got %v %v", got, ok)
	}
	if _, ok := mapDiffApplied(cur, ovsdb.OvsMap{GoMap: map[any]any{"n": 1.0}}); ok {
		t.Error("a map of numbers was applied as strings")
	}
}

func TestDialAddress(t *testing.T) {
	for in, want := range map[string][2]string{
		"tcp:127.0.0.1:6641":    {"tcp", "127.0.0.1:6641"},
		"unix:/run/ovn/nb.sock": {"unix", "/run/ovn/nb.sock"},
	} {
		if n, a, err := dialAddress(in); err != nil || n != want[0] || a != want[1] {
			t.Errorf("%s: %s %s %v", in, n, a, err)
		}
	}
	for _, in := range []string{"ssl:127.0.0.1:6641", "tcp:a:1,tcp:b:1", "ptcp:6641", ""} {
		if _, _, err := dialAddress(in); err != errUnsupportedEndpoint {
			t.Errorf("%q: %v, want errUnsupportedEndpoint (left to libovsdb)", in, err)
		}
	}
}
