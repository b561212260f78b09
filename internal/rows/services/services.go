// Package services translates, as pure functions, a Kubernetes Service and
// the EndpointSlices of its network into the Northbound rows one zone needs:
// one Load_Balancer per protocol in the network, put into the network's
// cluster Load_Balancer_Group (a contribution to a row the network's topology
// owns, see internal/ovsdbsync) and onto the pod switches of the networks
// connected to it for services (ClusterNetworkConnect), and, for the services every pod may reach on
// the default network (the API server, DNS), the ACLs that let pods with a
// primary user-defined network through the default network's isolation.
//
// Which network a service belongs to and which slices hold its endpoints
// there are decided elsewhere (internal/contract/podnet.NamespacePrimary,
// internal/mirror.ForService); this package only translates.
package services

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// External IDs on the rows of a service.
const (
	// KindKey says what kind of object a row serves ("Service").
	KindKey = "k8s.ovn.org/kind"
	// ServiceKey names the service ("<namespace>/<name>").
	ServiceKey = "k8s.ovn.org/service"
)

// DefaultAffinityTimeout is Kubernetes' default sessionAffinity ClientIP
// timeout (seconds).
const DefaultAffinityTimeout = 10800

// Input is one service as one zone sees it.
type Input struct {
	Service *corev1.Service
	// Network is the service's network (its namespace's primary network).
	Network topology.Network
	// Slices hold the service's endpoints on Network.
	Slices []discoveryv1.EndpointSlice
	// Node is the zone's node (internalTrafficPolicy: Local keeps its
	// endpoints only).
	Node string
	// HairpinIPs are the source addresses of connections a load balancer
	// sends back to the pod that opened them (config.Cluster.ServiceHairpinIPs).
	HairpinIPs []netip.Addr
	// NodeIPs are the zone node's addresses on the external network (its
	// gateway routers' external addresses): node ports listen there.
	NodeIPs []netip.Addr
	// Infrastructure is true for the services pods with a primary
	// user-defined network reach through the default network (only
	// meaningful when Network is the default network).
	Infrastructure bool
	// Peers are the networks connected to Network for ClusterIP services
	// (internal/contract/connect.Peers): the cluster-IP load balancers go on
	// their pod switches in the zone too, so their pods reach the service;
	// the connect's routes carry the load-balanced traffic across.
	Peers []topology.Network
}

// Output is what a service owns in a zone and what it contributes to rows
// the network owns.
type Output struct {
	Rows          []model.Model
	Contributions []ovsdbsync.Contribution
}

// Render translates a service. Headless services, ExternalName services and
// services of networks without services (secondary, Localnet) render
// nothing.
func Render(in Input) Output {
	svc := in.Service
	if svc == nil || !in.Network.HasServices() || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return Output{}
	}
	vips := clusterIPs(svc)
	if len(vips) == 0 {
		return Output{}
	}
	var out Output
	var members []string
	for _, proto := range protocols(svc) {
		lb := loadBalancer(in, proto, vips)
		out.Rows = append(out.Rows, lb)
		members = append(members, lb.UUID)
	}
	out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
		Target: &nbdb.LoadBalancerGroup{Name: in.Network.ClusterLBGroup()}, Column: "load_balancer", Members: members,
	})
	for _, p := range in.Peers {
		out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
			Target: &nbdb.LogicalSwitch{Name: p.PodSwitch(in.Node)}, Column: "load_balancer", Members: members,
		})
	}
	if len(in.NodeIPs) > 0 { // Render serves primary networks only (HasServices)
		var routerLBs []string
		for _, proto := range protocols(svc) {
			if lb := nodeLoadBalancer(in, proto); lb != nil {
				out.Rows = append(out.Rows, lb)
				routerLBs = append(routerLBs, lb.UUID)
			}
		}
		if len(routerLBs) > 0 {
			out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
				Target: &nbdb.LogicalRouter{Name: in.Network.GatewayRouter(in.Node)}, Column: "load_balancer", Members: routerLBs,
			})
			if in.Network.IsDefault() {
				// The default network's pods reach their own node's address
				// through the management port (topology's node reroute), not
				// the gateway router: its node ports and external IPs are
				// served to them on their switch.
				out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
					Target: &nbdb.LogicalSwitch{Name: in.Network.NodeSwitch(in.Node)}, Column: "load_balancer", Members: routerLBs,
				})
			}
		}
	}
	if in.Infrastructure && in.Network.IsDefault() {
		acls := infrastructureACLs(in, vips)
		var ids []string
		for _, a := range acls {
			out.Rows = append(out.Rows, a)
			ids = append(ids, a.UUID)
		}
		out.Contributions = append(out.Contributions, ovsdbsync.Contribution{
			Target: &nbdb.PortGroup{Name: topology.IsolatedPortGroup}, Column: "acls", Members: ids,
		})
	}
	return out
}

