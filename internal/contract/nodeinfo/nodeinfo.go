// Package nodeinfo defines, once, the annotations on Node objects through which
// ovn-udn's components talk about nodes: cluster-manager writes what it
// allocates (node ID, per-node subnets), the node agent publishes what the node
// is (chassis, zone, addresses, gateway), and zone controllers read both.
// docs/annotations.md describes each.
package nodeinfo

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
)

// Written by cluster-manager.
const (
	// NodeIDAnnotation holds the node's cluster-wide ID (2..32767).
	NodeIDAnnotation = "k8s.ovn.org/node-id"
	// NodeSubnetsAnnotation holds the node's slices of Layer3 networks (of a
	// primary user-defined one only while the node uses it), as a JSON
	// object from network name ("default" for the cluster default network)
	// to a list of CIDRs (one per IP family; none: Subnets.Lacks).
	NodeSubnetsAnnotation = "k8s.ovn.org/node-subnets"
)

// DefaultNetwork is the network name of the cluster default network.
const DefaultNetwork = "default"

// NodeID parses a node's ID annotation; ok is false when it has none.
func NodeID(annotations map[string]string) (id int, ok bool, err error) {
	v, has := annotations[NodeIDAnnotation]
	if !has {
		return 0, false, nil
	}
	id, err = strconv.Atoi(v)
	if err != nil {
		return 0, false, fmt.Errorf("annotation %s=%q is not a number", NodeIDAnnotation, v)
	}
	return id, true, nil
}

// Subnets maps network names to a node's subnets in that network.
type Subnets map[string][]netip.Prefix

// ParseSubnets parses the node-subnets annotation ("" is an empty map). A
// network listed with no CIDR ("net": []) stays in the map with an empty
// list: cluster-manager could not give the node a slice of it (Lacks).
func ParseSubnets(v string) (Subnets, error) {
	out := Subnets{}
	if v == "" {
		return out, nil
	}
	var raw map[string][]string
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object of CIDR lists: %w", NodeSubnetsAnnotation, err)
	}
	for name, list := range raw {
		if len(list) == 0 {
			out[name] = []netip.Prefix{}
		}
		for _, s := range list {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("annotation %s: network %s: %q is not a CIDR", NodeSubnetsAnnotation, name, s)
			}
			out[name] = append(out[name], p)
		}
	}
	return out, nil
}

// String renders the annotation value (keys sorted, stable).
func (s Subnets) String() string {
	raw := make(map[string][]string, len(s))
	for name, list := range s {
		strs := make([]string, len(list))
		for i, p := range list {
			strs[i] = p.String()
		}
		raw[name] = strs
	}
	b, _ := json.Marshal(raw)
	return string(b)
}

// Lacks reports whether the annotation lists the network with no slice:
// cluster-manager tried and could not give the node one (the network's
// subnets are exhausted, or cannot be split). A network not listed at all
// has no slice yet, or none to have.
func (s Subnets) Lacks(network string) bool {
	list, listed := s[network]
	return listed && len(list) == 0
}

// Networks returns the network names, sorted.
func (s Subnets) Networks() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Published by the node agent (or by tests and the sandbox).
const (
	// ChassisIDAnnotation is the node's OVN chassis name (system-id).
	ChassisIDAnnotation = "k8s.ovn.org/node-chassis-id"
	// ZoneAnnotation is the OVN interconnect zone the node belongs to; one
	// node per zone, named after the node when absent.
	ZoneAnnotation = "k8s.ovn.org/zone-name"
	// PrimaryIfAddrAnnotation holds the node's primary addresses as JSON:
	// {"ipv4": "172.18.0.3/16", "ipv6": "fc00::3/64"}.
	PrimaryIfAddrAnnotation = "k8s.ovn.org/node-primary-ifaddr"
	// EncapIPAnnotation is the address other chassis reach this one at over
	// Geneve; the primary IPv4 address when absent.
	EncapIPAnnotation = "k8s.ovn.org/node-encap-ip"
	// GatewayAnnotation holds the node's external gateway configuration as
	// JSON (see Gateway).
	GatewayAnnotation = "k8s.ovn.org/l3-gateway-config"
)

