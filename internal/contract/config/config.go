// Package config holds the cluster-wide settings every ovn-udn component must
// agree on: the default network's subnets, service CIDRs, and the internal
// join, transit, masquerade and primary-link subnets, plus defaults for
// networks. The same values are given to cluster-manager, zone controllers
// and `ovn-udn render`.
package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Cluster is the cluster-wide configuration.
type Cluster struct {
	// ClusterSubnets are the default network's pod subnets (CIDR/hostPrefix).
	ClusterSubnets []netconf.Subnet
	// ServiceCIDRs are the Kubernetes service ranges.
	ServiceCIDRs []netip.Prefix
	// DefaultJoinSubnets join the default network's routers.
	DefaultJoinSubnets []netip.Prefix
	// UDNJoinSubnets are the join subnets of primary user-defined networks that
	// do not set their own.
	UDNJoinSubnets []netip.Prefix
	// TransitSubnets connect zones (transit switches and routers).
	TransitSubnets []netip.Prefix
	// MasqueradeSubnets hold two addresses per network for gateway SNAT; they
	// must be large enough for 2 × (MaxNetworks + 1) addresses.
	MasqueradeSubnets []netip.Prefix
	// PrimaryLinkSubnets hold the point-to-point links between the primary
	// networks of one namespace (internal/rows/primarylinks): at most one per IP
	// family, each large enough for a /31 (/127) at every index 1..4095
	// (2 × 4096 addresses, a /19 or /115). Like the masquerade subnets they
	// are link-local-like internal addresses: no user-defined network may
	// overlap them (Reserved).
	PrimaryLinkSubnets []netip.Prefix
	// MTU is the default MTU of networks that do not set one.
	MTU int
	// MaxNetworks limits how many user-defined networks may exist (at most 4095,
	// the network ID space).
	MaxNetworks int
	// MaxNetworksPerNamespace limits the UserDefinedNetworks one namespace may
	// have created (0: no limit), so that a tenant creating networks in a loop
	// cannot take the cluster's network IDs from the others. Networks created
	// by administrators (ClusterUserDefinedNetworks, NADs) do not count.
	MaxNetworksPerNamespace int
	// InfrastructureServices are the default-network services ("namespace/name")
	// pods with a primary user-defined network still reach, through their
	// default-network interface: the API server and DNS by default.
	InfrastructureServices []string
}

// DefaultInfrastructureServices are the services every pod reaches.
var DefaultInfrastructureServices = []string{"default/kubernetes", "kube-system/kube-dns"}

// IsInfrastructureService reports whether the service namespace/name is one
// of the InfrastructureServices.
func (c Cluster) IsInfrastructureService(namespace, name string) bool {
	for _, s := range c.InfrastructureServices {
		if s == namespace+"/"+name {
			return true
		}
	}
	return false
}

// MaxNetworkID is the largest network ID; 0 is the default network.
const MaxNetworkID = 4095

// DefaultMaxNetworksPerNamespace is the default limit of UserDefinedNetworks
// per namespace: a primary network and more secondary networks than a pod has
// interfaces in practice.
const DefaultMaxNetworksPerNamespace = 32

// Default returns the configuration of a dual-stack kind-like cluster.
func Default() Cluster {
	return Cluster{
		ClusterSubnets:     mustSubnets(true, "10.244.0.0/16/24", "fd00:10:244::/48/64"),
		ServiceCIDRs:       mustPrefixes("10.96.0.0/16", "fd00:10:96::/112"),
		DefaultJoinSubnets: mustPrefixes("100.64.0.0/16", "fd98::/64"),
		UDNJoinSubnets:     mustPrefixes("100.65.0.0/16", "fd99::/64"),
		TransitSubnets:     mustPrefixes("100.88.0.0/16", "fd97::/64"),
		MasqueradeSubnets:  mustPrefixes("169.254.0.0/17", "fd69::/112"),
		PrimaryLinkSubnets: mustPrefixes(DefaultPrimaryLinkSubnets...),
		MTU:                1400,
		MaxNetworks:        MaxNetworkID,

		MaxNetworksPerNamespace: DefaultMaxNetworksPerNamespace,

		InfrastructureServices: append([]string(nil), DefaultInfrastructureServices...),
	}
}

// DefaultPrimaryLinkSubnets are the default PrimaryLinkSubnets: right after
// the default masquerade subnets (169.254.0.0/17, fd69::/112), each exactly
// 2 × 4096 addresses.
var DefaultPrimaryLinkSubnets = []string{"169.254.128.0/19", "fd69::1:0/115"}

