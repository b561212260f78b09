package services

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

var blue = topology.Network{Name: "blue", ID: 1, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary}

func svc(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

type ep struct {
	addr, node                string
	ready, serving, terminate *bool
}

func slice(family discoveryv1.AddressType, ports map[string]int32, eps ...ep) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{AddressType: family}
	for name, port := range ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)})
	}
	for _, e := range eps {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.addr}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminate}})
	}
	return s
}

var (
	yes = ptr.To(true)
	no  = ptr.To(false)
)

func lb(name, proto string, vips map[string]string, opts ...string) *nbdb.LoadBalancer {
	p := nbdb.LoadBalancerProtocol(proto)
	o := map[string]string{"event": "false", "reject": "true", "skip_snat": "false", "neighbor_responder": "none"}
	for i := 0; i+1 < len(opts); i += 2 {
		o[opts[i]] = opts[i+1]
	}
	id := "lb:blue:" + map[string]string{"tcp": "TCP", "udp": "UDP", "sctp": "SCTP"}[proto]
	return &nbdb.LoadBalancer{UUID: id, Name: name, Protocol: &p, Vips: vips, Options: o,
		ExternalIDs: map[string]string{KindKey: "Service", ServiceKey: "ns/web", topology.NetworkKey: "blue", topology.ControllerKey: topology.ZoneController}}
}

// nodeLB is lb for the zone's node's gateway router.
func nodeLB(proto string, vips map[string]string, opts ...string) *nbdb.LoadBalancer {
	l := lb("blue_Service_ns/web_"+map[string]string{"tcp": "TCP", "udp": "UDP"}[proto]+"_node_router_node2", proto, vips, opts...)
	l.UUID += ":node"
	return l
}

func router(members ...string) ovsdbsync.Contribution {
	return ovsdbsync.Contribution{Target: &nbdb.LogicalRouter{Name: "GR_blue_node2"}, Column: "load_balancer", Members: members}
}

func group(members ...string) ovsdbsync.Contribution {
	return ovsdbsync.Contribution{Target: &nbdb.LoadBalancerGroup{Name: "blue_clusterLBGroup"}, Column: "load_balancer", Members: members}
}

