// Package netconf defines the CNI network configuration that ovn-udn writes into
// NetworkAttachmentDefinitions, and the annotations cluster-manager records on
// them. It is the contract between the cluster-manager (which writes NADs), the
// zone controllers and the node agent (which read them), and `ovn-udn render`.
package netconf

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
)

// CNIType is the CNI plugin type of every network ovn-udn manages.
const CNIType = "ovn-k8s-cni-overlay"

// CNIVersion is the CNI specification version written into configs.
const CNIVersion = "1.0.0"

// Topologies as written in the config.
const (
	TopologyLayer3   = "layer3"
	TopologyLayer2   = "layer2"
	TopologyLocalnet = "localnet"
)

// Roles as written in the config.
const (
	RolePrimary   = "primary"
	RoleSecondary = "secondary"
)

// Annotations cluster-manager records on NetworkAttachmentDefinitions.
const (
	// NetworkIDAnnotation holds the network's cluster-wide ID (1..4095), the
	// same on every NAD of the network.
	NetworkIDAnnotation = "k8s.ovn.org/network-id"
	// TunnelKeysAnnotation holds the extra interconnect tunnel keys of the
	// network as a JSON array (the Layer2 transit router's first).
	TunnelKeysAnnotation = "k8s.ovn.org/tunnel-keys"
)

// Labels on every NAD ovn-udn renders from a network object.
const (
	// ManagedByLabel marks NADs rendered from a UserDefinedNetwork or
	// ClusterUserDefinedNetwork; their allocation belongs to that controller.
	ManagedByLabel = "k8s.ovn.org/user-defined-network"
	// OwnerKindLabel is the kind of the owning network object.
	OwnerKindLabel = "k8s.ovn.org/owner-kind"
)

// AllocationAnnotations renders a network's ID and tunnel keys annotations.
func AllocationAnnotations(networkID int, tunnelKeys []int) map[string]string {
	a := map[string]string{NetworkIDAnnotation: strconv.Itoa(networkID)}
	if len(tunnelKeys) > 0 {
		b, _ := json.Marshal(tunnelKeys)
		a[TunnelKeysAnnotation] = string(b)
	}
	return a
}

// ParseAllocation reads a NAD's network ID and tunnel keys annotations; ok is
// false when the NAD carries no network ID.
func ParseAllocation(a map[string]string) (id int, keys []int, ok bool, err error) {
	v, has := a[NetworkIDAnnotation]
	if !has {
		return 0, nil, false, nil
	}
	if id, err = strconv.Atoi(v); err != nil {
		return 0, nil, false, fmt.Errorf("annotation %s=%q is not a number", NetworkIDAnnotation, v)
	}
	if k, has := a[TunnelKeysAnnotation]; has {
		if err := json.Unmarshal([]byte(k), &keys); err != nil {
			return 0, nil, false, fmt.Errorf("annotation %s=%q is not a JSON list of numbers", TunnelKeysAnnotation, k)
		}
	}
	return id, keys, true, nil
}

// CUDNPrefix starts the NAD name and network name of every
// ClusterUserDefinedNetwork.
const CUDNPrefix = "cluster.udn."

// UDNNetworkName is the network name of the UserDefinedNetwork ns/name.
func UDNNetworkName(namespace, name string) string { return namespace + "." + name }

// CUDNNetworkName is the network name (and NAD name) of a ClusterUserDefinedNetwork.
func CUDNNetworkName(name string) string { return CUDNPrefix + name }

