package udn

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

func TestConfig(t *testing.T) {
	cfg := config.Default()
	tests := []struct {
		name    string
		req     Request
		want    *netconf.NetConf
		wantErr string
		// wantReason is the condition's reason (ReasonSubnetOverlap when
		// empty).
		wantReason string
	}{
		{
			name: "layer3 primary dual stack gets default joins per family",
			req: Request{NetworkName: "ns1.blue", Namespace: "ns1", Name: "blue", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24", "2001:db8::/60"}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "ns1.blue", Type: netconf.CNIType, Topology: "layer3", Role: "primary",
				Subnets: "10.128.0.0/16/24,2001:db8::/60", JoinSubnet: "100.65.0.0/16,fd99::/64", MTU: 1400, NADName: "ns1/blue"},
		},
		{
			name: "ipv6-only primary gets the ipv6 join only",
			req: Request{NetworkName: "ns1.v6", Namespace: "ns1", Name: "v6", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"fd00:1::/64"}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "ns1.v6", Type: netconf.CNIType, Topology: "layer2", Role: "primary",
				Subnets: "fd00:1::/64", JoinSubnet: "fd99::/64", MTU: 1400, NADName: "ns1/v6"},
		},
		{
			name: "secondary layer2 with egress: the field, no join subnet written (the default is taken)",
			req: Request{Owner: Owner{Kind: netconf.KindCUDN, Name: "out"}, NetworkName: "cluster.udn.out", Namespace: "ns1", Name: "cluster.udn.out", VRF: "out", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.141.0.0/24"}, Egress: v1.EgressGateway}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "cluster.udn.out", Type: netconf.CNIType, Topology: "layer2", Role: "secondary",
				Subnets: "10.141.0.0/24", MTU: 1400, NADName: "ns1/cluster.udn.out", VRF: "out", Egress: netconf.EgressGateway},
		},
		{
			name: "secondary layer2 with egress over the transit subnet gets another one",
			req: Request{Owner: Owner{Kind: netconf.KindCUDN, Name: "out2"}, NetworkName: "cluster.udn.out2", Namespace: "ns1", Name: "cluster.udn.out2", VRF: "out2", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"100.88.0.0/24"}, Egress: v1.EgressGateway}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "cluster.udn.out2", Type: netconf.CNIType, Topology: "layer2", Role: "secondary",
				Subnets: "100.88.0.0/24", MTU: 1400, NADName: "ns1/cluster.udn.out2", VRF: "out2", Egress: netconf.EgressGateway, TransitSubnet: "100.89.0.0/16"},
		},
		{
			name: "egress on a UserDefinedNetwork (one created before egress was the administrator's)",
			req: Request{Owner: Owner{Kind: netconf.KindUDN, Name: "out"}, NetworkName: "ns1.out", Namespace: "ns1", Name: "out", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.141.0.0/24"}, Egress: v1.EgressGateway}},
			wantErr:    "egress is allowed only in a ClusterUserDefinedNetwork: a namespace's own network could route around its EgressFirewall",
			wantReason: v1.ReasonEgressNotAllowed,
		},
		{
			name: "seed db-network: layer2, mtu, exclusions, persistent ips",
			req: Request{NetworkName: "demo.db-network", Namespace: "demo", Name: "db-network", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Primary, MTU: 9000, Subnets: []v1.NetworkSubnet{"10.0.0.0/24"},
				ExcludeSubnets: []v1.ExcludeCIDR{"10.0.0.0/26"}, IPAM: &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "demo.db-network", Type: netconf.CNIType, Topology: "layer2", Role: "primary",
				Subnets: "10.0.0.0/24", ExcludeSubnets: "10.0.0.0/26", JoinSubnet: "100.65.0.0/16", MTU: 9000,
				NADName: "demo/db-network", PersistentIPs: true},
		},
		{
			name: "seed CUDN example: an exclusion with host bits is written as its network",
			req: Request{NetworkName: "cluster.udn.db-network", Namespace: "a", Name: "cluster.udn.db-network", VRF: "db-network", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Primary, MTU: 9000, Subnets: []v1.NetworkSubnet{"10.0.0.0/24", "fd00:1::/64"},
				ExcludeSubnets: []v1.ExcludeCIDR{"10.0.0.100/26", "fd00:1::5/120"}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "cluster.udn.db-network", Type: netconf.CNIType, Topology: "layer2", Role: "primary",
				Subnets: "10.0.0.0/24,fd00:1::/64", ExcludeSubnets: "10.0.0.64/26,fd00:1::/120", JoinSubnet: "100.65.0.0/16,fd99::/64", MTU: 9000,
				NADName: "a/cluster.udn.db-network", VRF: "db-network"},
		},
		{
			name: "secondary layer2 without ipam has no subnets and no join",
			req: Request{NetworkName: "ns.sec", Namespace: "ns", Name: "sec", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Secondary, IPAM: &v1.IPAMSpec{Mode: v1.IPAMDisabled}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "ns.sec", Type: netconf.CNIType, Topology: "layer2", Role: "secondary",
				MTU: 1400, NADName: "ns/sec"},
		},
		{
			name: "localnet defaults the physical network to the network name",
			req: Request{NetworkName: "cluster.udn.phys", Namespace: "a", Name: "cluster.udn.phys", VRF: "phys", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Localnet, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.50.0/24"}, Localnet: &v1.LocalnetSpec{VLANID: 10}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "cluster.udn.phys", Type: netconf.CNIType, Topology: "localnet", Role: "secondary",
				Subnets: "192.168.50.0/24", MTU: 1400, NADName: "a/cluster.udn.phys", VRF: "phys",
				PhysicalNetworkName: "cluster.udn.phys", VLANID: 10},
		},
		{
			name: "layer2 primary overlapping the transit subnet gets another one",
			req: Request{NetworkName: "ns.t", Namespace: "ns", Name: "t", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"100.88.0.0/15", "fd97::/60"}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "ns.t", Type: netconf.CNIType, Topology: "layer2", Role: "primary",
				Subnets: "100.88.0.0/15,fd97::/60", JoinSubnet: "100.65.0.0/16,fd99::/64", TransitSubnet: "100.90.0.0/16,fd97:0:0:10::/64",
				MTU: 1400, NADName: "ns/t"},
		},
		{
			name: "layer3 overlapping the transit subnet keeps the default (routed per node)",
			req: Request{NetworkName: "ns.l3t", Namespace: "ns", Name: "l3t", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer3, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"100.88.0.0/16"}}},
			want: &netconf.NetConf{CNIVersion: "1.0.0", Name: "ns.l3t", Type: netconf.CNIType, Topology: "layer3", Role: "secondary",
				Subnets: "100.88.0.0/16", MTU: 1400, NADName: "ns/l3t"},
		},
		{
			name: "overlap with the cluster subnet",
			req: Request{NetworkName: "ns.x", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.244.0.0/24"}}},
			wantErr: "subnet 10.244.0.0/24 overlaps the cluster default network subnet 10.244.0.0/16",
		},
		{
			name: "join overlapping the network's own subnet",
			req: Request{NetworkName: "ns.x", Spec: v1.UserDefinedNetworkSpec{
				Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"100.65.0.0/24"}}},
			wantErr: "join subnet 100.65.0.0/16 overlaps the network's subnet 100.65.0.0/24",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Config(tc.req, cfg)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				want := tc.wantReason
				if want == "" {
					want = v1.ReasonSubnetOverlap
				}
				if ce, ok := err.(*ConditionError); !ok || ce.Reason != want {
					t.Fatalf("error %T %v is not a %s condition", err, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			// What Parse reads back must equal what was rendered.
			back, err := netconf.ParseConfig(got.Marshal())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, back); diff != "" {
				t.Errorf("render/parse round trip (-rendered +parsed):\n%s", diff)
			}
		})
	}
}

