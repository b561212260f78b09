package connect

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func layout(t *testing.T, subnets ...v1.ConnectSubnet) Layout {
	t.Helper()
	l, err := NewLayout(subnets)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func cs(cidr string, prefix int32) v1.ConnectSubnet {
	return v1.ConnectSubnet{CIDR: v1.ConnectCIDR(cidr), NetworkPrefix: prefix}
}

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		name          string
		subnets       []v1.ConnectSubnet
		links, blocks int
		err           string
	}{
		// The seed's example: 256 /24 blocks of 128 links.
		{"seed ipv4", []v1.ConnectSubnet{cs("192.168.0.0/16", 24)}, 128, 256, ""},
		// Dual stack: the IPv4 block bounds the links, the port keys the blocks.
		{"seed dual stack", []v1.ConnectSubnet{cs("fd01::/64", 96), cs("192.168.0.0/16", 24)}, 128, 256, ""},
		// IPv6 alone with the seed's /96: one block uses every port key.
		{"ipv6 /96 blocks", []v1.ConnectSubnet{cs("fd01::/64", 96)}, 32768, 1, ""},
		{"ipv6 /120 blocks", []v1.ConnectSubnet{cs("fd01::/64", 120)}, 128, 256, ""},
		{"small", []v1.ConnectSubnet{cs("10.200.0.0/24", 28)}, 8, 16, ""},
		{"/31 blocks", []v1.ConnectSubnet{cs("10.200.0.0/24", 31)}, 1, 128, ""},
		{"host bits", []v1.ConnectSubnet{cs("10.200.0.1/24", 28)}, 0, 0, "not a network address"},
		{"prefix too short", []v1.ConnectSubnet{cs("10.200.0.0/24", 24)}, 0, 0, "must be longer than /24"},
		{"same family", []v1.ConnectSubnet{cs("10.200.0.0/24", 28), cs("10.201.0.0/24", 28)}, 0, 0, "same IP family"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLayout(tc.subnets)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if l.LinksPerBlock != tc.links || l.Blocks != tc.blocks {
				t.Errorf("links %d blocks %d, want %d %d", l.LinksPerBlock, l.Blocks, tc.links, tc.blocks)
			}
			if !l.Ranges[0].CIDR.Addr().Is4() && len(l.Ranges) == 2 {
				t.Error("IPv4 range not first")
			}
		})
	}
}

// TestLinks checks the seed's static allocator (node ID k takes the /31 at
// 2k of its network's block), the sides and the port keys.
func TestLinks(t *testing.T) {
	l := layout(t, cs("192.168.0.0/16", 24), cs("fd01::/64", 120))
	block2 := l.Block(2)
	if diff := cmp.Diff(Slice{V4: pfx("192.168.2.0/24"), V6: pfx("fd01::200/120")}, block2, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Fatal(diff)
	}
	for _, tc := range []struct {
		name string
		got  func() (Link, error)
		want Link
		err  string
	}{
		{"node 5 of block 2", func() (Link, error) { return l.NodeLink(block2, 5) }, Link{
			NetworkSide: []netip.Prefix{pfx("192.168.2.10/31"), pfx("fd01::20a/127")},
			ConnectSide: []netip.Prefix{pfx("192.168.2.11/31"), pfx("fd01::20b/127")},
			PortKey:     2*128 + 5}, ""},
		{"node 2 of block 0", func() (Link, error) { return l.NodeLink(l.Block(0), 2) }, Link{
			NetworkSide: []netip.Prefix{pfx("192.168.0.4/31"), pfx("fd01::4/127")},
			ConnectSide: []netip.Prefix{pfx("192.168.0.5/31"), pfx("fd01::5/127")},
			PortKey:     2}, ""},
		{"last node, last block: the last port key", func() (Link, error) { return l.NodeLink(l.Block(255), 127) }, Link{
			NetworkSide: []netip.Prefix{pfx("192.168.255.254/31"), pfx("fd01::fffe/127")},
			ConnectSide: []netip.Prefix{pfx("192.168.255.255/31"), pfx("fd01::ffff/127")},
			PortKey:     MaxPortKey}, ""},
		{"node beyond the block", func() (Link, error) { return l.NodeLink(block2, 128) }, Link{}, "node ID 128 does not fit"},
		{"layer2 link 3 of block 4", func() (Link, error) {
			return l.Layer2Link(Slice{V4: pfx("192.168.4.6/31"), V6: pfx("fd01::406/127")})
		}, Link{
			NetworkSide: []netip.Prefix{pfx("192.168.4.6/31"), pfx("fd01::406/127")},
			ConnectSide: []netip.Prefix{pfx("192.168.4.7/31"), pfx("fd01::407/127")},
			PortKey:     4*128 + 3}, ""},
		{"families at different places", func() (Link, error) {
			return l.Layer2Link(Slice{V4: pfx("192.168.4.6/31"), V6: pfx("fd01::408/127")})
		}, Link{}, "different places"},
		{"a block is not a layer2 link", func() (Link, error) { return l.Layer2Link(block2) }, Link{}, "not a Layer2 network's link"},
		{"a link is not a block", func() (Link, error) {
			return l.NodeLink(Slice{V4: pfx("192.168.4.6/31"), V6: pfx("fd01::406/127")}, 2)
		}, Link{}, "not a Layer3 network's block"},
		{"outside", func() (Link, error) { return l.NodeLink(Slice{V4: pfx("10.0.0.0/24"), V6: pfx("fd01::/120")}, 2) }, Link{}, "not in a block"},
		{"missing family", func() (Link, error) { return l.NodeLink(Slice{V4: pfx("192.168.2.0/24")}, 2) }, Link{}, "no IPv6 address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.got()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Fatal(diff)
			}
		})
	}
}