// NetConf is the CNI configuration of a network, as JSON in a NAD's spec.config.
type NetConf struct {
	CNIVersion string `json:"cniVersion"`
	// Name is the network name: "<namespace>.<udn>" or "cluster.udn.<cudn>".
	Name     string `json:"name"`
	Type     string `json:"type"`
	Topology string `json:"topology"`
	Role     string `json:"role"`
	// Subnets are comma-separated CIDRs; Layer3 entries may be CIDR/hostPrefix.
	Subnets        string `json:"subnets,omitempty"`
	ExcludeSubnets string `json:"excludeSubnets,omitempty"`
	JoinSubnet     string `json:"joinSubnet,omitempty"`
	// TransitSubnet is set only when the network must not use the default
	// transit subnet (its own subnets overlap it).
	TransitSubnet string `json:"transitSubnet,omitempty"`
	MTU           int    `json:"mtu,omitempty"`
	// NADName is the "<namespace>/<name>" of the NAD holding this config.
	NADName             string `json:"netAttachDefName"`
	PersistentIPs       bool   `json:"persistentIPs,omitempty"`
	VRF                 string `json:"vrf,omitempty"`
	PhysicalNetworkName string `json:"physicalNetworkName,omitempty"`
	VLANID              int    `json:"vlanID,omitempty"`
	// Egress is EgressGateway when a secondary Layer3 or Layer2 network
	// reaches the outside through a gateway router of its own on every
	// node, masqueraded to the node's address, as primary networks do
	// (seed 002: north-south "including secondary networks"); empty, it is
	// east-west only. Primary networks always have their gateway.
	Egress string `json:"egress,omitempty"`
}

// EgressGateway is NetConf.Egress of a secondary network with a gateway.
const EgressGateway = "gateway"

// Marshal renders the config as the JSON stored in a NAD (stable field order).
func (c *NetConf) Marshal() string {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("netconf: marshal cannot fail for a plain struct: %v", err))
	}
	return string(b)
}

// IsPrimary reports whether the network is a primary network. A nil config
// (what Parse returns for another plugin's NAD) is not.
func (c *NetConf) IsPrimary() bool { return c != nil && c.Role == RolePrimary }

// HasGateway reports whether the network has gateway routers: a primary
// network, or a secondary one that asks for egress (Egress).
func (c *NetConf) HasGateway() bool {
	return c.IsPrimary() || c != nil && c.Egress == EgressGateway
}

// Parse reads the config of a NAD. It returns (nil, nil) for NADs of other CNI
// plugins, which ovn-udn ignores (Multus and its neighbours are common
// beside ovn-udn: every caller must check for nil before reading a field),
// and an error for ovn-udn configs that are malformed. A NAD with an empty
// config is another plugin's too: Multus then reads the configuration from
// the node's CNI directory.
func Parse(nad *nadv1.NetworkAttachmentDefinition) (*NetConf, error) {
	return ParseConfig(nad.Spec.Config)
}

// ParseConfig is Parse on a raw config string.
func ParseConfig(config string) (*NetConf, error) {
	var probe struct {
		Type string `json:"type"`
	}
	if strings.TrimSpace(config) == "" {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(config), &probe); err != nil {
		return nil, fmt.Errorf("config is not JSON: %w", err)
	}
	if probe.Type != CNIType {
		return nil, nil
	}
	c := &NetConf{}
	if err := json.Unmarshal([]byte(config), c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if c.Name == "" {
		return nil, fmt.Errorf("config has no network name")
	}
	switch c.Topology {
	case TopologyLayer3, TopologyLayer2, TopologyLocalnet:
	default:
		return nil, fmt.Errorf("network %s: unknown topology %q", c.Name, c.Topology)
	}
	switch c.Role {
	case RolePrimary, RoleSecondary:
	case "":
		c.Role = RoleSecondary
	default:
		return nil, fmt.Errorf("network %s: unknown role %q", c.Name, c.Role)
	}
	switch {
	case c.Egress == "":
	case c.Egress != EgressGateway:
		return nil, fmt.Errorf("network %s: unknown egress %q (want %q or none)", c.Name, c.Egress, EgressGateway)
	case c.Role != RoleSecondary || c.Topology == TopologyLocalnet:
		return nil, fmt.Errorf("network %s: egress %q is for secondary Layer3 and Layer2 networks (a primary one always has its gateway, a Localnet one the physical network's)", c.Name, c.Egress)
	case strings.TrimSpace(c.Subnets) == "":
		return nil, fmt.Errorf("network %s: egress %q needs subnets (the gateway's addresses come from them)", c.Name, c.Egress)
	}
	for field, v := range map[string]string{"subnets": c.Subnets, "excludeSubnets": c.ExcludeSubnets, "joinSubnet": c.JoinSubnet, "transitSubnet": c.TransitSubnet} {
		if _, err := parseList(v, field == "subnets" && c.Topology == TopologyLayer3); err != nil {
			return nil, fmt.Errorf("network %s: %s: %w", c.Name, field, err)
		}
	}
	return c, nil
}

// NetworkName returns the network name of an ovn-udn NAD config without
// validating the rest, so a NAD that turned malformed still maps to its
// network (which then stays as it was, rather than looking deleted). ok is
// false for configs of other plugins or without a name.
func NetworkName(config string) (name string, ok bool) {
	var probe struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(config), &probe); err != nil || probe.Type != CNIType || probe.Name == "" {
		return "", false
	}
	return probe.Name, true
}