// Written by the node's zone controller.
const (
	// Layer2TopologyVersionAnnotation is the topology the node's zone
	// renders Layer2 primary networks in (seed 000, "Upgrade Details"):
	// Layer2TopologyV1 (the gateway router on the network's switch) or
	// Layer2TopologyV2 (the transit router). Absent (or any other value)
	// means V2: ovn-udn has
	// only ever shipped V2, and renders V1 only when a zone is told to play
	// a release that predates the transit router (docs/topology.md,
	// "Changing a topology").
	Layer2TopologyVersionAnnotation = "k8s.ovn.org/layer2-topology-version"
	// Layer2TopologyV1 is the topology without a transit router.
	Layer2TopologyV1 = "1.0"
	// Layer2TopologyV2 is the transit-router topology.
	Layer2TopologyV2 = "2.0"
)

// Gateway is the node's external side: what every network's gateway router
// on this node uses for its external ports. The top-level fields are the
// first uplink (the only one of the original form, which stays valid);
// Uplinks adds more, each on an external network (bridge) of its own.
type Gateway struct {
	// MAC of the node's external interface (br-ex).
	MAC string `json:"mac-address"`
	// IPs of the node's external interface, with prefix lengths.
	IPs []string `json:"ip-addresses"`
	// NextHops are the external next hops (default routes; several for ECMP).
	NextHops []string `json:"next-hops"`
	// PhysicalNetwork is the ovn-bridge-mappings name of the external
	// bridge; "physnet" when empty.
	PhysicalNetwork string `json:"physical-network,omitempty"`
	// Uplinks are the node's further uplinks, in order after the first.
	Uplinks []UplinkConfig `json:"uplinks,omitempty"`
	// DefaultRouteECMP and DefaultRouteBFD override the zone controller's
	// policy for this node (config.Gateway) when set.
	DefaultRouteECMP *bool `json:"default-route-ecmp,omitempty"`
	DefaultRouteBFD  *bool `json:"default-route-bfd,omitempty"`
}

// UplinkConfig is one further uplink of Gateway: a bridge of its own, with
// the node's address and MAC on it and next hops on its subnets.
type UplinkConfig struct {
	MAC      string   `json:"mac-address"`
	IPs      []string `json:"ip-addresses"`
	NextHops []string `json:"next-hops"`
	// PhysicalNetwork is required and differs from every other uplink's.
	PhysicalNetwork string `json:"physical-network"`
}

// DefaultPhysicalNetwork is the bridge-mapping name of the external bridge.
const DefaultPhysicalNetwork = "physnet"

// Info is everything zone controllers read about a node.
type Info struct {
	Name      string
	ID        int
	ChassisID string
	Zone      string
	// PrimaryIPs are the node's primary addresses (with prefix lengths).
	PrimaryIPs []netip.Prefix
	EncapIP    netip.Addr
	Subnets    Subnets
	// Gateway is nil when the node publishes none.
	Gateway *ParsedGateway
	// Layer2V1 reports that the node's zone renders Layer2 primary networks
	// in the old topology (Layer2TopologyVersionAnnotation).
	Layer2V1 bool
}

// ParsedGateway is a validated Gateway.
type ParsedGateway struct {
	// Uplink is the first uplink (the compatibility gateway's).
	Uplink
	// Extra are the further uplinks, in order.
	Extra []Uplink
	// ECMP and BFD are the node's overrides of the cluster policy (nil:
	// none).
	ECMP, BFD *bool
}

// Uplink is one validated uplink: an external network (bridge) of the node.
type Uplink struct {
	MAC             string
	IPs             []netip.Prefix
	NextHops        []netip.Addr
	PhysicalNetwork string
}

// Uplinks returns every uplink, the first first.
func (g *ParsedGateway) Uplinks() []Uplink {
	return append([]Uplink{g.Uplink}, g.Extra...)
}

// Addresses returns the node's addresses on every uplink, in order.
func (g *ParsedGateway) Addresses() []netip.Addr {
	var out []netip.Addr
	for _, u := range g.Uplinks() {
		for _, p := range u.IPs {
			out = append(out, p.Addr())
		}
	}
	return out
}

// Missing lists required annotations a node lacks (or has malformed), so the
// node can be skipped with a clear Event.
type Missing []string

func (m Missing) Error() string {
	return "node annotations missing or malformed: " + strings.Join(m, "; ")
}