func l3(id int) Key { return Key{Topology: netconf.TopologyLayer3, ID: id} }
func l2(id int) Key { return Key{Topology: netconf.TopologyLayer2, ID: id} }

func v4(s string) Slice { return Slice{V4: pfx(s)} }

func TestAllocate(t *testing.T) {
	l := layout(t, cs("192.168.0.0/22", 24)) // 4 blocks of 128 links
	for _, tc := range []struct {
		name             string
		held, remembered Subnets
		keys             []Key
		want             Subnets
		err              error
	}{
		// The seed's annotation example: Layer3 networks take whole blocks,
		// Layer2 networks share one (from link 1); new networks are placed
		// Layer2 first, then by network ID.
		{"seed mix", nil, nil, []Key{l3(1), l3(2), l2(40), l2(103)}, Subnets{
			l2(40): v4("192.168.0.2/31"), l2(103): v4("192.168.0.4/31"),
			l3(1): v4("192.168.1.0/24"), l3(2): v4("192.168.2.0/24")}, nil},
		{"held slices stay", Subnets{l3(2): v4("192.168.3.0/24"), l2(40): v4("192.168.0.8/31")}, nil, []Key{l3(1), l3(2), l2(40), l2(41)}, Subnets{
			l3(1): v4("192.168.1.0/24"), l3(2): v4("192.168.3.0/24"),
			l2(40): v4("192.168.0.8/31"), l2(41): v4("192.168.0.2/31")}, nil},
		{"unselected networks lose theirs", Subnets{l3(1): v4("192.168.0.0/24"), l3(2): v4("192.168.1.0/24")}, nil, []Key{l3(2), l3(3)}, Subnets{
			l3(2): v4("192.168.1.0/24"), l3(3): v4("192.168.0.0/24")}, nil},
		{"a remembered network gets its block back, others avoid it", Subnets{l3(2): v4("192.168.1.0/24")}, Subnets{l3(1): v4("192.168.0.0/24")}, []Key{l3(1), l3(2), l3(3)}, Subnets{
			l3(1): v4("192.168.0.0/24"), l3(2): v4("192.168.1.0/24"), l3(3): v4("192.168.2.0/24")}, nil},
		{"a remembered block goes when nothing else is left", Subnets{l3(2): v4("192.168.1.0/24"), l3(3): v4("192.168.2.0/24"), l3(4): v4("192.168.3.0/24")},
			Subnets{l3(1): v4("192.168.0.0/24")}, []Key{l3(2), l3(3), l3(4), l3(5)}, Subnets{
				l3(2): v4("192.168.1.0/24"), l3(3): v4("192.168.2.0/24"), l3(4): v4("192.168.3.0/24"), l3(5): v4("192.168.0.0/24")}, nil},
		{"a held slice in conflict is replaced", Subnets{l3(1): v4("192.168.0.0/24"), l3(2): v4("192.168.0.0/24")}, nil, []Key{l3(1), l3(2)}, Subnets{
			l3(1): v4("192.168.0.0/24"), l3(2): v4("192.168.1.0/24")}, nil},
		{"a held slice outside the layout is replaced", Subnets{l3(1): v4("10.0.0.0/24")}, nil, []Key{l3(1)}, Subnets{l3(1): v4("192.168.0.0/24")}, nil},
		{"exhausted", nil, nil, []Key{l3(1), l3(2), l3(3), l3(4), l3(5)}, nil, ErrExhausted},
		{"layer2 needs a block too", nil, nil, []Key{l3(1), l3(2), l3(3), l3(4), l2(5)}, nil, ErrExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Allocate(l, tc.held, tc.remembered, tc.keys)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.Format(), got.Format()); diff != "" {
				t.Fatal(diff)
			}
		})
	}
	// 127 Layer2 networks fill one shared block.
	var keys []Key
	for i := 1; i <= 128; i++ {
		keys = append(keys, l2(i))
	}
	got, err := Allocate(l, nil, nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	if got[l2(127)] != v4("192.168.0.254/31") || got[l2(128)] != v4("192.168.1.2/31") {
		t.Errorf("layer2 packing: 127 -> %v, 128 -> %v", got[l2(127)], got[l2(128)])
	}
}

