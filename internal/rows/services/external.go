package services

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
)

// ExternalIPs returns the addresses a service answers on from outside the
// cluster besides node ports: spec.externalIPs and the ingress IPs of
// status.loadBalancer (set by whoever implements LoadBalancer services),
// sorted and without duplicates.
func ExternalIPs(svc *corev1.Service) []netip.Addr {
	seen := map[netip.Addr]bool{}
	var out []netip.Addr
	add := func(s string) {
		if a, err := netip.ParseAddr(s); err == nil && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, s := range svc.Spec.ExternalIPs {
		add(s)
	}
	for _, i := range svc.Status.LoadBalancer.Ingress {
		add(i.IP)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// ExternalLocal reports whether traffic from outside keeps its source and
// only reaches endpoints on the node it arrived at (externalTrafficPolicy:
// Local on a NodePort or LoadBalancer service).
func ExternalLocal(svc *corev1.Service) bool {
	return svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal &&
		(svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer)
}

// nodeLoadBalancer renders the load balancer of one protocol that serves a
// service from outside on the zone's node, on its network's gateway router
// only: a VIP per node address and node port, and per external IP and
// service port. With externalTrafficPolicy Local it keeps the client's
// address (skip_snat) and the node's endpoints; otherwise the router SNATs
// to its own address (lb_force_snat_ip) so replies from any node come back
// through it. Nil when the service has nothing reachable from outside.
func nodeLoadBalancer(in Input, proto corev1.Protocol) *nbdb.LoadBalancer {
	svc := in.Service
	local := ExternalLocal(svc)
	extIPs := ExternalIPs(svc)
	vips := map[string]string{}
	for _, p := range svc.Spec.Ports {
		if protocolOf(p.Protocol) != proto {
			continue
		}
		if p.NodePort > 0 {
			for _, ip := range in.NodeIPs {
				vips[hostPort(ip, int(p.NodePort))] = strings.Join(backends(in, p, ip.Is4(), local), ",")
			}
		}
		for _, ip := range extIPs {
			vips[hostPort(ip, int(p.Port))] = strings.Join(backends(in, p, ip.Is4(), local), ",")
		}
	}
	if len(vips) == 0 {
		return nil
	}
	return newLoadBalancer(in, proto, fmt.Sprintf("lb:%s:%s:node", in.Network.Name, proto),
		in.Network.NodeServiceLoadBalancer(svc.Namespace, svc.Name, string(proto), in.Node), vips, local)
}
