package mgmtport_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/mgmtport"
)

func TestDesired(t *testing.T) {
	cluster := config.Default()
	tests := []struct {
		name    string
		slices  []netip.Prefix
		want    cni.Interface
		ok      bool
		wantErr bool
	}{
		{name: "no slice yet"},
		{name: "dual stack", ok: true,
			slices: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/24"), netip.MustParsePrefix("fd00:10:244:1::/64")},
			want: cni.Interface{Name: "ovn-k8s-mp0", Port: "k8s-node1", MAC: "0a:58:0a:f4:01:02", MTU: cluster.MTU,
				IPs:    []netip.Prefix{netip.MustParsePrefix("10.244.1.2/24"), netip.MustParsePrefix("fd00:10:244:1::2/64")},
				Routes: []podnet.Route{{Dest: "10.244.0.0/16", NextHop: "10.244.1.1"}, {Dest: "fd00:10:244::/48", NextHop: "fd00:10:244:1::1"}}}},
		{name: "a slice too small", slices: []netip.Prefix{netip.MustParsePrefix("10.244.1.0/32")}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := nodeinfo.Info{Name: "node1", Subnets: nodeinfo.Subnets{}}
			if tc.slices != nil {
				info.Subnets[nodeinfo.DefaultNetwork] = tc.slices
			}
			got, ok, err := mgmtport.Desired(info, cluster)
			if (err != nil) != tc.wantErr || ok != tc.ok {
				t.Fatalf("Desired: ok %v, err %v; want ok %v, an error %v", ok, err, tc.ok, tc.wantErr)
			}
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
				t.Errorf("Desired (-want +got):\n%s", d)
			}
		})
	}
}
