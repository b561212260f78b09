package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/ovsdb"
)

var resultCases = []string{
	`[{"uuid":["uuid","6b1d2c3a-0000-4000-8000-000000000001"]},{"count":1},{},{"count":0}]`,
	`[{"rows":[{"name":"sw3","other_config":["map",[["subnet","10.0.0.0/24"]]],"ports":["set",[]]}]}]`,
	`[{"count":1},{"error":"referential integrity violation","details":"cannot delete \"x\""},null]`,
	`[{"error":"constraint violation"}]`, `[]`, `null`, ` [ { "count" : 12 } , { "rows" : [ ] } ] `,
	// Shapes left to encoding/json.
	`[{"Count":2}]`, `[{"uuid":["named-uuid","x","y"]}]`, `[{"rows":[null]}]`, `[{"rows":null}]`,
	`[{"other":1}]`, `[{"count":1,"count":3}]`, `[{"uuid":["uuid",""]}]`,
	// Numbers out of float64's range.
	`[{"rows":[{"a":1e400,"b":["set",[1e400]]}]},{"other":1e999}]`,
}

func referenceResults(in []byte) (out []ovsdb.OperationResult, err error, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	err = json.Unmarshal(in, &out)
	return out, err, true
}

func TestDecodeResultsLikeLibovsdb(t *testing.T) {
	for _, in := range resultCases {
		want, wantErr, ok := referenceResults([]byte(in))
		if !ok || wantErr != nil {
			t.Fatalf("%s: libovsdb does not decode it (%v)", in, wantErr)
		}
		got, err := DecodeResults([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-libovsdb +here):\n%s", in, d)
		}
	}
	for _, in := range resultCases[:6] {
		if _, ok := fastResults([]byte(in)); !ok {
			t.Errorf("%s: not on the fast path", in)
		}
	}
}

// FuzzDecodeResults: DecodeResults decodes what encoding/json decodes, to
// the same results, and rejects what it rejects.
func FuzzDecodeResults(f *testing.F) {
	for _, in := range resultCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr, ok := referenceResults(in)
		if !ok {
			return
		}
		got, err := DecodeResults(in)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v here, %v from encoding/json", in, err, wantErr)
		}
		if err == nil {
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("%q (-libovsdb +here):\n%s", in, d)
			}
		}
	})
}
