package netconf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		config  string
		nilConf bool
		wantErr string
	}{
		{name: "other plugin is ignored", config: `{"type":"bridge","name":"x"}`, nilConf: true},
		{name: "macvlan is ignored", config: `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","mode":"bridge"}`, nilConf: true},
		{name: "a plugin list is ignored", config: `{"cniVersion":"1.0.0","name":"x","plugins":[{"type":"bridge"}]}`, nilConf: true},
		{name: "empty config (Multus reads the node's file) is ignored", config: "  ", nilConf: true},
		{name: "not json", config: `{`, wantErr: "not JSON"},
		{name: "no name", config: `{"type":"ovn-k8s-cni-overlay","topology":"layer2"}`, wantErr: "no network name"},
		{name: "bad topology", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer4"}`, wantErr: `unknown topology "layer4"`},
		{name: "bad role", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","role":"boss"}`, wantErr: `unknown role "boss"`},
		{name: "host bits", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","subnets":"10.0.0.1/24"}`, wantErr: "did you mean 10.0.0.0/24"},
		{name: "host prefix on layer2", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","subnets":"10.0.0.0/16/24"}`, wantErr: "only for Layer3"},
		{name: "host prefix too short", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer3","subnets":"10.0.0.0/16/8"}`, wantErr: "longer than /16"},
		{name: "valid layer3", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer3","subnets":"10.0.0.0/16/24,fd00::/48/64"}`},
		{name: "secondary layer3 with egress", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer3","subnets":"10.0.0.0/16/24","egress":"gateway"}`},
		{name: "secondary layer2 with egress", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","role":"secondary","subnets":"10.0.0.0/24","egress":"gateway"}`},
		{name: "egress on a primary", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","role":"primary","subnets":"10.0.0.0/24","egress":"gateway"}`, wantErr: "for secondary Layer3 and Layer2 networks"},
		{name: "egress on localnet", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"localnet","subnets":"10.0.0.0/24","egress":"gateway"}`, wantErr: "for secondary Layer3 and Layer2 networks"},
		{name: "egress without subnets", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","egress":"gateway"}`, wantErr: "needs subnets"},
		{name: "unknown egress", config: `{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","subnets":"10.0.0.0/24","egress":"local"}`, wantErr: `unknown egress "local"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig(tc.config)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c == nil) != tc.nilConf {
				t.Fatalf("config = %+v, want nil: %v", c, tc.nilConf)
			}
		})
	}
	c, _ := ParseConfig(`{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer3","subnets":"10.0.0.0/16/24,fd00::/48"}`)
	if got := JoinList(c.ParsedSubnets()); got != "10.0.0.0/16/24,fd00::/48" {
		t.Errorf("ParsedSubnets = %s", got)
	}
	if c.Role != RoleSecondary {
		t.Errorf("missing role defaults to %q, want secondary", c.Role)
	}
	var foreign *NetConf // what Parse returns for another plugin's NAD
	if foreign.IsPrimary() || foreign.HasGateway() {
		t.Error("a nil config is primary or has a gateway")
	}
	for config, want := range map[string]bool{
		`{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","subnets":"10.0.0.0/24","egress":"gateway"}`: true,
		`{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","subnets":"10.0.0.0/24"}`:                    false,
		`{"type":"ovn-k8s-cni-overlay","name":"n","topology":"layer2","role":"primary","subnets":"10.0.0.0/24"}`:   true,
	} {
		if c, err := ParseConfig(config); err != nil || c.HasGateway() != want {
			t.Errorf("%s: HasGateway %v (%v), want %v", config, c.HasGateway(), err, want)
		}
	}
}

func TestParseNetworkSelections(t *testing.T) {
	tests := []struct {
		name, in string
		want     []NetworkSelection
		wantErr  bool
	}{
		{name: "empty", in: ""},
		{name: "names", in: "a, other/b@net2,c@eth9", want: []NetworkSelection{
			{Name: "a", Namespace: "ns"}, {Name: "b", Namespace: "other", Interface: "net2"}, {Name: "c", Namespace: "ns", Interface: "eth9"}}},
		{name: "json", in: `[{"name":"a","ips":["10.0.0.5/24"],"mac":"02:00:00:00:00:01"},{"name":"b","namespace":"x","ipam-claim-reference":"vm1"}]`,
			want: []NetworkSelection{{Name: "a", Namespace: "ns", IPs: []string{"10.0.0.5/24"}, MAC: "02:00:00:00:00:01"}, {Name: "b", Namespace: "x", IPAMClaimReference: "vm1"}}},
		{name: "default-route", in: `[{"name":"a","default-route":["10.0.0.1"]}]`,
			want: []NetworkSelection{{Name: "a", Namespace: "ns", GatewayRequest: []string{"10.0.0.1"}}}},
		{name: "bad json", in: `[{"name":]`, wantErr: true},
		{name: "json without name", in: `[{"namespace":"x"}]`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNetworkSelections(tc.in, "ns")
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
