package nodeinfo

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds node annotations (which anyone with node write access can
// edit) to the parser every zone controller and node agent uses: no panic,
// anything wrong is a Missing error naming the annotation, and the subnets it
// reads print back to themselves.
func FuzzParse(f *testing.F) {
	f.Add("7", "chassis-1", `{"default":["10.244.1.0/24"],"blue.net":["10.128.1.0/24","fd00::/64"]}`, `{"ipv4":"172.18.0.2/16"}`, "172.18.0.2",
		`{"mac-address":"0a:58:ac:12:00:02","ip-addresses":["172.18.0.2/16"],"next-hops":["172.18.0.1"]}`)
	f.Add("x", "", `{"default":["10.244.1.0/33"]}`, `{"ipv4":"nope"}`, "::1::", `{"mac-address":"zz"}`)
	f.Add("", "", `[]`, `[]`, "", `{"mac-address":"0a:58:ac:12:00:02","ip-addresses":["172.18.0.2/16"],"uplinks":[{"physical-network":"","mac-address":"0a:58:ac:12:00:03"}]}`)
	f.Add("-1", "c", `{"a":null}`, `{"ipv6":"fd00::2/64"}`, "fd00::2", `null`)
	f.Fuzz(func(t *testing.T, id, chassis, subnets, ifaddr, encap, gateway string) {
		a := map[string]string{NodeIDAnnotation: id, ChassisIDAnnotation: chassis, NodeSubnetsAnnotation: subnets,
			PrimaryIfAddrAnnotation: ifaddr, EncapIPAnnotation: encap, GatewayAnnotation: gateway}
		in, err := Parse("node1", a)
		if err != nil {
			var m Missing
			if !errors.As(err, &m) || len(m) == 0 {
				t.Fatalf("error %v is not a list of what is missing", err)
			}
			for _, what := range m {
				if !strings.Contains(what, "k8s.ovn.org/") {
					t.Fatalf("%q does not name the annotation", what)
				}
			}
		}
		if in.Name != "node1" || in.Zone == "" {
			t.Fatalf("name %q zone %q", in.Name, in.Zone)
		}
		if s, err := ParseSubnets(subnets); err == nil && subnets != "" {
			back, err := ParseSubnets(s.String())
			if err != nil {
				t.Fatalf("subnets %s do not parse back: %v", s, err)
			}
			if back.String() != s.String() {
				t.Fatalf("subnets changed through String: %s, then %s", s, back)
			}
		}
	})
}
