package podnet

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

const label = "k8s.ovn.org/primary-user-defined-network"

func nad(ns, name, conf string, allocated bool) *nadv1.NetworkAttachmentDefinition {
	n := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: conf}}
	if allocated {
		n.Annotations = map[string]string{netconf.NetworkIDAnnotation: "3"}
	}
	return n
}

func TestRequests(t *testing.T) {
	l3 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.l3","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","joinSubnet":"100.65.0.0/16","netAttachDefName":"ns1/l3"}`
	l3b := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.l3b","topology":"layer3","role":"primary","subnets":"10.129.0.0/16/24","netAttachDefName":"ns1/l3b"}`
	sec := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"other.sec","topology":"layer2","role":"secondary","subnets":"192.168.0.0/24","persistentIPs":true,"netAttachDefName":"other/sec"}`
	sec1 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.sec","topology":"layer2","role":"secondary","subnets":"192.168.0.0/24","persistentIPs":true,"netAttachDefName":"ns1/sec"}`
	stolen := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"other.sec","topology":"layer2","role":"secondary","subnets":"192.168.0.0/24","netAttachDefName":"ns1/steal"}`
	dflt := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"default","topology":"layer2","role":"secondary","subnets":"192.168.0.0/24","netAttachDefName":"ns1/dflt"}`
	bridge := `{"cniVersion":"1.0.0","type":"bridge","name":"br"}`
	inL3 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.inl3","topology":"layer2","role":"secondary","subnets":"10.128.7.0/24","netAttachDefName":"ns1/inl3"}`
	onJoin := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.onjoin","topology":"localnet","role":"secondary","subnets":"100.65.0.0/24","netAttachDefName":"ns1/onjoin"}`
	sec2 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.sec2","topology":"layer2","role":"secondary","subnets":"192.168.0.128/25","netAttachDefName":"ns1/sec2"}`
	// Egress is an administrator's: a ClusterUserDefinedNetwork's NADs.
	egress := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"cluster.udn.egress","topology":"layer3","role":"secondary","subnets":"10.140.0.0/16/24","egress":"gateway","netAttachDefName":"ns1/egress"}`
	egress2 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"cluster.udn.egress2","topology":"layer2","role":"secondary","subnets":"10.141.0.0/24","egress":"gateway","netAttachDefName":"ns1/egress2"}`
	udnEgress := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.egress","topology":"layer3","role":"secondary","subnets":"10.140.0.0/16/24","egress":"gateway","netAttachDefName":"ns1/egress"}`
	cudnNAD := func(ns, name, conf string) *nadv1.NetworkAttachmentDefinition {
		n, yes := nad(ns, name, conf, true), true
		n.Labels = map[string]string{netconf.ManagedByLabel: ""}
		n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "k8s.ovn.org/v1", Kind: netconf.KindCUDN, Name: name, UID: "u", Controller: &yes}}
		return n
	}
	route := func(sel string) map[string]string { return map[string]string{netconf.NetworksAnnotation: sel} }
	pod := func(ann map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p", Annotations: ann}}
	}
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{label: ""}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}
	nads := func(list ...*nadv1.NetworkAttachmentDefinition) map[string]*nadv1.NetworkAttachmentDefinition {
		m := map[string]*nadv1.NetworkAttachmentDefinition{}
		for _, n := range list {
			m[Key(n.Namespace, n.Name)] = n
		}
		return m
	}
	type want struct {
		key, role, claim string
		elsewhere        map[bool]bool
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		ns      *corev1.Namespace
		nads    map[string]*nadv1.NetworkAttachmentDefinition
		want    []want
		waiting string
	}{
		{"default only", pod(nil), plain, nil, []want{{"default", RolePrimary, "", nil}}, ""},
		{"primary UDN", pod(nil), labelled, nads(nad("ns1", "l3", l3, true)), []want{{"default", RoleInfrastructure, "", nil}, {"ns1/l3", RolePrimary, "", nil}}, ""},
		{"labelled, no network yet", pod(nil), labelled, nil, nil, WaitPrimaryNotReady},
		{"primary not allocated", pod(nil), labelled, nads(nad("ns1", "l3", l3, false)), nil, WaitPrimaryNotReady},
		{"two primaries, not placed", pod(nil), labelled, nads(nad("ns1", "l3", l3, true), nad("ns1", "l3b", l3b, true)), nil, WaitPlacementPending},
		{"secondary with claim, other plugin ignored",
			pod(map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","namespace":"ns1","ipam-claim-reference":"vm1"},{"name":"br"}]`}), plain,
			nads(nad("ns1", "sec", sec1, true), nad("ns1", "br", bridge, false)),
			[]want{{"default", RolePrimary, "", nil}, {"ns1/sec", RoleSecondary, "vm1", nil}}, ""},
		{"another namespace's network, short form", pod(map[string]string{netconf.NetworksAnnotation: "other/sec"}), plain,
			nads(nad("other", "sec", sec, true)), nil, WaitBadSelection},
		{"another namespace's network, JSON form", pod(map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","namespace":"other"}]`}), plain,
			nads(nad("other", "sec", sec, true)), nil, WaitBadSelection},
		{"another namespace's NAD is not a primary network", pod(nil), labelled,
			nads(nad("other", "l3", l3, true)), nil, WaitPrimaryNotReady},
		{"same network twice", pod(map[string]string{netconf.NetworksAnnotation: "sec,sec"}), plain,
			nads(nad("ns1", "sec", sec1, true)), nil, WaitBadSelection},
		{"bad MAC", pod(map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","mac":"zz:00:00:00:00:01"}]`}), plain,
			nads(nad("ns1", "sec", sec1, true)), nil, WaitBadSelection},
		{"multicast MAC", pod(map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","mac":"01:00:5e:00:00:01"}]`}), plain,
			nads(nad("ns1", "sec", sec1, true)), nil, WaitBadSelection},
		{"bad IP", pod(map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","ips":["10.0.0.300/24"]}]`}), plain,
			nads(nad("ns1", "sec", sec1, true)), nil, WaitBadSelection},
		{"interface name too long", pod(map[string]string{netconf.NetworksAnnotation: "sec@a-very-long-interface"}), plain,
			nads(nad("ns1", "sec", sec1, true)), nil, WaitBadSelection},
		{"NAD claiming another namespace's network name", pod(map[string]string{netconf.NetworksAnnotation: "steal"}), plain,
			nads(nad("ns1", "steal", stolen, true)), nil, WaitBadSelection},
		{"hand-made NAD claiming the default network", pod(map[string]string{netconf.NetworksAnnotation: "dflt"}), plain,
			nads(nad("ns1", "dflt", dflt, true)), nil, WaitBadSelection},
		{"selecting a missing network", pod(map[string]string{netconf.NetworksAnnotation: "nope"}), plain, nil, nil, WaitBadSelection},
		{"selecting a primary network", pod(map[string]string{netconf.NetworksAnnotation: "l3"}), labelled, nads(nad("ns1", "l3", l3, true)), nil, WaitBadSelection},
		{"secondary inside the primary's subnet", pod(map[string]string{netconf.NetworksAnnotation: "inl3"}), labelled,
			nads(nad("ns1", "l3", l3, true), nad("ns1", "inl3", inL3, true)), nil, WaitBadSelection},
		{"secondary over the primary's join subnet", pod(map[string]string{netconf.NetworksAnnotation: "onjoin"}), labelled,
			nads(nad("ns1", "l3", l3, true), nad("ns1", "onjoin", onJoin, true)), nil, WaitBadSelection},
		{"two secondaries with one subnet", pod(map[string]string{netconf.NetworksAnnotation: "sec,sec2"}), plain,
			nads(nad("ns1", "sec", sec1, true), nad("ns1", "sec2", sec2, true)), nil, WaitBadSelection},
		{"secondary beside the primary, apart", pod(map[string]string{netconf.NetworksAnnotation: "sec"}), labelled,
			nads(nad("ns1", "l3", l3, true), nad("ns1", "sec", sec1, true)),
			[]want{{"default", RoleInfrastructure, "", nil}, {"ns1/l3", RolePrimary, "", nil}, {"ns1/sec", RoleSecondary, "", nil}}, ""},
		{"default-route through a secondary with egress", pod(route(`[{"name":"egress","default-route":["10.140.0.1"]}]`)), plain,
			nads(cudnNAD("ns1", "egress", egress)),
			[]want{{"default", RolePrimary, "", map[bool]bool{true: true}}, {"ns1/egress", RoleSecondary, "", nil}}, ""},
		{"default-route through a namespace's own network with egress (a UDN's, or hand-made)", pod(route(`[{"name":"egress","default-route":["10.140.0.1"]}]`)), plain,
			nads(nad("ns1", "egress", udnEgress, true)), nil, WaitBadSelection},
		{"default-route through a secondary without egress", pod(route(`[{"name":"sec","default-route":["192.168.0.1"]}]`)), plain,
			nads(nad("ns1", "sec", sec1, true)), nil, WaitBadSelection},
		{"default-route beside a primary network", pod(route(`[{"name":"egress","default-route":["10.140.0.1"]}]`)), labelled,
			nads(nad("ns1", "l3", l3, true), cudnNAD("ns1", "egress", egress)), nil, WaitBadSelection},
		{"default-route of one family twice", pod(route(`[{"name":"egress","default-route":["10.140.0.1"]},{"name":"egress2","default-route":["10.141.0.1"]}]`)), plain,
			nads(cudnNAD("ns1", "egress", egress), cudnNAD("ns1", "egress2", egress2)), nil, WaitBadSelection},
		{"default-route of a family the network lacks", pod(route(`[{"name":"egress","default-route":["fd00::1"]}]`)), plain,
			nads(cudnNAD("ns1", "egress", egress)), nil, WaitBadSelection},
		{"default-route that is no address", pod(route(`[{"name":"egress","default-route":["gw"]}]`)), plain,
			nads(cudnNAD("ns1", "egress", egress)), nil, WaitBadSelection},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Requests(tc.pod, tc.ns, tc.nads, label)
			var w *Waiting
			if tc.waiting != "" {
				if !errors.As(err, &w) || w.Reason != tc.waiting {
					t.Fatalf("err = %v, want waiting %s", err, tc.waiting)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotW []want
			for _, r := range got {
				gotW = append(gotW, want{r.Key, r.Role, r.Claim, r.DefaultRouteElsewhere})
			}
			if diff := cmp.Diff(tc.want, gotW, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func pfx(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

// TestAttachSeedExample reproduces the seed's annotated pod: a pod of a
// namespace whose primary network is a dual-stack Layer3 UDN.
func TestAttachSeedExample(t *testing.T) {
	cfg := config.Default()
	conf, _ := netconf.ParseConfig(`{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"default.l3-network","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24,2600:db8::/29/64","joinSubnet":"100.65.0.0/16,fd99::/64","netAttachDefName":"default/l3-network"}`)
	def := Attach(Request{Key: DefaultKey, Network: "default", Role: RoleInfrastructure}, pfx("10.244.1.6/24", "fd00:10:244:2::6/64"),
		addrs("10.244.1.1", "fd00:10:244:2::1"), "", "ns/pod", cfg)
	udn := Attach(Request{Key: "default/l3-network", Network: conf.Name, Conf: conf, Role: RolePrimary}, pfx("10.128.1.3/24", "2600:db8:0:2::3/64"),
		addrs("10.128.1.1", "2600:db8:0:2::1"), "", "ns/pod", cfg)
	want := Networks{
		"default": {IPs: []string{"10.244.1.6/24", "fd00:10:244:2::6/64"}, MAC: "0a:58:0a:f4:01:06", Role: RoleInfrastructure,
			Routes: []Route{{"10.244.0.0/16", "10.244.1.1"}, {"fd00:10:244::/48", "fd00:10:244:2::1"}, {"100.64.0.0/16", "10.244.1.1"}, {"fd98::/64", "fd00:10:244:2::1"}}},
		"default/l3-network": {IPs: []string{"10.128.1.3/24", "2600:db8:0:2::3/64"}, MAC: "0a:58:0a:80:01:03", Role: RolePrimary,
			Gateways: []string{"10.128.1.1", "2600:db8:0:2::1"},
			Routes: []Route{{"10.128.0.0/16", "10.128.1.1"}, {"2600:db8::/29", "2600:db8:0:2::1"}, {"10.96.0.0/16", "10.128.1.1"},
				{"fd00:10:96::/112", "2600:db8:0:2::1"}, {"100.65.0.0/16", "10.128.1.1"}, {"fd99::/64", "2600:db8:0:2::1"}}},
	}
	got := Networks{"default": def, "default/l3-network": udn}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotation (-want +got):\n%s", diff)
	}
	back, err := Parse(map[string]string{Annotation: got.String()})
	if err != nil || !cmp.Equal(got, back) {
		t.Errorf("round trip: %v %v", err, cmp.Diff(got, back))
	}
}

func TestAttachSecondaryAndDefault(t *testing.T) {
	cfg := config.Default()
	l2, _ := netconf.ParseConfig(`{"type":"ovn-k8s-cni-overlay","name":"ns.l2","topology":"layer2","role":"secondary","subnets":"192.168.0.0/24"}`)
	a := Attach(Request{Key: "ns/l2", Network: "ns.l2", Conf: l2, Role: RoleSecondary}, pfx("192.168.0.5/24"), nil, "", "ns/p", cfg)
	if a.Gateways != nil || a.Routes != nil || a.MAC != "0a:58:c0:a8:00:05" {
		t.Errorf("secondary layer2: %+v", a)
	}
	noIPAM := Attach(Request{Key: "ns/l2", Network: "ns.l2", Conf: l2, Role: RoleSecondary}, nil, nil, "", "ns/p", cfg)
	if noIPAM.MAC == "" || noIPAM.MAC != DeriveMAC(nil, "ns.l2/ns/p") || len(noIPAM.IPs) != 0 {
		t.Errorf("IPAM disabled: %+v", noIPAM)
	}
	def := Attach(Request{Key: DefaultKey, Network: "default", Role: RolePrimary}, pfx("10.244.1.6/24"), addrs("10.244.1.1"), "", "ns/p", cfg)
	if len(def.Gateways) != 1 || def.Gateways[0] != "10.244.1.1" {
		t.Errorf("default network without a UDN must be the default route: %+v", def)
	}
	if PortName("default", "ns", "p") != "ns_p" || PortName("ns/l2", "ns", "p") != "ns.l2_ns_p" {
		t.Error("port names")
	}
}

// TestAttachDefaultRouteElsewhere: a secondary network with an egress
// gateway that the pod asks for its default route (default-route) takes
// the default route of that family; the default network keeps routes to
// the cluster's subnets, join subnet and service CIDRs of that family, and
// the node's own address of it (the secondary's gateway router holds that
// address), and its default route of the other.
func TestAttachDefaultRouteElsewhere(t *testing.T) {
	cfg := config.Default()
	egress, err := netconf.ParseConfig(`{"type":"ovn-k8s-cni-overlay","name":"ns.e","topology":"layer3","role":"secondary","subnets":"10.140.0.0/16/24","egress":"gateway"}`)
	if err != nil {
		t.Fatal(err)
	}
	asked := &netconf.NetworkSelection{Name: "e", Namespace: "ns", GatewayRequest: []string{"10.0.0.1"}}
	sec := Attach(Request{Key: "ns/e", Network: "ns.e", Conf: egress, Role: RoleSecondary, Selection: asked},
		pfx("10.140.3.5/24"), addrs("10.140.3.1"), "", "ns/p", cfg)
	if d := cmp.Diff([]string{"10.140.3.1"}, sec.Gateways); d != "" {
		t.Errorf("the secondary's gateways (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Route{{Dest: "10.140.0.0/16", NextHop: "10.140.3.1"}}, sec.Routes); d != "" {
		t.Errorf("the secondary's routes (-want +got):\n%s", d)
	}
	notAsked := Attach(Request{Key: "ns/e", Network: "ns.e", Conf: egress, Role: RoleSecondary, Selection: &netconf.NetworkSelection{Name: "e", Namespace: "ns"}},
		pfx("10.140.3.6/24"), addrs("10.140.3.1"), "", "ns/q", cfg)
	if notAsked.Gateways != nil {
		t.Errorf("a pod that did not ask got the secondary's default route: %v", notAsked.Gateways)
	}
	def := Attach(Request{Key: DefaultKey, Network: "default", Role: RolePrimary, DefaultRouteElsewhere: map[bool]bool{true: true},
		NodeAddresses: addrs("192.168.100.11", "fd00:192:168:100::11")},
		pfx("10.244.1.6/24", "fd00:10:244:2::6/64"), addrs("10.244.1.1", "fd00:10:244:2::1"), "", "ns/p", cfg)
	if d := cmp.Diff([]string{"fd00:10:244:2::1"}, def.Gateways); d != "" {
		t.Errorf("the default network's gateways (-want +got):\n%s", d)
	}
	var v4 []Route
	for _, r := range def.Routes {
		if r.NextHop == "10.244.1.1" {
			v4 = append(v4, r)
		}
	}
	want := []Route{{Dest: "10.244.0.0/16", NextHop: "10.244.1.1"}, {Dest: "100.64.0.0/16", NextHop: "10.244.1.1"}, {Dest: "10.96.0.0/16", NextHop: "10.244.1.1"},
		{Dest: "192.168.100.11/32", NextHop: "10.244.1.1"}} // the node's IPv4 address: its IPv6 one goes by the default route anyway
	if d := cmp.Diff(want, v4); d != "" {
		t.Errorf("the default network's IPv4 routes (-want +got):\n%s", d)
	}
	for _, r := range def.Routes {
		if r.Dest == "fd00:192:168:100::11/128" {
			t.Errorf("a host route for the node's IPv6 address, whose family keeps its default route: %v", r)
		}
	}
}

func TestNamespacePrimary(t *testing.T) {
	l3 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.l3","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"ns1/l3"}`
	l3b := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.l3b","topology":"layer3","role":"primary","subnets":"10.129.0.0/16/24","netAttachDefName":"ns1/l3b"}`
	sec := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.sec","topology":"layer2","role":"secondary","subnets":"192.168.0.0/24","netAttachDefName":"ns1/sec"}`
	other := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns2.l3","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"ns2/l3"}`
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{label: ""}}}
	plain := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1"}}
	nads := func(list ...*nadv1.NetworkAttachmentDefinition) map[string]*nadv1.NetworkAttachmentDefinition {
		m := map[string]*nadv1.NetworkAttachmentDefinition{}
		for _, n := range list {
			m[Key(n.Namespace, n.Name)] = n
		}
		return m
	}
	for _, c := range []struct {
		name    string
		ns      *corev1.Namespace
		nads    map[string]*nadv1.NetworkAttachmentDefinition
		network string // when ok; "": None
		ok      bool
	}{
		{"default network", plain, nads(nad("ns1", "sec", sec, true)), "default", true},
		{"primary UDN", labelled, nads(nad("ns1", "l3", l3, true), nad("ns1", "sec", sec, true)), "ns1.l3", true},
		{"primary UDN not allocated yet: undecided", labelled, nads(nad("ns1", "l3", l3, false)), "", false},
		{"two primary UDNs (same age): the first by name is home", labelled, nads(nad("ns1", "l3b", l3b, true), nad("ns1", "l3", l3, true)), "ns1.l3", true},
		{"two primary UDNs, one not allocated: the other", labelled, nads(nad("ns1", "l3", l3, false), nad("ns1", "l3b", l3b, true)), "ns1.l3b", true},
		{"labelled, no primary NAD: none", labelled, nads(nad("ns1", "sec", sec, true)), "", true},
		{"another namespace's NAD does not count", labelled, nads(nad("ns2", "l3", other, true)), "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, ok := NamespacePrimary(c.ns, c.nads, label)
			if ok != c.ok || ok && (p.Network != c.network || (c.network == "") != p.None()) {
				t.Errorf("NamespacePrimary = %+v, %v; want network %q, ok %v", p, ok, c.network, c.ok)
			}
		})
	}
}

// TestParsePodDropsOtherNamespaces: a forged entry for another namespace's
// NAD (or a key that names no namespace) is never an attachment of the pod.
func TestParsePodDropsOtherNamespaces(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "evil", Name: "p", Annotations: map[string]string{Annotation: `{` +
		`"default":{"ip_addresses":["10.244.1.5/24"],"mac_address":"0a:58:0a:f4:01:05","role":"infrastructure-locked"},` +
		`"evil/net":{"ip_addresses":["10.128.1.5/24"],"mac_address":"0a:58:0a:80:01:05","role":"primary"},` +
		`"victim/net":{"ip_addresses":["10.129.1.1/24"],"mac_address":"0a:58:0a:81:01:01","role":"primary"},` +
		`"evil":{"role":"primary"},"evil/":{"role":"secondary"},"/net":{"role":"secondary"}}`}}}
	nets, err := ParsePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range nets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if d := cmp.Diff([]string{"default", "evil/", "evil/net"}, keys); d != "" {
		t.Fatalf("attachments kept (-want +got):\n%s", d)
	}
}

// TestOverlapNamesBoth: the refusal of overlapping networks names both
// networks and both prefixes, so the pod's owner can tell which to drop.
func TestOverlapNamesBoth(t *testing.T) {
	l3 := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.l3","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","joinSubnet":"100.65.0.0/16","netAttachDefName":"ns1/l3"}`
	in := `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"ns1.in","topology":"layer2","role":"secondary","subnets":"10.128.7.0/24","netAttachDefName":"ns1/in"}`
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns1", Labels: map[string]string{label: ""}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p", Annotations: map[string]string{netconf.NetworksAnnotation: "in"}}}
	nads := map[string]*nadv1.NetworkAttachmentDefinition{"ns1/l3": nad("ns1", "l3", l3, true), "ns1/in": nad("ns1", "in", in, true)}
	_, err := Requests(pod, ns, nads, label)
	want := "networks ns1/l3 and ns1/in overlap (subnet 10.128.0.0/16 of ns1/l3, subnet 10.128.7.0/24 of ns1/in): a pod cannot attach both"
	var w *Waiting
	if !errors.As(err, &w) || w.Reason != WaitBadSelection || w.Message != want {
		t.Fatalf("err = %#v\nwant %s: %s", err, WaitBadSelection, want)
	}
}

// TestVMPortNames: an attachment that names a VM plugs into the VM's
// shared port, whatever the pod's labels say; others into the pod's own.
func TestVMPortNames(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "virt-launcher-vm1-x",
		Annotations: map[string]string{Annotation: `{"default":{"mac_address":"0a:58:0a:f4:00:03"},` +
			`"ns/l2":{"mac_address":"0a:58:0a:96:00:03","tunnel_id":16,"vm":"vm1"},` +
			`"ns/other":{"mac_address":"0a:58:0a:97:00:03","tunnel_id":17,"vm":"vm2"},` +
			`"ns/sec":{"mac_address":"0a:58:0a:98:00:03","tunnel_id":18}}`}}}
	nets, err := ParsePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"default":  "ns_virt-launcher-vm1-x",
		"ns/l2":    "ns.l2_ns_vm_vm1",
		"ns/other": "ns.other_ns_vm_vm2",
		"ns/sec":   "ns.sec_ns_virt-launcher-vm1-x",
	} {
		if got := PortNameOf(key, pod, nets[key]); got != want {
			t.Errorf("PortNameOf(%s) = %q, want %q", key, got, want)
		}
	}
	if got, want := VMs(pod), []string{"ns/vm1", "ns/vm2"}; !slices.Equal(got, want) {
		t.Errorf("VMs = %v, want %v", got, want)
	}
	if got := VMs(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}); got != nil {
		t.Errorf("VMs of a pod without attachments = %v", got)
	}
}