// clusterIPs returns the service's cluster IPs (none for headless services).
func clusterIPs(svc *corev1.Service) []netip.Addr {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []netip.Addr
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// protocols returns the service's port protocols, sorted.
func protocols(svc *corev1.Service) []corev1.Protocol {
	set := map[corev1.Protocol]bool{}
	for _, p := range svc.Spec.Ports {
		set[protocolOf(p.Protocol)] = true
	}
	out := make([]corev1.Protocol, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func protocolOf(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// loadBalancer renders the load balancer of one protocol: a VIP per cluster
// IP and port, each to the endpoints of the same family.
func loadBalancer(in Input, proto corev1.Protocol, ips []netip.Addr) *nbdb.LoadBalancer {
	svc := in.Service
	vips := map[string]string{}
	for _, p := range svc.Spec.Ports {
		if protocolOf(p.Protocol) != proto {
			continue
		}
		for _, ip := range ips {
			vips[hostPort(ip, int(p.Port))] = strings.Join(Backends(in, p, ip.Is4()), ",")
		}
	}
	lb := newLoadBalancer(in, proto, fmt.Sprintf("lb:%s:%s", in.Network.Name, proto),
		in.Network.ServiceLoadBalancer(svc.Namespace, svc.Name, string(proto)), vips, false)
	if len(in.HairpinIPs) > 0 {
		hp := make([]string, len(in.HairpinIPs))
		for i, a := range in.HairpinIPs {
			hp[i] = a.String()
		}
		lb.Options["hairpin_snat_ip"] = strings.Join(hp, " ")
	}
	return lb
}

// newLoadBalancer is a service's load balancer of one protocol with the
// options and external IDs every one of them has (sessionAffinity
// included); skipSNAT keeps clients' addresses on routers that force SNAT.
func newLoadBalancer(in Input, proto corev1.Protocol, uuid, name string, vips map[string]string, skipSNAT bool) *nbdb.LoadBalancer {
	lbProto := nbdb.LoadBalancerProtocol(strings.ToLower(string(proto)))
	lb := &nbdb.LoadBalancer{
		UUID:     uuid,
		Name:     name,
		Protocol: &lbProto,
		Vips:     vips,
		Options: map[string]string{
			"event":              "false",
			"reject":             "true",
			"skip_snat":          strconv.FormatBool(skipSNAT),
			"neighbor_responder": "none",
		},
		ExternalIDs: map[string]string{
			KindKey:                "Service",
			ServiceKey:             in.Service.Namespace + "/" + in.Service.Name,
			topology.NetworkKey:    in.Network.Name,
			topology.ControllerKey: topology.ZoneController,
		},
	}
	if svc := in.Service; svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		timeout := DefaultAffinityTimeout
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			timeout = int(*c.ClientIP.TimeoutSeconds)
		}
		lb.Options["affinity_timeout"] = strconv.Itoa(timeout)
	}
	return lb
}

// Backends returns the "ip:port" backends of a service port for one IP
// family, sorted: the ready endpoints of the slices of that family whose port
// of the same name and protocol is set; when none is ready, the serving
// terminating ones (as kube-proxy does); with internalTrafficPolicy Local,
// only the zone's node's.
func Backends(in Input, port corev1.ServicePort, ipv4 bool) []string {
	local := in.Service.Spec.InternalTrafficPolicy != nil && *in.Service.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	return backends(in, port, ipv4, local)
}

// backends is Backends with the node-local choice made by the caller.
func backends(in Input, port corev1.ServicePort, ipv4, local bool) []string {
	family := discoveryv1.AddressTypeIPv6
	if ipv4 {
		family = discoveryv1.AddressTypeIPv4
	}
	ready, serving := map[string]bool{}, map[string]bool{}
	for _, s := range in.Slices {
		if s.AddressType != family {
			continue
		}
		target, ok := slicePort(s, port)
		if !ok {
			continue
		}
		for _, e := range s.Endpoints {
			if local && (e.NodeName == nil || *e.NodeName != in.Node) {
				continue
			}
			isReady := e.Conditions.Ready == nil || *e.Conditions.Ready
			isServing := e.Conditions.Serving == nil || *e.Conditions.Serving // unset: serving, as kube-proxy reads it
			isTerminating := e.Conditions.Terminating != nil && *e.Conditions.Terminating
			for _, a := range e.Addresses {
				ip, err := netip.ParseAddr(a)
				if err != nil || ip.Is4() != ipv4 {
					continue
				}
				b := hostPort(ip, target)
				switch {
				case isReady:
					ready[b] = true
				case isServing && isTerminating:
					serving[b] = true
				}
			}
		}
	}
	use := ready
	if len(ready) == 0 {
		use = serving
	}
	out := make([]string, 0, len(use))
	for b := range use {
		out = append(out, b)
	}
	sort.Strings(out)
	return out
}

// slicePort returns the target port number a slice gives a service port: the
// slice port of the same name and protocol.
func slicePort(s discoveryv1.EndpointSlice, port corev1.ServicePort) (int, bool) {
	for _, p := range s.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if name == port.Name && proto == protocolOf(port.Protocol) && p.Port != nil {
			return int(*p.Port), true
		}
	}
	return 0, false
}

func hostPort(ip netip.Addr, port int) string {
	return netip.AddrPortFrom(ip, uint16(port)).String()
}
