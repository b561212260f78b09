package topology

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

func TestFromNAD(t *testing.T) {
	const layer2 = `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"vm-blue.tenant","topology":"layer2","role":"primary","subnets":"10.162.0.0/24","netAttachDefName":"vm-blue/tenant"}`
	nad := func(config string, annotations map[string]string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "vm-blue", Name: "tenant", Annotations: annotations},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config}}
	}
	allocated := map[string]string{netconf.NetworkIDAnnotation: "7", netconf.TunnelKeysAnnotation: "[16715000]"}
	type out struct {
		Name, Topology, Role string
		ID                   int
		TunnelKeys           []int
		Join                 []netip.Prefix
		OK                   bool
		Err                  string // a part of the error
	}
	for _, tc := range []struct {
		name string
		nad  *nadv1.NetworkAttachmentDefinition
		want out
	}{
		{"allocated: the network, the cluster's join subnet filled in", nad(layer2, allocated), out{Name: "vm-blue.tenant", Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary,
			ID: 7, TunnelKeys: []int{16715000}, Join: config.Default().UDNJoinSubnets[:1], OK: true}},
		{"not allocated yet", nad(layer2, nil), out{}},
		{"another plugin's NAD", nad(`{"cniVersion":"1.0.0","type":"bridge","name":"br"}`, allocated), out{}},
		{"a network ID that does not parse", nad(layer2, map[string]string{netconf.NetworkIDAnnotation: "seven"}), out{Err: "seven"}},
		{"a Layer2 gateway without its transit router's key", nad(layer2, map[string]string{netconf.NetworkIDAnnotation: "7"}),
			out{Err: "tunnel key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok, err := FromNAD(tc.nad, config.Default())
			got := out{OK: ok}
			if err != nil {
				got.Err = tc.want.Err
				if !strings.Contains(err.Error(), tc.want.Err) || tc.want.Err == "" {
					t.Fatalf("error %v, want one with %q", err, tc.want.Err)
				}
			}
			if ok {
				got.Name, got.Topology, got.Role, got.ID, got.TunnelKeys, got.Join = n.Name, n.Topology, n.Role, n.ID, n.TunnelKeys, n.Join
			}
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}
