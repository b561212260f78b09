package services

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// infrastructureACLs let the default-network ports of pods with a primary
// user-defined network (topology.IsolatedPortGroup) reach an infrastructure
// service: one allow-related ACL per cluster IP and port, matched before the
// load balancer translates the destination, above the isolation's drop.
// Replies come back as part of the connection.
func infrastructureACLs(in Input, ips []netip.Addr) []*nbdb.ACL {
	var out []*nbdb.ACL
	seen := map[string]bool{}
	for _, ip := range ips {
		family := "ip4"
		if ip.Is6() {
			family = "ip6"
		}
		for _, p := range in.Service.Spec.Ports {
			proto := strings.ToLower(string(protocolOf(p.Protocol)))
			match := fmt.Sprintf("inport == @%s && %s.dst == %s && %s.dst == %d", topology.IsolatedPortGroup, family, ip, proto, p.Port)
			if seen[match] {
				continue
			}
			seen[match] = true
			out = append(out, &nbdb.ACL{
				UUID:      fmt.Sprintf("acl:infra:%s:%s:%d", ip, proto, p.Port),
				Direction: nbdb.ACLDirectionFromLport,
				Priority:  topology.IsolationAllowPriority,
				Match:     match,
				Action:    nbdb.ACLActionAllowRelated,
				ExternalIDs: map[string]string{
					KindKey:                "Service",
					ServiceKey:             in.Service.Namespace + "/" + in.Service.Name,
					topology.NetworkKey:    in.Network.Name,
					topology.ControllerKey: topology.ZoneController,
				},
			})
		}
	}
	return out
}