func TestNAD(t *testing.T) {
	u := &v1.UserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "net", UID: "uid-1"},
		Spec:       v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.0.0.0/24"}},
	}
	req := ForUDN(u)
	req.NetworkID, req.TunnelKeys = 7, []int{16715776}
	nad, err := NAD(req, config.Default())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{netconf.NetworkIDAnnotation: "7", netconf.TunnelKeysAnnotation: "[16715776]"}, nad.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{v1.NetworkProtectionFinalizer}, nad.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	ref := nad.OwnerReferences[0]
	if ref.APIVersion != "k8s.ovn.org/v1" || ref.Kind != "UserDefinedNetwork" || ref.Name != "net" || ref.UID != "uid-1" || !*ref.Controller || !*ref.BlockOwnerDeletion {
		t.Errorf("owner reference %+v", ref)
	}
	if nad.Labels[netconf.OwnerKindLabel] != "UserDefinedNetwork" {
		t.Errorf("labels %v", nad.Labels)
	}
}

func TestVRFName(t *testing.T) {
	mk := func(name, vrf string) *v1.ClusterUserDefinedNetwork {
		return &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ClusterUserDefinedNetworkSpec{VRF: vrf}}
	}
	for _, tc := range []struct {
		c    *v1.ClusterUserDefinedNetwork
		want string
	}{
		{mk("db-network", "custom"), "custom"},
		{mk("db-network", ""), "db-network"},
		{mk("fifteen-chars-x", ""), "fifteen-chars-x"},
		{mk("sixteen-chars-xx", ""), "udn-42-vrf"},
	} {
		if got := VRFName(tc.c, 42); got != tc.want {
			t.Errorf("VRFName(%s, vrf %q) = %s, want %s", tc.c.Name, tc.c.Spec.VRF, got, tc.want)
		}
	}
}

func TestTransitSubnets(t *testing.T) {
	cfg := config.Default()
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	tests := []struct {
		name          string
		subnets, join []netip.Prefix
		want          []netip.Prefix
	}{
		{"no overlap keeps the defaults", p("10.0.0.0/24"), p("100.65.0.0/16"), nil},
		{"overlap moves to the next free /16", p("100.88.5.0/24"), p("100.65.0.0/16"), p("100.89.0.0/16")},
		{"a big subnet pushes further", p("100.88.0.0/14"), p("100.65.0.0/16"), p("100.92.0.0/16")},
		{"join overlapping the transit moves it", p("10.0.0.0/24"), p("100.88.0.0/16"), p("100.89.0.0/16")},
		{"wraps around the search space, skipping reserved and join", p("100.88.0.0/13", "100.96.0.0/11"), p("100.65.0.0/16"), p("100.66.0.0/16")},
		{"dual stack: only the conflicting family moves", p("100.88.5.0/24", "fd00::/64"), p("100.65.0.0/16", "fd99::/64"), p("100.89.0.0/16", "fd97::/64")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TransitSubnets(tc.subnets, tc.join, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("transit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"100.88.0.0/16":      "100.89.0.0/16",
		"100.255.0.0/16":     "101.0.0.0/16",
		"10.0.0.254/31":      "10.0.1.0/31",
		"fd97::/64":          "fd97:0:0:1::/64",
		"fd97:0:0:ffff::/64": "fd97:0:1::/64",
	} {
		if got := nextPrefix(netip.MustParsePrefix(in)); got.String() != want {
			t.Errorf("nextPrefix(%s) = %s, want %s", in, got, want)
		}
	}
}
