package vmmigration

import (
	"encoding/hex"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

func TestFrames(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    podnet.Attachment
		mac  string   // the gateway MAC given (a node at the old topology)
		want []string // the first bytes of each frame: destination, source, EtherType
	}{
		{"IPv4: a GARP from the gateway MAC", podnet.Attachment{MAC: "0a:58:cb:cb:00:0b", Gateways: []string{"203.203.0.1"}}, "",
			[]string{"ffffffffffff" + "0a58cbcb0001" + "0806"}},
		{"dual stack: a GARP, then an RA to the VM, both from the IPv4-derived MAC", podnet.Attachment{MAC: "0a:58:cb:cb:00:0b", Gateways: []string{"203.203.0.1", "fd00::1"}}, "",
			[]string{"ffffffffffff" + "0a58cbcb0001" + "0806", "0a58cbcb000b" + "0a58cbcb0001" + "86dd"}},
		{"a node at the old topology: from its gateway router's MAC", podnet.Attachment{MAC: "0a:58:cb:cb:00:0b", Gateways: []string{"203.203.0.1", "fd00::1"}},
			"0a:58:64:41:00:02", []string{"ffffffffffff" + "0a5864410002" + "0806", "0a58cbcb000b" + "0a5864410002" + "86dd"}},
		{"no gateway (a secondary network): nothing", podnet.Attachment{MAC: "0a:58:cb:cb:00:0b"}, "", nil},
	} {
		frames, err := Frames(tc.a, tc.mac)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(frames) != len(tc.want) {
			t.Fatalf("%s: %d frames, want %d", tc.name, len(frames), len(tc.want))
		}
		for i, f := range frames {
			if got := hex.EncodeToString(f[:14]); got != tc.want[i] {
				t.Errorf("%s: frame %d begins %s, want %s", tc.name, i, got, tc.want[i])
			}
		}
	}
	if _, err := Frames(podnet.Attachment{MAC: "0a:58:cb:cb:00:0b", Gateways: []string{"nope"}}, ""); err == nil {
		t.Errorf("a malformed gateway: no error")
	}
}
