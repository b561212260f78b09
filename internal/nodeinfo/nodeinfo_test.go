package nodeinfo

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubnetsRoundTrip(t *testing.T) {
	s := Subnets{"default": {netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:10:244:2::/64")}, "a.b": {netip.MustParsePrefix("10.128.0.0/24")}}
	v := s.String()
	if v != `{"a.b":["10.128.0.0/24"],"default":["10.244.1.0/24","fd00:10:244:2::/64"]}` {
		t.Fatalf("String() = %s", v)
	}
	back, err := ParseSubnets(v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Fatalf("round trip (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`{`, `{"x":["nope"]}`, `{"x":"10.0.0.0/24"}`} {
		if _, err := ParseSubnets(bad); err == nil {
			t.Errorf("ParseSubnets(%s) accepted", bad)
		}
	}
	if got, _ := ParseSubnets(""); len(got) != 0 {
		t.Errorf("empty annotation parsed as %v", got)
	}
	if _, ok, err := NodeID(map[string]string{NodeIDAnnotation: "x"}); ok || err == nil {
		t.Error("bad node-id accepted")
	}
	if id, ok, _ := NodeID(map[string]string{NodeIDAnnotation: "7"}); !ok || id != 7 {
		t.Errorf("NodeID = %d, %v", id, ok)
	}
}
