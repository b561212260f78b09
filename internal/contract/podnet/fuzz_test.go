package podnet

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzParse reads the pod-networks annotation, which a tenant can edit on its
// own pods: no panic, what parses prints back to itself, and an address that
// is not a CIDR is refused by quoting it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","gateway_ips":["10.244.1.1"],"routes":[{"dest":"10.96.0.0/16","nextHop":"10.244.1.1"}],"role":"infrastructure-locked"},"blue/net":{"ip_addresses":["10.128.1.5/24"],"mac_address":"0a:58:0a:80:01:05","role":"primary","tunnel_id":7}}`,
		`{"default":{"ip_addresses":["10.244.1.5"]}}`, `{"a":null}`, `[]`, `null`, `{"x":{"tunnel_id":-1}}`, `{"x":{"tunnel_id":1e99}}`, `{`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		nets, err := Parse(map[string]string{Annotation: v})
		if err != nil {
			if !strings.Contains(err.Error(), Annotation) {
				t.Fatalf("error %q does not name the annotation", err)
			}
			return
		}
		back, err := Parse(map[string]string{Annotation: nets.String()})
		if err != nil {
			t.Fatalf("%s does not parse back: %v", nets, err)
		}
		if d := cmp.Diff(nets, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("annotation changed through String (-first +again):\n%s", d)
		}
		for key, a := range nets {
			if _, err := a.Prefixes(); err != nil && !strings.Contains(err.Error(), `"`) {
				t.Fatalf("%s: error %q does not quote the address", key, err)
			}
		}
	})
}
