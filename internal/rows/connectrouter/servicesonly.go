package connectrouter

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"sort"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Priorities and tier of the ACLs that let only service traffic cross when
// a connect enables ClusterIPServiceNetwork without PodNetwork (the seed's
// "Case3"). Tier 0 is evaluated before network policies (tier 2).
const (
	// ServicePassPriority lets traffic toward the service CIDRs go on to
	// the next tiers (network policies) and the load balancers.
	ServicePassPriority = 5000
	// ConnectedDropPriority drops new connections from a network's pods
	// straight to the other connected networks' pods.
	ConnectedDropPriority = 4950
	// NodeAllowPriority admits the node's own traffic to its pods (as
	// Kubernetes requires) with allow-related, which also makes the switch
	// track connections: replies of service connections crossing back are
	// then established, not new, and pass the drop.
	NodeAllowPriority = 4900
	// ServicesOnlyTier is the ACL tier of these ACLs.
	ServicesOnlyTier = 0
)

// NetworkKey names, on a connect's per-network rows, the network they serve.
const NetworkKey = "k8s.ovn.org/network"

// ConnectedSubnetsSet is the name of the Address_Set holding, for one
// network of a connect, the subnets of the other networks it is connected
// to ("connected_udn_subnets_<hash>_v4"/"_v6"; the seed names
// one connected_udn_subnets). The hash keeps the name an OVN identifier
// whatever the connect's and network's names are.
func ConnectedSubnetsSet(cnc, network string, ipv6 bool) string {
	h := fnv.New64a()
	h.Write([]byte(cnc + "|" + network))
	fam := "_v4"
	if ipv6 {
		fam = "_v6"
	}
	return fmt.Sprintf("connected_udn_subnets_%016x%s", h.Sum64(), fam)
}

// servicesOnly adds the ACLs of a connect that lets only ClusterIP service
// traffic cross: on each member's pod switch in the zone, from-lport,
// evaluated before the load balancers (so they see the service address,
// not the backend): pass toward the service CIDRs, drop new connections
// toward the other members' subnets, and the node's allow-related.
// Replies of a service connection leave the backend's switch established,
// so they pass.
func (b *builder) servicesOnly(members []Member, loc nodeinfo.Info, serviceCIDRs []netip.Prefix) {
	var pass string
	if len(serviceCIDRs) > 0 {
		var terms []string
		for _, p := range serviceCIDRs {
			terms = append(terms, fmt.Sprintf("%s.dst == %s", topology.IPMatch(p), p.Masked()))
		}
		match := strings.Join(terms, " || ")
		pass = "acl:" + b.cnc + ":pass"
		b.add(&nbdb.ACL{UUID: pass, Direction: nbdb.ACLDirectionFromLport, Priority: ServicePassPriority, Tier: ServicesOnlyTier,
			Match: match, Action: nbdb.ACLActionPass, ExternalIDs: b.ext("")})
	}
	for _, m := range members {
		n := m.Network
		if n.Topology != netconf.TopologyLayer3 && n.Topology != netconf.TopologyLayer2 || !m.Active.Has(loc.Name) {
			continue // no pod switch of it here
		}
		sw := n.PodSwitch(loc.Name)
		var acls []string
		if pass != "" {
			acls = append(acls, pass)
		}
		for _, v6 := range []bool{false, true} {
			set, ok := b.connectedSet(members, n, v6)
			if !ok {
				continue
			}
			ext := b.ext("")
			ext[NetworkKey] = n.Name
			id := "acl:" + b.cnc + ":drop:" + set
			b.add(&nbdb.ACL{UUID: id, Direction: nbdb.ACLDirectionFromLport, Priority: ConnectedDropPriority, Tier: ServicesOnlyTier,
				Match: fmt.Sprintf("%s.dst == $%s && ct.new", ipOf(v6), set), Action: nbdb.ACLActionDrop, ExternalIDs: ext})
			acls = append(acls, id)
		}
		for _, a := range topology.ManagementAddresses(n, loc) {
			match := fmt.Sprintf("%s.src == %s", ipOf(a.Is6()), a)
			id := "acl:" + b.cnc + ":node:" + sw + ":" + match
			ext := b.ext(loc.Name)
			ext[NetworkKey] = n.Name
			b.add(&nbdb.ACL{UUID: id, Direction: nbdb.ACLDirectionToLport, Priority: NodeAllowPriority, Tier: ServicesOnlyTier,
				Match: match, Action: nbdb.ACLActionAllowRelated, ExternalIDs: ext})
			acls = append(acls, id)
		}
		b.contributeTo(&nbdb.LogicalSwitch{Name: sw}, "acls", acls...)
	}
}

// connectedSet adds (once) the Address_Set of the subnets of the family of
// the members other than n, and returns its name; ok is false when they
// have none. The reroutes on n's router and, in services-only mode, the
// drop on its switch match it.
func (b *builder) connectedSet(members []Member, n topology.Network, v6 bool) (string, bool) {
	var others []string
	for _, o := range members {
		if o.Network.Name == n.Name {
			continue
		}
		for _, s := range o.Network.Subnets {
			if s.CIDR.Addr().Is6() == v6 {
				others = append(others, s.CIDR.Masked().String())
			}
		}
	}
	if len(others) == 0 {
		return "", false
	}
	set := ConnectedSubnetsSet(b.cnc, n.Name, v6)
	if b.sets == nil {
		b.sets = map[string]bool{}
	}
	if !b.sets[set] {
		b.sets[set] = true
		sort.Strings(others)
		ext := b.ext("")
		ext[NetworkKey] = n.Name
		b.add(&nbdb.AddressSet{UUID: "as:" + set, Name: set, Addresses: others, ExternalIDs: ext})
	}
	return set, true
}

// ipOf is the match field prefix of a family.
func ipOf(v6 bool) string {
	if v6 {
		return "ip6"
	}
	return "ip4"
}