// Validate checks the configuration is usable: every list parses, the
// masquerade subnets hold two addresses for each possible network, and the
// primary link subnets hold a link for every pair of network IDs.
func (c Cluster) Validate() error {
	if c.MaxNetworks < 1 || c.MaxNetworks > MaxNetworkID {
		return fmt.Errorf("max networks must be between 1 and %d, got %d", MaxNetworkID, c.MaxNetworks)
	}
	if c.MaxNetworksPerNamespace < 0 {
		return fmt.Errorf("max networks per namespace must be 0 (no limit) or more, got %d", c.MaxNetworksPerNamespace)
	}
	if c.MTU < 576 || c.MTU > 65536 {
		return fmt.Errorf("mtu must be between 576 and 65536, got %d", c.MTU)
	}
	if len(c.ClusterSubnets) == 0 {
		return fmt.Errorf("no cluster subnets")
	}
	for _, s := range c.InfrastructureServices {
		if ns, name, ok := strings.Cut(s, "/"); !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("infrastructure service %q is not namespace/name", s)
		}
	}
	for _, p := range c.MasqueradeSubnets {
		if err := MasqueradeFits(p, c.MaxNetworks); err != nil {
			return err
		}
	}
	return c.validatePrimaryLinks()
}

// PrimaryLinkAddresses is how many addresses a primary link subnet must
// hold: a /31 (/127) at every index 1..MaxNetworkID (the XOR of two network
// IDs), index i at offsets 2i and 2i+1, so offsets up to 2 × 4096 - 1.
const PrimaryLinkAddresses = 2 * (MaxNetworkID + 1)

// PrimaryLinkFits checks that p holds PrimaryLinkAddresses addresses.
func PrimaryLinkFits(p netip.Prefix) error {
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits >= 31 {
		return nil
	}
	if have := uint64(1) << hostBits; have < PrimaryLinkAddresses {
		return fmt.Errorf("primary link subnet %s holds %d addresses; links between primary networks need at least %d (a /31 or /127 at each index 1..%d, the XOR of the two network IDs): use a /19 (IPv4) or /115 (IPv6) or larger",
			p, have, PrimaryLinkAddresses, MaxNetworkID)
	}
	return nil
}

// validatePrimaryLinks checks the primary link subnets: large enough, at
// most one per IP family (a link takes one address of each family), and
// overlapping no other internal subnet.
func (c Cluster) validatePrimaryLinks() error {
	families := map[bool]netip.Prefix{}
	for _, p := range c.PrimaryLinkSubnets {
		if err := PrimaryLinkFits(p); err != nil {
			return err
		}
		if q, ok := families[p.Addr().Is4()]; ok {
			return fmt.Errorf("primary link subnets %s and %s are of one IP family; give at most one per family", q, p)
		}
		families[p.Addr().Is4()] = p
	}
	others := c.Reserved()
	for _, p := range c.UDNJoinSubnets {
		others = append(others, NamedPrefix{"user-defined network join subnet", p})
	}
	for _, p := range c.TransitSubnets {
		others = append(others, NamedPrefix{"transit subnet", p})
	}
	for _, p := range c.PrimaryLinkSubnets {
		for _, o := range others {
			if o.Name != primaryLinkName && p.Overlaps(o.Prefix) {
				return fmt.Errorf("primary link subnet %s overlaps the %s %s", p, o.Name, o.Prefix)
			}
		}
	}
	return nil
}

// primaryLinkName names the primary link subnets in Reserved.
const primaryLinkName = "primary link subnet"

// MasqueradeFits checks that p holds two masquerade addresses for every
// network ID up to maxNetworks, after the addresses the nodes themselves use
// (see internal/allocator: masquerade addresses).
func MasqueradeFits(p netip.Prefix, maxNetworks int) error {
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits >= 31 {
		return nil
	}
	need := uint64(2*(maxNetworks+1) + MasqueradeReserved)
	if have := uint64(1) << hostBits; have < need {
		return fmt.Errorf("masquerade subnet %s holds %d addresses; %d networks need at least %d (two per network plus %d reserved): use a larger subnet or fewer networks", p, have, maxNetworks, need, MasqueradeReserved)
	}
	return nil
}

// MasqueradeReserved is how many addresses at the start of each masquerade
// subnet are reserved for the nodes' own use before per-network pairs begin.
const MasqueradeReserved = 16

// HostMasqueradeIPs are what the node's external bridge SNATs the host's
// connections to services to, before handing them to a gateway router: the
// second reserved address of each masquerade subnet (169.254.0.2, fd69::2).
func (c Cluster) HostMasqueradeIPs() []netip.Addr { return c.reservedMasquerade(2) }

// MasqueradeNextHops are the next hops of the host's routes to the service
// CIDRs and of the gateway routers' routes back to HostMasqueradeIPs: the
// fourth reserved address (169.254.0.4, fd69::4). Nothing holds them; each
// side has a static neighbour entry with the gateway MAC.
func (c Cluster) MasqueradeNextHops() []netip.Addr { return c.reservedMasquerade(4) }

// reservedMasquerade returns the n-th address of each masquerade subnet.
func (c Cluster) reservedMasquerade(n int) []netip.Addr {
	var out []netip.Addr
	for _, p := range c.MasqueradeSubnets {
		a := p.Masked().Addr()
		for i := 0; i < n; i++ {
			a = a.Next()
		}
		if a.IsValid() && p.Contains(a) {
			out = append(out, a)
		}
	}
	return out
}