func TestRender(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	v6 := discoveryv1.AddressTypeIPv6
	const tcpName = "blue_Service_ns/web_TCP_cluster"
	for _, c := range []struct {
		name   string
		in     Input
		rows   []any
		contrb []ovsdbsync.Contribution
	}{{
		name: "ready endpoints only, sorted",
		in: Input{Service: svc(), Network: blue, Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080},
			ep{addr: "10.128.1.5", ready: yes}, ep{addr: "10.128.0.4"}, ep{addr: "10.128.2.9", ready: no})}},
		rows:   []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.0.4:8080,10.128.1.5:8080"})},
		contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "hairpin: connections sent back to their own pod come from the hairpin addresses",
		in: Input{Service: svc(), Network: blue, HairpinIPs: []netip.Addr{netip.MustParseAddr("169.254.0.5"), netip.MustParseAddr("fd69::5")},
			Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080}, ep{addr: "10.128.1.5", ready: yes})}},
		rows:   []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.1.5:8080"}, "hairpin_snat_ip", "169.254.0.5 fd69::5")},
		contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "no endpoints: the VIP rejects",
		in:   Input{Service: svc(), Network: blue},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": ""})}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "serving terminating endpoints only when none is ready",
		in: Input{Service: svc(), Network: blue, Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080},
			ep{addr: "10.128.1.5", ready: no, serving: yes, terminate: yes}, ep{addr: "10.128.1.6", ready: no, serving: no, terminate: yes})}},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.1.5:8080"})}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "terminating endpoints ignored while one is ready",
		in: Input{Service: svc(), Network: blue, Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080},
			ep{addr: "10.128.1.5", ready: no, serving: yes, terminate: yes}, ep{addr: "10.128.1.7", ready: yes})}},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.1.7:8080"})}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "dual-stack, two protocols, named target ports resolved per slice",
		in: Input{Service: svc(func(s *corev1.Service) {
			s.Spec.ClusterIPs = []string{"10.96.0.20", "fd00:10:96::20"}
			s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
		}), Network: blue, Slices: []discoveryv1.EndpointSlice{
			slice(v4, map[string]int32{"http": 8080}, ep{addr: "10.128.0.4"}),
			slice(v4, map[string]int32{"http": 9090}, ep{addr: "10.128.0.5"}),
			slice(v6, map[string]int32{"http": 8080}, ep{addr: "fd00::4"}),
			func() discoveryv1.EndpointSlice {
				s := slice(v4, nil, ep{addr: "10.128.0.4"})
				s.Ports = []discoveryv1.EndpointPort{{Name: ptr.To("dns"), Port: ptr.To(int32(5353)), Protocol: ptr.To(corev1.ProtocolUDP)}}
				return s
			}(),
		}},
		rows: []any{
			lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.0.4:8080,10.128.0.5:9090", "[fd00:10:96::20]:80": "[fd00::4]:8080"}),
			lb("blue_Service_ns/web_UDP_cluster", "udp", map[string]string{"10.96.0.20:53": "10.128.0.4:5353", "[fd00:10:96::20]:53": ""}),
		},
		contrb: []ovsdbsync.Contribution{group("lb:blue:TCP", "lb:blue:UDP")},
	}, {
		name: "internalTrafficPolicy Local keeps the zone's node's endpoints",
		in: Input{Service: svc(func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
		}),
			Network: blue, Node: "node2", Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080},
				ep{addr: "10.128.1.5", node: "node2"}, ep{addr: "10.128.0.4", node: "node1"})}},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.1.5:8080"})}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "ClientIP affinity with its timeout",
		in: Input{Service: svc(func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(int32(60))}}
		}), Network: blue},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": ""}, "affinity_timeout", "60")}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "ClientIP affinity, default timeout",
		in:   Input{Service: svc(func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP }), Network: blue},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": ""}, "affinity_timeout", "10800")}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "NodePort: node addresses on the zone's gateway router, all endpoints, the router's SNAT",
		in: Input{Service: svc(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
		}), Network: blue, Node: "node2", NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.100.12")},
			Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080}, ep{addr: "10.128.1.5", node: "node2"}, ep{addr: "10.128.0.4", node: "node1"})}},
		rows: []any{
			lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.0.4:8080,10.128.1.5:8080"}),
			nodeLB("tcp", map[string]string{"192.168.100.12:30080": "10.128.0.4:8080,10.128.1.5:8080"}),
		},
		contrb: []ovsdbsync.Contribution{group("lb:blue:TCP"), router("lb:blue:TCP:node")},
	}, {
		name: "externalTrafficPolicy Local, external and ingress IPs, affinity: local endpoints, client address kept",
		in: Input{Service: svc(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.ExternalIPs = []string{"172.30.0.10"}
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}, {IP: "172.30.0.10"}}
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		}), Network: blue, Node: "node2", NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.100.12")},
			Slices: []discoveryv1.EndpointSlice{slice(v4, map[string]int32{"http": 8080}, ep{addr: "10.128.1.5", node: "node2"}, ep{addr: "10.128.0.4", node: "node1"})}},
		rows: []any{
			lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": "10.128.0.4:8080,10.128.1.5:8080"}, "affinity_timeout", "10800"),
			nodeLB("tcp", map[string]string{
				"192.168.100.12:30080": "10.128.1.5:8080", "172.30.0.10:80": "10.128.1.5:8080", "203.0.113.7:80": "10.128.1.5:8080",
			}, "skip_snat", "true", "affinity_timeout", "10800"),
		},
		contrb: []ovsdbsync.Contribution{group("lb:blue:TCP"), router("lb:blue:TCP:node")},
	}, {
		name: "ClusterIP service: nothing on the router",
		in:   Input{Service: svc(), Network: blue, Node: "node2", NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.100.12")}},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": ""})}, contrb: []ovsdbsync.Contribution{group("lb:blue:TCP")},
	}, {
		name: "connected for services: the cluster-IP load balancer on the peers' pod switches too",
		in: Input{Service: svc(), Network: blue, Node: "node2", Peers: []topology.Network{
			{Name: "green", ID: 2, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary},
			{Name: "yellow", ID: 3, Topology: netconf.TopologyLayer2, Role: netconf.RolePrimary}}},
		rows: []any{lb(tcpName, "tcp", map[string]string{"10.96.0.20:80": ""})},
		contrb: []ovsdbsync.Contribution{group("lb:blue:TCP"),
			{Target: &nbdb.LogicalSwitch{Name: "green_node2"}, Column: "load_balancer", Members: []string{"lb:blue:TCP"}},
			{Target: &nbdb.LogicalSwitch{Name: "yellow_ovn_layer2_switch"}, Column: "load_balancer", Members: []string{"lb:blue:TCP"}}},
	}, {
		name: "headless: nothing",
		in:   Input{Service: svc(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} }), Network: blue},
	}, {
		name: "ExternalName: nothing",
		in:   Input{Service: svc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }), Network: blue},
	}, {
		name: "secondary network: nothing",
		in:   Input{Service: svc(), Network: topology.Network{Name: "sec", Topology: netconf.TopologyLayer3, Role: netconf.RoleSecondary}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			out := Render(c.in)
			var rows []any
			for _, r := range out.Rows {
				rows = append(rows, r)
			}
			if d := cmp.Diff(c.rows, rows); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.contrb, out.Contributions); d != "" {
				t.Errorf("contributions (-want +got):\n%s", d)
			}
		})
	}
}