// Parse reads a node's annotations. It returns what it could read and, when
// something required is missing or malformed, a Missing error naming it. The
// gateway is optional here; renderers that need it check Info.Gateway.
func Parse(name string, a map[string]string) (Info, error) {
	in := Info{Name: name, Zone: a[ZoneAnnotation], ChassisID: a[ChassisIDAnnotation]}
	var missing Missing
	if in.Zone == "" {
		in.Zone = name
	}
	id, ok, err := NodeID(a)
	switch {
	case err != nil:
		missing = append(missing, err.Error())
	case !ok:
		missing = append(missing, NodeIDAnnotation)
	}
	in.ID = id
	if in.ChassisID == "" {
		missing = append(missing, ChassisIDAnnotation)
	}
	if in.Subnets, err = ParseSubnets(a[NodeSubnetsAnnotation]); err != nil {
		missing = append(missing, err.Error())
	}
	if v := a[PrimaryIfAddrAnnotation]; v != "" {
		var ifaddr struct {
			IPv4 string `json:"ipv4,omitempty"`
			IPv6 string `json:"ipv6,omitempty"`
		}
		if err := json.Unmarshal([]byte(v), &ifaddr); err != nil {
			missing = append(missing, fmt.Sprintf("%s is not JSON", PrimaryIfAddrAnnotation))
		}
		for _, s := range []string{ifaddr.IPv4, ifaddr.IPv6} {
			if s == "" {
				continue
			}
			p, err := netip.ParsePrefix(s)
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s: %q is not a CIDR", PrimaryIfAddrAnnotation, s))
				continue
			}
			in.PrimaryIPs = append(in.PrimaryIPs, p)
		}
	} else {
		missing = append(missing, PrimaryIfAddrAnnotation)
	}
	if v := a[EncapIPAnnotation]; v != "" {
		if in.EncapIP, err = netip.ParseAddr(v); err != nil {
			missing = append(missing, fmt.Sprintf("%s: %q is not an address", EncapIPAnnotation, v))
		}
	} else if len(in.PrimaryIPs) > 0 {
		in.EncapIP = in.PrimaryIPs[0].Addr()
	}
	if v := a[GatewayAnnotation]; v != "" {
		gw, err := ParseGateway(v)
		if err != nil {
			missing = append(missing, err.Error())
		}
		in.Gateway = gw
	}
	// Any value but 1.0 reads as 2.0: a stray value must not take the node
	// out of every network (its zone controller rewrites it at its next
	// start, internal/zone/l2version).
	in.Layer2V1 = a[Layer2TopologyVersionAnnotation] == Layer2TopologyV1
	if len(missing) > 0 {
		return in, missing
	}
	return in, nil
}

// ParseGateway validates a gateway annotation. Each uplink needs a MAC and
// addresses, its next hops on its own subnets (a repeated one counts once);
// further uplinks name a physical network of their own, and no two uplinks'
// subnets overlap (each is a distinct external network: an overlap would
// make a next hop reachable through two ports).
func ParseGateway(v string) (*ParsedGateway, error) {
	var g Gateway
	if err := json.Unmarshal([]byte(v), &g); err != nil {
		return nil, fmt.Errorf("%s is not JSON: %v", GatewayAnnotation, err)
	}
	first := UplinkConfig{MAC: g.MAC, IPs: g.IPs, NextHops: g.NextHops, PhysicalNetwork: g.PhysicalNetwork}
	if first.PhysicalNetwork == "" {
		first.PhysicalNetwork = DefaultPhysicalNetwork
	}
	u, err := parseUplink(first, "")
	if err != nil {
		return nil, err
	}
	out := &ParsedGateway{Uplink: u, ECMP: g.DefaultRouteECMP, BFD: g.DefaultRouteBFD}
	for i, c := range g.Uplinks {
		where := fmt.Sprintf("uplinks[%d]: ", i)
		if c.PhysicalNetwork == "" {
			return nil, fmt.Errorf("%s: %sphysical-network is required", GatewayAnnotation, where)
		}
		u, err := parseUplink(c, where)
		if err != nil {
			return nil, err
		}
		out.Extra = append(out.Extra, u)
	}
	all := out.Uplinks()
	for i, a := range all {
		for _, b := range all[:i] {
			if a.PhysicalNetwork == b.PhysicalNetwork {
				return nil, fmt.Errorf("%s: two uplinks on physical network %q (one uplink per external bridge)", GatewayAnnotation, a.PhysicalNetwork)
			}
			for _, pa := range a.IPs {
				for _, pb := range b.IPs {
					if pa.Masked().Overlaps(pb.Masked()) {
						return nil, fmt.Errorf("%s: uplinks on %q and %q have overlapping subnets %s and %s (each uplink is an external network of its own)",
							GatewayAnnotation, b.PhysicalNetwork, a.PhysicalNetwork, pb.Masked(), pa.Masked())
					}
				}
			}
		}
	}
	return out, nil
}