// ServiceHairpinIPs are the addresses a Service's load balancer gives a
// connection it sends back to the pod that opened it (hairpin): the fifth
// reserved address of each masquerade subnet (169.254.0.5, fd69::5 by
// default), as OVN-Kubernetes uses them.
func (c Cluster) ServiceHairpinIPs() []netip.Addr { return c.reservedMasquerade(5) }

// MaxNodeID is the largest node ID the transit subnets can address: each node
// takes a /31 (or /127) at offset 2 × ID, and a logical port tunnel key is at
// most 32767.
func (c Cluster) MaxNodeID() int {
	max := 1<<15 - 1
	for _, t := range c.TransitSubnets {
		hostBits := t.Addr().BitLen() - t.Bits()
		if hostBits < 17 {
			if m := (1<<hostBits)/2 - 1; m < max {
				max = m
			}
		}
	}
	return max
}

// Reserved lists the subnets user-defined networks must not overlap, each with
// a name for error messages.
func (c Cluster) Reserved() []NamedPrefix {
	var out []NamedPrefix
	for _, s := range c.ClusterSubnets {
		out = append(out, NamedPrefix{"cluster default network subnet", s.CIDR})
	}
	for _, p := range c.ServiceCIDRs {
		out = append(out, NamedPrefix{"service CIDR", p})
	}
	for _, p := range c.DefaultJoinSubnets {
		out = append(out, NamedPrefix{"default network join subnet", p})
	}
	for _, p := range c.MasqueradeSubnets {
		out = append(out, NamedPrefix{"masquerade subnet", p})
	}
	for _, p := range c.PrimaryLinkSubnets {
		out = append(out, NamedPrefix{primaryLinkName, p})
	}
	return out
}

// NamedPrefix is a prefix with what it is used for.
type NamedPrefix struct {
	Name   string
	Prefix netip.Prefix
}

// AddFlags registers flags for every setting on fs, filling c.
func (c *Cluster) AddFlags(fs *pflag.FlagSet) {
	fs.Var(subnetsValue{&c.ClusterSubnets}, "cluster-subnets", "default network pod subnets, CIDR/hostPrefix, comma-separated")
	fs.Var(prefixesValue{&c.ServiceCIDRs}, "service-cidrs", "Kubernetes service CIDRs")
	fs.Var(prefixesValue{&c.DefaultJoinSubnets}, "default-join-subnets", "join subnets of the default network")
	fs.Var(prefixesValue{&c.UDNJoinSubnets}, "udn-join-subnets", "default join subnets of primary user-defined networks")
	fs.Var(prefixesValue{&c.TransitSubnets}, "transit-subnets", "transit subnets between zones")
	fs.Var(prefixesValue{&c.MasqueradeSubnets}, "masquerade-subnets", "masquerade subnets (two addresses per network)")
	fs.Var(prefixesValue{&c.PrimaryLinkSubnets}, "primary-link-subnets", "subnets of the links between a namespace's primary networks, at most one per IP family (a /31 or /127 per network pair: at least a /19 or /115)")
	fs.IntVar(&c.MTU, "mtu", c.MTU, "default MTU of networks")
	fs.IntVar(&c.MaxNetworks, "max-networks", c.MaxNetworks, "maximum number of user-defined networks")
	fs.IntVar(&c.MaxNetworksPerNamespace, "max-networks-per-namespace", c.MaxNetworksPerNamespace,
		"maximum number of UserDefinedNetworks created in one namespace (0: no limit); administrators' networks do not count")
	fs.StringSliceVar(&c.InfrastructureServices, "infrastructure-services", c.InfrastructureServices,
		"default-network services (namespace/name) pods with a primary user-defined network still reach through their default-network interface")
}

type prefixesValue struct{ p *[]netip.Prefix }

func (v prefixesValue) String() string {
	if v.p == nil {
		return ""
	}
	return netconf.JoinList(*v.p)
}
func (v prefixesValue) Type() string { return "cidrs" }
func (v prefixesValue) Set(s string) error {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		out = append(out, p)
	}
	*v.p = out
	return nil
}

type subnetsValue struct{ s *[]netconf.Subnet }

func (v subnetsValue) String() string {
	if v.s == nil {
		return ""
	}
	return netconf.JoinList(*v.s)
}
func (v subnetsValue) Type() string { return "subnets" }
func (v subnetsValue) Set(s string) error {
	var out []netconf.Subnet
	for _, f := range strings.Split(s, ",") {
		sn, err := netconf.ParseSubnet(f, true)
		if err != nil {
			return err
		}
		out = append(out, sn)
	}
	*v.s = out
	return nil
}

func mustPrefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, x := range s {
		out[i] = netip.MustParsePrefix(x)
	}
	return out
}

func mustSubnets(hostPrefix bool, s ...string) []netconf.Subnet {
	out := make([]netconf.Subnet, len(s))
	for i, x := range s {
		sn, err := netconf.ParseSubnet(x, hostPrefix)
		if err != nil {
			panic(err)
		}
		out[i] = sn
	}
	return out
}
