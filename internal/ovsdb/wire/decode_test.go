package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// decodeCases are <table-updates2> texts: what ovsdb-server sends, and
// shapes it does not that libovsdb still decodes somehow.
var decodeCases = []struct{ name, in string }{
	{"empty", `{}`},
	{"null", `null`},
	{"numbers out of float64's range (encoding/json leaves them nil, libovsdb keeps that)",
		`{"T":{"u":{"insert":{"a":1e400,"b":-1e999,"c":["set",[1e400,2]],"d":["map",[["k",1e400]]],"e":1}}}}`},
	{"initial row with every kind of datum", `{"Logical_Switch_Port":{"6b1d2c3a-0000-4000-8000-000000000001":{"initial":{
		"name":"udn_tenant-a_pod-1","addresses":["set",["0a:58:0a:80:00:05 10.128.0.5","router"]],
		"external_ids":["map",[["ovn-udn/owner","network:tenant-a"],["ovn-udn/id","lsp/pod-1"]]],
		"options":["map",[["requested-chassis","node-a"]]],"tag_request":["set",[]],"enabled":true,
		"up":false,"ha_chassis_group":["uuid","6b1d2c3a-0000-4000-8000-0000000000aa"],
		"dynamic_addresses":["set",[]],"port_security":"0a:58:0a:80:00:05 10.128.0.5","tag":42}}}}`},
	{"set of uuids and a single uuid", `{"Logical_Switch":{"u1":{"insert":{"ports":["set",[["uuid","a"],["uuid","b"],["named-uuid","c"]]],"acls":["uuid","d"],"load_balancer":["named-uuid","e"]}}}}`},
	{"map with uuid keys and values, numbers, booleans", `{"T":{"u":{"modify":{"m":["map",[[["uuid","k"],["uuid","v"]],[1,2.5],[true,false],[-0,1e3],["a","b"]]]}}}}`},
	{"modify, delete, null row update", `{"T":{"u1":{"modify":{"ports":["set",[["uuid","x"]]],"name":"n"}},"u2":{"delete":null},"u3":null,"u4":{}}}`},
	{"null table", `{"T":null,"U":{}}`},
	{"keys matched as encoding/json does", `{"T":{"u":{"INSERT":{"a":1},"Modify":{"b":2},"old":{"c":3},"new":{"d":4},"other":[1,{"x":null}]}}}`},
	{"exact name wins over a folded one", `{"T":{"u":{"Insert":{"a":1},"insert":{"b":2}}}}`},
	{"repeated members: the last wins", `{"T":{"u":{"insert":{"a":1,"a":2}},"u":{"modify":{"b":3}}},"T":{"v":{"delete":null}}}`},
	{"escapes and other UTF-8", `{"T\u0041":{"u\n":{"insert":{"na\"me":"caf\u00e9 \ud83d\ude00 ü","d":["map",[["k\\","v\t"]]],"s":["set",["\/"]]}}}}`},
	{"invalid UTF-8 becomes U+FFFD", "{\"T\":{\"u\":{\"insert\":{\"a\":\"x\xffy\",\"\xfe\":[\"set\",[\"\xc3\"]]}}}}"},
	{"white space everywhere", " {\n \"T\" : { \"u\" :\t{ \"insert\" : { \"a\" : [ \"set\" , [ 1 , [ \"uuid\" , \"x\" ] ] ] , \"m\" : [ \"map\" , [ [ \"k\" , \"v\" ] ] ] } } } } \r\n"},
	{"arrays of other shapes", `{"T":{"u":{"insert":{"a":[1,2],"b":["foo","bar"],"c":["uuid","x","extra"],"d":["set",[["set",[1]]]],"e":["map"],"f":["map",[["k","v","w"]]],"g":["set",[1],2],"h":{"o":[]},"i":null,"j":["map",[["k",null]]],"k":["set",[["uuid","x","y"]]],"l":["uuid",5]}}}}`},
	{"numbers", `{"T":{"u":{"insert":{"a":0,"b":-1.5e-3,"c":12345678901234567890,"d":1E+2,"e":["set",[0.1,-0]]}}}}`},
}

// reference decodes as libovsdb does; ok is false if it panicked.
func reference(in []byte) (out ovsdb.TableUpdates2, err error, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	err = json.Unmarshal(in, &out)
	return out, err, true
}

func TestDecodeTableUpdates2LikeLibovsdb(t *testing.T) {
	cases := append(decodeCases, struct{ name, in string }{"the benchmark's rows", string(benchUpdates(400))})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr, ok := reference([]byte(tc.in))
			if !ok || wantErr != nil {
				t.Fatalf("libovsdb does not decode the case: panicked %v, %v", !ok, wantErr)
			}
			got, err := DecodeTableUpdates2([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("decoded differently from libovsdb (-libovsdb +here):\n%s", d)
			}
		})
	}
}

