package connect

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Network is a selected network as validation sees it.
type Network struct {
	// Name is the network name (the NAD config's name).
	Name string
	// Object names the network object for messages ("UserDefinedNetwork
	// blue/net", "ClusterUserDefinedNetwork green").
	Object   string
	ID       int
	Topology string // netconf topology
	Role     string // netconf role
	Subnets  []netip.Prefix
	Join     []netip.Prefix
	Transit  []netip.Prefix
}

// Key is the network's key in the annotation.
func (n Network) Key() Key { return Key{Topology: n.Topology, ID: n.ID} }

// Peer is an older ClusterNetworkConnect: its connect subnets and the
// networks it selects (the caller passes only those that take precedence).
type Peer struct {
	Name     string
	Ranges   []netip.Prefix
	Networks map[string]bool
}

// Refusal is why a ClusterNetworkConnect is not accepted: a reason of the
// Accepted condition (api/v1) and a message naming what is wrong.
type Refusal struct {
	Reason, Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

func refuse(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Validate checks a selection (networks sorted by name) against the seed's
// rules, in this order: every network primary Layer3 or Layer2, at least
// two, the same IP families (covered by the connect subnets), no two
// networks' subnets overlapping, the connect subnets clear of the networks'
// subnets and the cluster's reserved ranges, and of the connect subnets of
// the peers (older connects) selecting one of the same networks. It returns
// the first failure.
func Validate(l Layout, nets []Network, cluster config.Cluster, peers []Peer) *Refusal {
	for _, n := range nets {
		switch {
		case n.Role != netconf.RolePrimary:
			return refuse(v1.ReasonUnsupportedNetworkType, "Network '%s' (%s) has role '%s'. Only 'Primary' role networks are supported", n.Name, n.Object, titleRole(n.Role))
		case n.Topology != netconf.TopologyLayer3 && n.Topology != netconf.TopologyLayer2:
			return refuse(v1.ReasonUnsupportedNetworkType, "Network '%s' (%s) has type '%s'. Only layer3 and layer2 networks are supported", n.Name, n.Object, n.Topology)
		}
	}
	if len(nets) < 2 {
		return refuse(v1.ReasonInsufficientNetworks, "Only %d network selected, minimum 2 networks required for connection", len(nets))
	}
	first := nets[0]
	for _, n := range nets[1:] {
		if families(n.Subnets) != families(first.Subnets) {
			return refuse(v1.ReasonIPFamilyMismatch, "Cannot connect %s network '%s' with %s network '%s'. Networks must use the same IP families",
				families(first.Subnets), first.Name, families(n.Subnets), n.Name)
		}
	}
	for _, s := range first.Subnets {
		if !l.Has(s.Addr()) {
			return refuse(v1.ReasonIPFamilyMismatch, "The networks are %s but the connect subnets %s have no %s range", families(first.Subnets), l, family(s.Addr()))
		}
	}
	for i, a := range nets {
		for _, b := range nets[i+1:] {
			if p, q, ok := overlap(a.Subnets, b.Subnets); ok {
				return refuse(v1.ReasonOverlappingNetworkSubnets, "Cannot connect networks '%s' and '%s': overlapping pod subnets %s and %s", a.Name, b.Name, p, q)
			}
		}
	}
	for _, r := range l.Ranges {
		for _, n := range nets {
			for _, part := range []struct {
				what string
				list []netip.Prefix
			}{{"pod subnet", n.Subnets}, {"join subnet", n.Join}, {"transit subnet", n.Transit}} {
				if _, q, ok := overlap([]netip.Prefix{r.CIDR}, part.list); ok {
					return refuse(v1.ReasonConnectSubnetConflict, "Connect subnet %s conflicts with %s %s of network '%s'", r.CIDR, part.what, q, n.Name)
				}
			}
		}
		for _, res := range cluster.Reserved() {
			if r.CIDR.Overlaps(res.Prefix) {
				return refuse(v1.ReasonConnectSubnetConflict, "Connect subnet %s conflicts with the %s %s", r.CIDR, res.Name, res.Prefix)
			}
		}
		for _, t := range cluster.TransitSubnets {
			if r.CIDR.Overlaps(t) {
				return refuse(v1.ReasonConnectSubnetConflict, "Connect subnet %s conflicts with the transit subnet %s", r.CIDR, t)
			}
		}
	}
	names := map[string]bool{}
	for _, n := range nets {
		names[n.Name] = true
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	for _, p := range peers {
		shared := ""
		for _, n := range nets {
			if p.Networks[n.Name] {
				shared = n.Name
				break
			}
		}
		if shared == "" {
			continue
		}
		if mine, theirs, ok := overlap(l.Prefixes(), p.Ranges); ok {
			return refuse(v1.ReasonConnectSubnetOverlap, "Connect subnet %s overlaps with connect subnet %s of ClusterNetworkConnect '%s' which also selects network '%s'. Each ClusterNetworkConnect selecting the same network must use non-overlapping connect subnets",
				mine, theirs, p.Name, shared)
		}
	}
	return nil
}

// CheckFit reports whether the layout holds the selection: enough blocks
// (Allocate says) and, with a Layer3 network, a link for every node ID.
func CheckFit(l Layout, nets []Network, maxNodeID int) *Refusal {
	for _, n := range nets {
		if n.Topology == netconf.TopologyLayer3 && maxNodeID >= l.LinksPerBlock {
			return refuse(v1.ReasonConnectSubnetExhausted, "Insufficient IP addresses in connect subnet %s: a Layer3 network's block holds links for node IDs up to %d, and a node has ID %d",
				l, l.LinksPerBlock-1, maxNodeID)
		}
	}
	return nil
}

// families describes the IP families of subnets: "single-stack IPv4",
// "single-stack IPv6" or "dual-stack".
func families(subnets []netip.Prefix) string {
	v4, v6 := false, false
	for _, s := range subnets {
		if s.Addr().Is4() {
			v4 = true
		} else {
			v6 = true
		}
	}
	switch {
	case v4 && v6:
		return "dual-stack"
	case v6:
		return "single-stack IPv6"
	case v4:
		return "single-stack IPv4"
	}
	return "address-less"
}

// overlap returns the first pair of overlapping prefixes of a and b.
func overlap(a, b []netip.Prefix) (netip.Prefix, netip.Prefix, bool) {
	for _, p := range a {
		for _, q := range b {
			if p.Overlaps(q) {
				return p, q, true
			}
		}
	}
	return netip.Prefix{}, netip.Prefix{}, false
}

// titleRole is the API's spelling of a netconf role.
func titleRole(role string) string {
	if role == "" {
		return role
	}
	return strings.ToUpper(role[:1]) + role[1:]
}