// parseUplink validates one uplink; where prefixes its errors.
func parseUplink(c UplinkConfig, where string) (Uplink, error) {
	u := Uplink{MAC: c.MAC, PhysicalNetwork: c.PhysicalNetwork}
	if _, err := net.ParseMAC(c.MAC); err != nil {
		return u, fmt.Errorf("%s: %smac-address %q: %v", GatewayAnnotation, where, c.MAC, err)
	}
	for _, s := range c.IPs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return u, fmt.Errorf("%s: %sip-addresses: %q is not a CIDR", GatewayAnnotation, where, s)
		}
		u.IPs = append(u.IPs, p)
	}
	if len(u.IPs) == 0 {
		return u, fmt.Errorf("%s: %sno ip-addresses", GatewayAnnotation, where)
	}
	seen := map[netip.Addr]bool{}
	for _, s := range c.NextHops {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return u, fmt.Errorf("%s: %snext-hops: %q is not an address", GatewayAnnotation, where, s)
		}
		if !onLink(u.IPs, a) {
			return u, fmt.Errorf("%s: %snext-hops: %s is on none of the subnets of ip-addresses %v (a gateway router reaches its next hops on its external port)", GatewayAnnotation, where, a, c.IPs)
		}
		// The same next hop twice is one next hop (one route, one session).
		if !seen[a] {
			seen[a] = true
			u.NextHops = append(u.NextHops, a)
		}
	}
	return u, nil
}

// onLink reports whether a is inside one of the interface's subnets and is
// not one of its own addresses.
func onLink(ips []netip.Prefix, a netip.Addr) bool {
	for _, p := range ips {
		if p.Addr() != a && p.Masked().Contains(a) {
			return true
		}
	}
	return false
}

// Annotations renders the node agent's annotations for info (tests and the
// sandbox publish nodes with it).
func (in Info) Annotations() map[string]string {
	a := map[string]string{ChassisIDAnnotation: in.ChassisID, ZoneAnnotation: in.Zone}
	ifaddr := map[string]string{}
	for _, p := range in.PrimaryIPs {
		if p.Addr().Is4() {
			ifaddr["ipv4"] = p.String()
		} else {
			ifaddr["ipv6"] = p.String()
		}
	}
	b, _ := json.Marshal(ifaddr)
	a[PrimaryIfAddrAnnotation] = string(b)
	if in.EncapIP.IsValid() {
		a[EncapIPAnnotation] = in.EncapIP.String()
	}
	if in.Gateway != nil {
		g := Gateway{MAC: in.Gateway.MAC, PhysicalNetwork: in.Gateway.PhysicalNetwork,
			DefaultRouteECMP: in.Gateway.ECMP, DefaultRouteBFD: in.Gateway.BFD}
		for _, p := range in.Gateway.IPs {
			g.IPs = append(g.IPs, p.String())
		}
		for _, h := range in.Gateway.NextHops {
			g.NextHops = append(g.NextHops, h.String())
		}
		for _, u := range in.Gateway.Extra {
			c := UplinkConfig{MAC: u.MAC, PhysicalNetwork: u.PhysicalNetwork}
			for _, p := range u.IPs {
				c.IPs = append(c.IPs, p.String())
			}
			for _, h := range u.NextHops {
				c.NextHops = append(c.NextHops, h.String())
			}
			g.Uplinks = append(g.Uplinks, c)
		}
		b, _ := json.Marshal(g)
		a[GatewayAnnotation] = string(b)
	}
	if in.Layer2V1 {
		a[Layer2TopologyVersionAnnotation] = Layer2TopologyV1
	}
	return a
}

// Example is what a node agent would publish for the i-th node (from 0) of a
// cluster whose nodes share one external network: address 172.18.0.(10+i)/16
// (also the tunnel endpoint), next hop 172.18.0.1, chassis "chassis-<name>",
// a zone of its own named after the node. Integration tests publish it, and
// `ovn-udn render` assumes it for nodes whose agent annotations are missing.
func Example(name string, i int) Info {
	ip := netip.MustParsePrefix(fmt.Sprintf("172.18.%d.%d/16", (10+i)/250, (10+i)%250))
	return Info{
		Name: name, ChassisID: "chassis-" + name, Zone: name, PrimaryIPs: []netip.Prefix{ip}, EncapIP: ip.Addr(),
		Gateway: &ParsedGateway{Uplink: Uplink{MAC: fmt.Sprintf("02:42:ac:12:%02x:%02x", (10+i)/256, (10+i)%256), IPs: []netip.Prefix{ip},
			NextHops: []netip.Addr{netip.MustParseAddr("172.18.0.1")}, PhysicalNetwork: DefaultPhysicalNetwork}},
	}
}
