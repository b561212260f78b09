package annotations

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// TestKeepOverrides: the default-route overrides an operator set on the
// Node's gateway annotation survive the agent's rewrite, even when the agent
// was given its own (those only fill in what the annotation lacks);
// everything else is the agent's.
func TestKeepOverrides(t *testing.T) {
	on, off := true, false
	gw := func(mac string, ecmp, bfd *bool) string {
		b, err := json.Marshal(nodeinfo.Gateway{MAC: mac, IPs: []string{"172.18.0.2/16"}, DefaultRouteECMP: ecmp, DefaultRouteBFD: bfd})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const key = nodeinfo.GatewayAnnotation
	for _, tc := range []struct {
		name              string
		want, current, is map[string]string
	}{
		{"no override anywhere", map[string]string{key: gw("m1", nil, nil)}, map[string]string{key: gw("m0", nil, nil)}, map[string]string{key: gw("m1", nil, nil)}},
		{"the operator's overrides kept", map[string]string{key: gw("m1", nil, nil), "x": "y"}, map[string]string{key: gw("m0", &off, &off)},
			map[string]string{key: gw("m1", &off, &off), "x": "y"}},
		{"the operator's over the agent's flags", map[string]string{key: gw("m1", &on, &on)}, map[string]string{key: gw("m1", &off, &off)},
			map[string]string{key: gw("m1", &off, &off)}},
		{"the agent's flag where the operator set none", map[string]string{key: gw("m1", nil, &on)}, map[string]string{key: gw("m1", &off, nil)},
			map[string]string{key: gw("m1", &off, &on)}},
		{"no annotation on the Node", map[string]string{key: gw("m1", nil, nil)}, map[string]string{}, map[string]string{key: gw("m1", nil, nil)}},
		{"a Node annotation that does not parse", map[string]string{key: gw("m1", nil, nil)}, map[string]string{key: "{"}, map[string]string{key: gw("m1", nil, nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.is, keepOverrides(tc.want, tc.current)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