func TestDecodeTableUpdates2Errors(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"T":{"u":{"insert":{"a":1}}}`, `{"T":{"u":{"insert":{"a":1}}}}}`, `{"T":1}`, `{"T":{"u":5}}`,
		`{"T":{"u":{"insert":5}}}`, `{"T":{"u":{"insert":{"a":01}}}}`, `{"T":{"u":{"insert":{"a":1.}}}}`,
		`{"T":{"u":{"insert":{"a":"x` + "\x01" + `"}}}}`, `{"T":{"u":{"insert":{"a":[]}}}}`,
		`{"T":{"u":{"insert":{"a":["set"]}}}}`, `{"T":{"u":{"insert":{"a":["set",[1,]]}}}}`,
		`{"T":{"u":{"insert":{"a":["map",[[["set",[1]],1]]]}}}}`, `{"T":{"u":{"insert":{"a":tru}}}}`, `{"a":1,}`, `{} x`,
		`{"T":{"u":{"initial":{"a":1}},}}`, `{"T":{"u":{"initial":{"a":"\x"}}}}`,
	} {
		if _, err := DecodeTableUpdates2([]byte(in)); err == nil {
			t.Errorf("%q: decoded without error", in)
		}
	}
}

// FuzzDecodeTableUpdates2: whatever libovsdb decodes without panicking,
// DecodeTableUpdates2 decodes to the same values; what it rejects is
// rejected here too.
func FuzzDecodeTableUpdates2(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr, ok := reference(in)
		got, err := DecodeTableUpdates2(in)
		if !ok {
			return
		}
		if wantErr != nil {
			if err == nil {
				t.Fatalf("libovsdb rejects %q (%v), decoded here", in, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("libovsdb decodes %q, here: %v", in, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%q decoded differently from libovsdb (-libovsdb +here):\n%s", in, d)
		}
		strs, err := Decoding{Strings: true}.TableUpdates2(in)
		if err != nil {
			t.Fatalf("%q: decoded with generic sets and maps, not with StringSet and StringMap: %v", in, err)
		}
		GenericUpdates(strs)
		if d := cmp.Diff(want, strs); d != "" {
			t.Fatalf("%q decoded with StringSet and StringMap differently (-libovsdb +here):\n%s", in, d)
		}
	})
}

// TestDecodingStrings: sets and maps of strings decode as StringSet and
// StringMap, anything else as the zero Decoding makes it.
func TestDecodingStrings(t *testing.T) {
	in := `{"T":{"u":{"insert":{` +
		`"s":["set",["a","b"]],"one":["set",["a"]],"empty":["set",[]],"mixed":["set",["a",1]],"uuids":["set",[["uuid","x"]]],` +
		`"m":["map",[["k","v"],["k2","v2"]]],"mixedmap":["map",[["k","v"],["n",1]]],"emptymap":["map",[]],"lone":"a"}}}}`
	got, err := Decoding{Strings: true}.TableUpdates2([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := ovsdb.Row{
		"s": StringSet{"a", "b"}, "one": StringSet{"a"}, "empty": ovsdb.OvsSet{GoSet: []any{}},
		"mixed": ovsdb.OvsSet{GoSet: []any{"a", 1.0}}, "uuids": ovsdb.OvsSet{GoSet: []any{ovsdb.UUID{GoUUID: "x"}}},
		"m": StringMap{"k": "v", "k2": "v2"}, "mixedmap": ovsdb.OvsMap{GoMap: map[any]any{"k": "v", "n": 1.0}},
		"emptymap": ovsdb.OvsMap{GoMap: map[any]any{}}, "lone": "a",
	}
	if d := cmp.Diff(want, *got["T"]["u"].Insert); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestDecodeUpdates(t *testing.T) {
	body := `{"T":{"u":{"modify":{"a":["set",[1]]}}}}`
	want, _, _ := reference([]byte(body))
	for _, tc := range []struct{ method, params string }{
		{"update2", `["ovn-udn",` + body + `]`},
		{"update3", `[ "ovn-udn" , "4f1c0000-0000-4000-8000-000000000000", ` + body + ` ]`},
	} {
		got, err := DecodeUpdates(tc.method, []byte(tc.params))
		if err != nil {
			t.Fatalf("%s: %v", tc.method, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.method, d)
		}
	}
	for _, params := range []string{`[]`, `["id"]`, `["id",` + body + `,1]`, `["id",{]`} {
		if _, err := DecodeUpdates("update2", []byte(params)); err == nil {
			t.Errorf("update2 %s: no error", params)
		}
	}
}

// TestInternMapValues: within one notification, equal short map values
// share one string (a network's rows repeat its name and owner), and
// values never take the room of keys: past the values' budget, a key
// first seen is still interned.
func TestInternMapValues(t *testing.T) {
	var b strings.Builder
	b.WriteString(`[["map",[["owner","net:blue"]]],["map",[["owner","net:blue"]]]`)
	for i := range maxInternValues + 10 {
		fmt.Fprintf(&b, `,["map",[["k","unique-%d"]]]`, i)
	}
	b.WriteString(`,["map",[["late-key","x"]]],["map",[["late-key","y"]]]]`)
	p := newParser([]byte(b.String()))
	p.strings = true
	p.i++ // '['
	var maps []StringMap
	for {
		v, ok, err := p.fastDatum()
		if err != nil || !ok {
			t.Fatalf("datum %d: %v %v", len(maps), ok, err)
		}
		maps = append(maps, v.(StringMap))
		if p.peek() != ',' {
			break
		}
		p.i++
	}
	if a, b := maps[0]["owner"], maps[1]["owner"]; unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("two equal map values are two strings")
	}
	if p.values != maxInternValues {
		t.Errorf("%d values interned, want the budget %d", p.values, maxInternValues)
	}
	var late []string
	for _, m := range maps[len(maps)-2:] {
		for k := range m {
			late = append(late, k)
		}
	}
	if unsafe.StringData(late[0]) != unsafe.StringData(late[1]) {
		t.Error("a key first seen after the values' budget was spent is not interned")
	}
}
