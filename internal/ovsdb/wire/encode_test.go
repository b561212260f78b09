package wire

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/ovsdb"
)

func ptr[T any](v T) *T { return &v }

// encodeCases are operations of every kind the Syncer and the northd gate
// send, and values of every kind a row holds.
var encodeCases = []ovsdb.Operation{
	{Op: ovsdb.OperationInsert, Table: "Logical_Switch_Port", UUIDName: "lsp_pod_1", Row: ovsdb.Row{
		"name":             "udn_tenant-a_pod-1",
		"addresses":        ovsdb.OvsSet{GoSet: []any{"0a:58:0a:80:00:05 10.128.0.5"}},
		"port_security":    ovsdb.OvsSet{GoSet: []any{"a", "b \"quoted\" \\ </tag> & \u2028"}},
		"tag_request":      ovsdb.OvsSet{GoSet: []any{}},
		"external_ids":     ovsdb.OvsMap{GoMap: map[any]any{"ovn-udn/owner": "pod:ns/p", "ovn-udn/id": "lsp/p", "k8s.ovn.org/network": "tenant-a"}},
		"options":          ovsdb.OvsMap{GoMap: map[any]any{}},
		"enabled":          true,
		"tag":              42,
		"priority":         int64(-7),
		"weight":           1.5,
		"ha_chassis_group": ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-0000000000aa"},
		"peer":             ovsdb.UUID{GoUUID: "named_row"},
		"dynamic":          ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-0000000000ab"}, ovsdb.UUID{GoUUID: "x"}}},
		"refs":             ovsdb.OvsMap{GoMap: map[any]any{ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-0000000000ac"}: int64(3)}},
		"odd\x01\"key":     "ctl \x00\x1f\t\n\r chars, bad utf-8 \xff\xc3, ünïcödé 😀",
		"nothing":          nil,
	}},
	{Op: ovsdb.OperationUpdate, Table: "Logical_Router", Row: ovsdb.Row{"options": ovsdb.OvsMap{GoMap: map[any]any{"chassis": "node-a"}}},
		Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-000000000001"}}}},
	{Op: ovsdb.OperationMutate, Table: "Logical_Switch",
		Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionEqual, Value: "sw0"}},
		Mutations: []ovsdb.Mutation{
			{Column: "ports", Mutator: ovsdb.MutateOperationInsert, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "lsp_pod_1"}}}},
			{Column: "ports", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-000000000002"}, ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-000000000003"}}}},
			{Column: "other_config", Mutator: ovsdb.MutateOperationDelete, Value: ovsdb.OvsSet{GoSet: []any{"subnet"}}},
			{Column: "nb_cfg", Mutator: ovsdb.MutateOperationAdd, Value: 1},
		}},
	{Op: ovsdb.OperationDelete, Table: "ACL", Where: []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: "6b1d2c3a-0000-4000-8000-000000000004"}}}},
	{Op: ovsdb.OperationSelect, Table: "NB_Global", Columns: []string{"nb_cfg", "sb_cfg"}},
	{Op: ovsdb.OperationSelect, Table: "NB_Global", Where: []ovsdb.Condition{{Column: "nb_cfg", Function: ovsdb.ConditionGreaterThan, Value: 3}}},
	{Op: ovsdb.OperationWait, Table: "Logical_Switch", Timeout: ptr(0), Until: "==", Columns: []string{"name"},
		Rows: []ovsdb.Row{{"name": "sw0"}, {"name": "sw1"}}, Where: []ovsdb.Condition{{Column: "name", Function: ovsdb.ConditionIncludes, Value: ovsdb.OvsSet{GoSet: []any{"sw0", "sw1"}}}}},
	{Op: ovsdb.OperationComment, Comment: ptr("ovn-udn: network tenant-a")},
	{Op: ovsdb.OperationCommit, Durable: ptr(false)},
	{Op: ovsdb.OperationAssert, Lock: ptr("ovn_northd")},
	{Op: "update", Table: "T", UUID: "6b1d2c3a-0000-4000-8000-000000000005", Row: ovsdb.Row{"u8": uint8(7), "f32": float32(0.5), "big": 1e21, "tiny": 1e-7}},
}

// normalized decodes JSON generically, with the pairs of every ["map", ...]
// sorted (Go maps are encoded in no order).
func normalized(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
			if len(v) == 2 && v[0] == "map" {
				pairs, _ := v[1].([]any)
				sort.Slice(pairs, func(i, j int) bool {
					a, _ := json.Marshal(pairs[i])
					b, _ := json.Marshal(pairs[j])
					return string(a) < string(b)
				})
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	return walk(v)
}

func TestAppendTransactLikeLibovsdb(t *testing.T) {
	got, err := AppendTransact(nil, 17, "OVN_Northbound", encodeCases)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(map[string]any{"id": 17, "method": "transact",
		"params": ovsdb.NewTransactArgs("OVN_Northbound", encodeCases...)})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(normalized(t, want), normalized(t, got)); d != "" {
		t.Errorf("encoded differently from libovsdb (-libovsdb +here):\n%s", d)
	}
	// What the server reads back is what was meant.
	msg, err := ParseMessage(got)
	if err != nil || msg.Method != "transact" || msg.ID != 17.0 {
		t.Fatalf("not a transact request: %+v, %v", msg, err)
	}
}

func TestAppendTransactErrors(t *testing.T) {
	for _, v := range []any{func() {}, make(chan int), ovsdb.OvsSet{GoSet: []any{1.0, func() {}}}} {
		if _, err := AppendTransact(nil, 1, "db", []ovsdb.Operation{{Op: "insert", Table: "T", Row: ovsdb.Row{"c": v}}}); err == nil {
			t.Errorf("%T encoded without error", v)
		}
	}
}

// FuzzAppendString: a string decodes back as encoding/json's encoding of
// it does.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\x00\x1f\x7f", "\xff\xfe", "ü😀\u2028", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		var a, b string
		if err := json.Unmarshal(want, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(appendString(nil, s), &b); err != nil {
			t.Fatalf("%q encoded as %s: %v", s, appendString(nil, s), err)
		}
		if a != b {
			t.Fatalf("%q: decodes as %q, encoding/json's as %q", s, b, a)
		}
	})
}