// Subnet is one entry of a network's subnets: a CIDR and, for Layer3, the
// prefix length of each node's slice (0 when not given).
type Subnet struct {
	CIDR       netip.Prefix
	HostPrefix int
}

func (s Subnet) String() string {
	if s.HostPrefix == 0 {
		return s.CIDR.String()
	}
	return fmt.Sprintf("%s/%d", s.CIDR, s.HostPrefix)
}

// ParseSubnet parses "CIDR" or, when hostPrefix is allowed, "CIDR/hostPrefix".
// The CIDR must be a network address.
func ParseSubnet(s string, hostPrefix bool) (Subnet, error) {
	s = strings.TrimSpace(s)
	cidr, hp := s, 0
	if parts := strings.Split(s, "/"); len(parts) == 3 {
		if !hostPrefix {
			return Subnet{}, fmt.Errorf("%q: a host prefix is allowed only for Layer3", s)
		}
		n, err := strconv.Atoi(parts[2])
		if err != nil {
			return Subnet{}, fmt.Errorf("%q: host prefix is not a number", s)
		}
		cidr, hp = parts[0]+"/"+parts[1], n
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return Subnet{}, fmt.Errorf("%q is not a CIDR", s)
	}
	if p.Masked() != p {
		return Subnet{}, fmt.Errorf("%q is not a network address (did you mean %s?)", s, p.Masked())
	}
	if hp != 0 && (hp <= p.Bits() || hp > p.Addr().BitLen()) {
		return Subnet{}, fmt.Errorf("%q: host prefix must be longer than /%d and at most /%d", s, p.Bits(), p.Addr().BitLen())
	}
	return Subnet{CIDR: p, HostPrefix: hp}, nil
}

func parseList(v string, hostPrefix bool) ([]Subnet, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []Subnet
	for _, s := range strings.Split(v, ",") {
		sn, err := ParseSubnet(s, hostPrefix)
		if err != nil {
			return nil, err
		}
		out = append(out, sn)
	}
	return out, nil
}

// ParsedSubnets returns the network's subnets.
func (c *NetConf) ParsedSubnets() []Subnet {
	s, _ := parseList(c.Subnets, c.Topology == TopologyLayer3)
	return s
}

// Prefixes parses a comma-separated CIDR list already validated by Parse.
func Prefixes(list string) []netip.Prefix {
	s, _ := parseList(list, true)
	out := make([]netip.Prefix, 0, len(s))
	for _, sn := range s {
		out = append(out, sn.CIDR)
	}
	return out
}

// JoinPrefixes, ExcludePrefixes and TransitPrefixes return the parsed lists.
func (c *NetConf) JoinPrefixes() []netip.Prefix    { return Prefixes(c.JoinSubnet) }
func (c *NetConf) ExcludePrefixes() []netip.Prefix { return Prefixes(c.ExcludeSubnets) }
func (c *NetConf) TransitPrefixes() []netip.Prefix { return Prefixes(c.TransitSubnet) }

// JoinList renders prefixes as the comma-separated form configs use.
func JoinList[T fmt.Stringer](items []T) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.String()
	}
	return strings.Join(s, ",")
}