func TestRenderInfrastructure(t *testing.T) {
	def := topology.DefaultNetwork(config.Default())
	dns := svc(func(s *corev1.Service) {
		s.Namespace, s.Name = "kube-system", "kube-dns"
		s.Spec.ClusterIPs = []string{"10.96.0.10"}
		s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53}}
	})
	out := Render(Input{Service: dns, Network: def, Infrastructure: true})
	var matches []string
	for _, r := range out.Rows {
		if a, ok := r.(*nbdb.ACL); ok {
			if a.Action != nbdb.ACLActionAllowRelated || a.Direction != nbdb.ACLDirectionFromLport || a.Priority <= topology.IsolationDropPriority {
				t.Errorf("ACL %+v must allow-related from the pod above the isolation's drop", a)
			}
			matches = append(matches, a.Match)
		}
	}
	want := []string{
		"inport == @udn_isolated_pods && ip4.dst == 10.96.0.10 && udp.dst == 53",
		"inport == @udn_isolated_pods && ip4.dst == 10.96.0.10 && tcp.dst == 53",
	}
	if d := cmp.Diff(want, matches); d != "" {
		t.Errorf("ACL matches (-want +got):\n%s", d)
	}
	if len(out.Contributions) != 2 || out.Contributions[1].Column != "acls" || len(out.Contributions[1].Members) != 2 {
		t.Errorf("contributions %+v, want the load balancers to the group and two ACLs to the port group", out.Contributions)
	}
	// Not infrastructure, or not on the default network: no ACL.
	for _, in := range []Input{{Service: dns, Network: def}, {Service: dns, Network: blue, Infrastructure: true}} {
		for _, r := range Render(in).Rows {
			if _, ok := r.(*nbdb.ACL); ok {
				t.Errorf("ACL rendered for %+v", in)
			}
		}
	}
}

// TestRenderDefaultNodePortOnSwitch: the default network's pods reach
// their own node's address through the management port, not the gateway
// router, so its node load balancers (node ports, external IPs) go on the
// node's switch too; a user-defined network's stay on its router alone
// (TestRender's NodePort case).
func TestRenderDefaultNodePortOnSwitch(t *testing.T) {
	def := topology.DefaultNetwork(config.Default())
	out := Render(Input{Service: svc(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	}), Network: def, Node: "node2", NodeIPs: []netip.Addr{netip.MustParseAddr("192.168.100.12")}})
	var routerLBs, switchLBs []string
	for _, c := range out.Contributions {
		switch tgt := c.Target.(type) {
		case *nbdb.LogicalRouter:
			if tgt.Name == def.GatewayRouter("node2") {
				routerLBs = c.Members
			}
		case *nbdb.LogicalSwitch:
			if tgt.Name == def.NodeSwitch("node2") {
				switchLBs = c.Members
			}
		}
	}
	if len(routerLBs) == 0 {
		t.Fatalf("no node load balancer on %s: %+v", def.GatewayRouter("node2"), out.Contributions)
	}
	if d := cmp.Diff(routerLBs, switchLBs); d != "" {
		t.Errorf("the node switch %s's load balancers (-router's +switch's):\n%s", def.NodeSwitch("node2"), d)
	}
}
