package vmmigration

import (
	"context"
	"encoding/hex"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
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

// TestLayer2V1GatewayMAC: only a Layer2 primary network's gateway MAC is
// looked up; any other attachment (a secondary network, one whose NAD is
// gone or does not parse) gives none and no error, so that it holds up
// none of the pod's other announcements.
func TestLayer2V1GatewayMAC(t *testing.T) {
	nad := func(name, conf string, annotations map[string]string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "vm", Name: name, Annotations: annotations},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf}}
	}
	conf := func(name, role string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"vm.` + name + `","topology":"layer2","role":"` + role + `","subnets":"10.150.0.0/24","netAttachDefName":"vm/` + name + `"}`
	}
	allocated := map[string]string{netconf.NetworkIDAnnotation: "4", netconf.TunnelKeysAnnotation: "[16711700]"}
	c := fake.NewClientBuilder().WithScheme(kubeobj.NewScheme(nadv1.AddToScheme)).WithObjects(
		nad("tenant", conf("tenant", "primary"), allocated),
		nad("sec", conf("sec", "secondary"), map[string]string{netconf.NetworkIDAnnotation: "5"}),
		nad("broken", `{"type":`, nil),
		nad("bad-id", conf("bad-id", "primary"), map[string]string{netconf.NetworkIDAnnotation: "four"}),
	).Build()
	r := &Reconciler{Client: c, Opts: node.Options{Cluster: config.Default()}}
	n, _, err := topology.FromNAD(nad("tenant", conf("tenant", "primary"), allocated), config.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, want string
		err       bool
	}{
		{"vm/tenant", n.Layer2V1GatewayMAC(3), false},
		{"vm/sec", "", false},
		{"vm/broken", "", false},
		{"vm/gone", "", false},
		{"vm/bad-id", "", true},
	} {
		got, err := r.layer2V1GatewayMAC(context.Background(), tc.key, 3)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %q, %v; want %q, error %v", tc.key, got, err, tc.want, tc.err)
		}
	}
	if n.Layer2V1GatewayMAC(3) == "" || n.Layer2V1GatewayMAC(3) == n.Layer2V1GatewayMAC(4) {
		t.Errorf("node 3's gateway MAC %q is not its own", n.Layer2V1GatewayMAC(3))
	}
}
