package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// TestNativeLikeOvs: a StringMap and a StringSet encode, through
// AppendTransact and through encoding/json (libovsdb's transact), as the
// ovsdb.OvsMap and ovsdb.OvsSet of the same strings encode through
// libovsdb.
func TestNativeLikeOvs(t *testing.T) {
	odd := "b \"quoted\" \\ </tag> & \u2028 \x01 \xff"
	for _, tc := range []struct {
		name   string
		native any
		ovs    any
	}{
		{"map", StringMap{"ovn-udn/owner": "pod:ns/p", "k8s.ovn.org/network": "tenant-a", odd: odd},
			ovsdb.OvsMap{GoMap: map[any]any{"ovn-udn/owner": "pod:ns/p", "k8s.ovn.org/network": "tenant-a", odd: odd}}},
		{"empty map", StringMap{}, ovsdb.OvsMap{GoMap: map[any]any{}}},
		{"set", StringSet{"0a:58:0a:80:00:05 10.128.0.5", odd}, ovsdb.OvsSet{GoSet: []any{"0a:58:0a:80:00:05 10.128.0.5", odd}}},
		{"set of one", StringSet{"router"}, ovsdb.OvsSet{GoSet: []any{"router"}}},
		{"empty set", StringSet{}, ovsdb.OvsSet{GoSet: []any{}}},
	} {
		op := func(v any) []ovsdb.Operation {
			return []ovsdb.Operation{{Op: ovsdb.OperationInsert, Table: "T", Row: ovsdb.Row{"c": v}}}
		}
		want, err := json.Marshal(ovsdb.NewTransactArgs("db", op(tc.ovs)...))
		if err != nil {
			t.Fatal(err)
		}
		viaJSON, err := json.Marshal(ovsdb.NewTransactArgs("db", op(tc.native)...))
		if err != nil {
			t.Fatal(err)
		}
		here, err := AppendTransact(nil, 1, "db", op(tc.native))
		if err != nil {
			t.Fatal(err)
		}
		msg, err := ParseMessage(here)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(normalized(t, want), normalized(t, viaJSON)); d != "" {
			t.Errorf("%s: encoding/json (-OvsMap/OvsSet +native):\n%s", tc.name, d)
		}
		if d := cmp.Diff(normalized(t, want), normalized(t, msg.Params)); d != "" {
			t.Errorf("%s: AppendTransact (-OvsMap/OvsSet +native):\n%s", tc.name, d)
		}
	}
}