func TestAnnotations(t *testing.T) {
	a := Allocation{TunnelKey: 16715776, Subnets: Subnets{
		l3(1):  {V4: pfx("192.168.0.0/24"), V6: pfx("fd01::/96")},
		l2(40): {V4: pfx("192.168.4.2/31"), V6: pfx("fd01::4:0:2/127")},
	}}
	ann := a.Annotations()
	want := `{"layer2_40":{"ipv4":"192.168.4.2/31","ipv6":"fd01::4:0:2/127"},"layer3_1":{"ipv4":"192.168.0.0/24","ipv6":"fd01::/96"}}`
	if ann[v1.ConnectSubnetsAnnotation] != want {
		t.Fatalf("got %s\nwant %s", ann[v1.ConnectSubnetsAnnotation], want)
	}
	back, ok, err := ParseAllocation(ann)
	if err != nil || !ok || back.TunnelKey != a.TunnelKey || back.Subnets.Format() != a.Subnets.Format() {
		t.Fatalf("round trip: %+v %v %v", back, ok, err)
	}
	if _, ok, err := ParseAllocation(map[string]string{}); ok || err != nil {
		t.Fatalf("no annotations: %v %v", ok, err)
	}
	for _, bad := range []map[string]string{
		{v1.ConnectRouterTunnelKeyAnnotation: "x", v1.ConnectSubnetsAnnotation: "{}"},
		{v1.ConnectRouterTunnelKeyAnnotation: "5", v1.ConnectSubnetsAnnotation: "[]"},
		{v1.ConnectRouterTunnelKeyAnnotation: "5", v1.ConnectSubnetsAnnotation: `{"layer4_1":{"ipv4":"10.0.0.0/24"}}`},
		{v1.ConnectRouterTunnelKeyAnnotation: "5", v1.ConnectSubnetsAnnotation: `{"layer3_1":{"ipv4":"fd01::/64"}}`},
		{v1.ConnectRouterTunnelKeyAnnotation: "5", v1.ConnectSubnetsAnnotation: `{"layer3_1":{}}`},
	} {
		if _, _, err := ParseAllocation(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	cluster := config.Default()
	l := layout(t, cs("192.168.0.0/16", 24))
	l6 := layout(t, cs("192.168.0.0/16", 24), cs("fd01::/64", 120))
	net := func(name, topo string, subnets ...string) Network {
		n := Network{Name: name, Object: "ClusterUserDefinedNetwork " + name, ID: len(name), Topology: topo, Role: netconf.RolePrimary,
			Join: []netip.Prefix{pfx("100.65.0.0/16")}, Transit: []netip.Prefix{pfx("100.88.0.0/16")}}
		for _, s := range subnets {
			n.Subnets = append(n.Subnets, pfx(s))
		}
		return n
	}
	blue, green := net("blue", netconf.TopologyLayer3, "103.103.0.0/16"), net("green", netconf.TopologyLayer2, "104.104.0.0/16")
	secondary := net("sec", netconf.TopologyLayer3, "105.105.0.0/16")
	secondary.Role = netconf.RoleSecondary
	ln := net("ln", netconf.TopologyLocalnet, "105.105.0.0/16")
	for _, tc := range []struct {
		name   string
		l      Layout
		nets   []Network
		peers  []Peer
		reason string
		msg    string
	}{
		{"accepted", l, []Network{blue, green}, nil, "", ""},
		{"secondary", l, []Network{blue, secondary}, nil, v1.ReasonUnsupportedNetworkType, "Network 'sec' (ClusterUserDefinedNetwork sec) has role 'Secondary'. Only 'Primary' role networks are supported"},
		{"localnet", l, []Network{blue, ln}, nil, v1.ReasonUnsupportedNetworkType, "has type 'localnet'"},
		{"one network", l, []Network{blue}, nil, v1.ReasonInsufficientNetworks, "Only 1 network selected, minimum 2 networks required for connection"},
		{"none", l, nil, nil, v1.ReasonInsufficientNetworks, "Only 0 network selected"},
		{"ipv4 with ipv6", l6, []Network{blue, net("v6", netconf.TopologyLayer3, "fd10::/48")}, nil, v1.ReasonIPFamilyMismatch,
			"Cannot connect single-stack IPv4 network 'blue' with single-stack IPv6 network 'v6'. Networks must use the same IP families"},
		{"no ipv6 connect subnet", l, []Network{net("a6", netconf.TopologyLayer3, "fd10::/48"), net("b6", netconf.TopologyLayer3, "fd11::/48")}, nil, v1.ReasonIPFamilyMismatch,
			"have no IPv6 range"},
		{"overlapping pod subnets", l, []Network{blue, net("teal", netconf.TopologyLayer2, "103.103.1.0/24")}, nil, v1.ReasonOverlappingNetworkSubnets,
			"Cannot connect networks 'blue' and 'teal': overlapping pod subnets 103.103.0.0/16 and 103.103.1.0/24"},
		{"connect subnet over a pod subnet", l, []Network{blue, net("red", netconf.TopologyLayer3, "192.168.1.0/24")}, nil, v1.ReasonConnectSubnetConflict,
			"Connect subnet 192.168.0.0/16 conflicts with pod subnet 192.168.1.0/24 of network 'red'"},
		{"connect subnet over the service CIDR", layout(t, cs("10.96.0.0/16", 24)), []Network{blue, green}, nil, v1.ReasonConnectSubnetConflict,
			"Connect subnet 10.96.0.0/16 conflicts with the service CIDR 10.96.0.0/16"},
		{"connect subnet over the join subnet", layout(t, cs("100.65.0.0/16", 24)), []Network{blue, green}, nil, v1.ReasonConnectSubnetConflict,
			"conflicts with join subnet 100.65.0.0/16 of network 'blue'"},
		{"connect subnet over the transit subnet", layout(t, cs("100.88.0.0/20", 24)), []Network{blue, green}, nil, v1.ReasonConnectSubnetConflict,
			"conflicts with transit subnet 100.88.0.0/16 of network 'blue'"},
		{"connect subnet over the masquerade subnet", layout(t, cs("169.254.0.0/16", 24)), []Network{blue, green}, nil, v1.ReasonConnectSubnetConflict,
			"conflicts with the masquerade subnet"},
		{"connect subnets of another connect of the same network", l, []Network{blue, green},
			[]Peer{{Name: "other", Ranges: []netip.Prefix{pfx("192.168.128.0/17")}, Networks: map[string]bool{"green": true}}}, v1.ReasonConnectSubnetOverlap,
			"Connect subnet 192.168.0.0/16 overlaps with connect subnet 192.168.128.0/17 of ClusterNetworkConnect 'other' which also selects network 'green'"},
		{"another connect of other networks may overlap", l, []Network{blue, green},
			[]Peer{{Name: "other", Ranges: []netip.Prefix{pfx("192.168.0.0/16")}, Networks: map[string]bool{"red": true}}}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Validate(tc.l, tc.nets, cluster, tc.peers)
			if tc.reason == "" {
				if r != nil {
					t.Fatalf("refused: %v", r)
				}
				return
			}
			if r == nil || r.Reason != tc.reason || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("got %v, want %s: %q", r, tc.reason, tc.msg)
			}
		})
	}
	if r := CheckFit(l, []Network{blue, green}, 128); r == nil || r.Reason != v1.ReasonConnectSubnetExhausted {
		t.Errorf("node ID 128 in /24 blocks: %v", r)
	}
	if r := CheckFit(l, []Network{green}, 128); r != nil {
		t.Errorf("Layer2 networks need no per-node link: %v", r)
	}
}

// TestPeers: only active connects enabling the connectivity type
// count, whatever else they enable; peers of several connects add up;
// the network itself is never its own peer.
func TestPeers(t *testing.T) {
	l3 := func(id int) Key { return Key{Topology: netconf.TopologyLayer3, ID: id} }
	l2 := func(id int) Key { return Key{Topology: netconf.TopologyLayer2, ID: id} }
	cnc := func(name string, accepted bool, types []v1.ConnectivityType, keys ...Key) v1.ClusterNetworkConnect {
		c := v1.ClusterNetworkConnect{}
		c.Name = name
		c.Spec.ConnectivityEnabled = types
		subnets := Subnets{}
		for i, k := range keys {
			subnets[k] = Slice{V4: netip.MustParsePrefix(fmt.Sprintf("192.168.%d.0/24", i))}
		}
		c.Annotations = Allocation{TunnelKey: 7, Subnets: subnets}.Annotations()
		status := metav1.ConditionFalse
		if accepted {
			status = metav1.ConditionTrue
		}
		c.Status.Conditions = []metav1.Condition{{Type: v1.ConditionAccepted, Status: status}}
		return c
	}
	svc := []v1.ConnectivityType{v1.ClusterIPServiceNetwork}
	both := []v1.ConnectivityType{v1.PodNetwork, v1.ClusterIPServiceNetwork}
	pods := []v1.ConnectivityType{v1.PodNetwork}
	for _, tc := range []struct {
		name string
		cncs []v1.ClusterNetworkConnect
		want []Key
	}{
		{"services only", []v1.ClusterNetworkConnect{cnc("a", true, svc, l3(1), l3(2), l2(3))}, []Key{l2(3), l3(2)}},
		{"pods and services", []v1.ClusterNetworkConnect{cnc("a", true, both, l3(1), l2(3))}, []Key{l2(3)}},
		{"pods only: none for services", []v1.ClusterNetworkConnect{cnc("a", true, pods, l3(1), l2(3))}, []Key{}},
		{"refused: none", []v1.ClusterNetworkConnect{cnc("a", false, svc, l3(1), l2(3))}, []Key{}},
		{"not a member: none", []v1.ClusterNetworkConnect{cnc("a", true, svc, l3(4), l2(3))}, []Key{}},
		{"two connects add up, once each", []v1.ClusterNetworkConnect{cnc("a", true, svc, l3(1), l3(2)), cnc("b", true, both, l3(2), l3(1), l2(5))}, []Key{l2(5), l3(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Peers(tc.cncs, l3(1), v1.ClusterIPServiceNetwork)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := Peers([]v1.ClusterNetworkConnect{cnc("a", true, pods, l3(1), l2(3)), cnc("b", true, svc, l3(1), l3(2))}, l3(1), v1.PodNetwork); !cmp.Equal(got, []Key{l2(3)}) {
		t.Errorf("pod peers %v, want [layer2_3]", got)
	}
	deleting := cnc("a", true, svc, l3(1), l3(2))
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if got := Peers([]v1.ClusterNetworkConnect{deleting}, l3(1), v1.ClusterIPServiceNetwork); len(got) != 0 {
		t.Errorf("a connect being deleted gives peers %v", got)
	}
}

// TestView: a connect shows its slices to those who read it for a
// connectivity type it enables, once accepted and allocated; nothing
// otherwise, so a change of anything else concerns none of them.
func TestView(t *testing.T) {
	l3 := Key{Topology: netconf.TopologyLayer3, ID: 1}
	cnc := func(accepted bool, types ...v1.ConnectivityType) *v1.ClusterNetworkConnect {
		c := &v1.ClusterNetworkConnect{}
		c.Spec.ConnectivityEnabled = types
		c.Annotations = Allocation{TunnelKey: 7, Subnets: Subnets{l3: Slice{V4: netip.MustParsePrefix("192.168.0.0/24")}}}.Annotations()
		status := metav1.ConditionFalse
		if accepted {
			status = metav1.ConditionTrue
		}
		c.Status.Conditions = []metav1.Condition{{Type: v1.ConditionAccepted, Status: status}}
		return c
	}
	slices := Subnets{l3: Slice{V4: netip.MustParsePrefix("192.168.0.0/24")}}.Format()
	for _, tc := range []struct {
		name string
		cnc  *v1.ClusterNetworkConnect
		t    v1.ConnectivityType
		want string
	}{
		{"none", nil, v1.PodNetwork, ""},
		{"enabled and accepted", cnc(true, v1.PodNetwork), v1.PodNetwork, slices},
		{"another type", cnc(true, v1.PodNetwork), v1.ClusterIPServiceNetwork, ""},
		{"not accepted", cnc(false, v1.PodNetwork, v1.ClusterIPServiceNetwork), v1.ClusterIPServiceNetwork, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := View(tc.cnc, tc.t); got != tc.want {
				t.Errorf("View = %q, want %q", got, tc.want)
			}
		})
	}
}
