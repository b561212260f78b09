package connect

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Slice is a network's share of the connect subnets: a block (Layer3) or a
// link (Layer2), in each family the connect has.
type Slice struct {
	V4, V6 netip.Prefix
}

func (s *Slice) set(p netip.Prefix) {
	if p.Addr().Is4() {
		s.V4 = p
	} else {
		s.V6 = p
	}
}

// Of returns the slice's prefix in a's family (invalid when it has none).
func (s Slice) Of(a netip.Addr) netip.Prefix {
	if a.Is4() {
		return s.V4
	}
	return s.V6
}

// All returns the slice's prefixes, IPv4 first.
func (s Slice) All() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []netip.Prefix{s.V4, s.V6} {
		if p.IsValid() {
			out = append(out, p)
		}
	}
	return out
}

func (s Slice) String() string {
	var parts []string
	for _, p := range s.All() {
		parts = append(parts, p.String())
	}
	return strings.Join(parts, ",")
}

// Key names a connected network in the annotation, as the seed does:
// "layer3_<network ID>" or "layer2_<network ID>".
type Key struct {
	Topology string // netconf.TopologyLayer3 or TopologyLayer2
	ID       int
}

func (k Key) String() string { return k.Topology + "_" + strconv.Itoa(k.ID) }

// ParseKey reads a Key.
func ParseKey(s string) (Key, error) {
	topo, id, ok := strings.Cut(s, "_")
	n, err := strconv.Atoi(id)
	if !ok || err != nil || n < 1 || (topo != netconf.TopologyLayer3 && topo != netconf.TopologyLayer2) {
		return Key{}, fmt.Errorf("%q is not layer3_<network ID> or layer2_<network ID>", s)
	}
	return Key{Topology: topo, ID: n}, nil
}

// Subnets are the slices of every connected network: the value of the
// k8s.ovn.org/network-subnets annotation.
type Subnets map[Key]Slice

type sliceJSON struct {
	IPv4 string `json:"ipv4,omitempty"`
	IPv6 string `json:"ipv6,omitempty"`
}

// Format renders the annotation value (keys sorted, so equal maps give equal
// strings).
func (s Subnets) Format() string {
	m := map[string]sliceJSON{}
	for k, v := range s {
		var j sliceJSON
		if v.V4.IsValid() {
			j.IPv4 = v.V4.String()
		}
		if v.V6.IsValid() {
			j.IPv6 = v.V6.String()
		}
		m[k.String()] = j
	}
	b, _ := json.Marshal(m) // encoding/json sorts map keys
	return string(b)
}

// ParseSubnets reads the annotation value.
func ParseSubnets(value string) (Subnets, error) {
	var m map[string]sliceJSON
	if err := json.Unmarshal([]byte(value), &m); err != nil {
		return nil, fmt.Errorf("annotation %s: not a JSON object of network slices: %w", v1.ConnectSubnetsAnnotation, err)
	}
	out := Subnets{}
	for k, j := range m {
		key, err := ParseKey(k)
		if err != nil {
			return nil, fmt.Errorf("annotation %s: %w", v1.ConnectSubnetsAnnotation, err)
		}
		var s Slice
		for fam, v := range map[string]string{"ipv4": j.IPv4, "ipv6": j.IPv6} {
			if v == "" {
				continue
			}
			p, err := netip.ParsePrefix(v)
			if err != nil || p.Addr().Is4() != (fam == "ipv4") {
				return nil, fmt.Errorf("annotation %s: %s: %s %q is not an %s prefix", v1.ConnectSubnetsAnnotation, k, fam, v, fam)
			}
			s.set(p)
		}
		if len(s.All()) == 0 {
			return nil, fmt.Errorf("annotation %s: %s has no subnet", v1.ConnectSubnetsAnnotation, k)
		}
		out[key] = s
	}
	return out, nil
}

// Keys returns the map's keys sorted (layer2 before layer3, then by ID).
func (s Subnets) Keys() []Key {
	out := make([]Key, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	return sortedKeys(out)
}

// sortedKeys sorts keys in place (layer2 before layer3, then by ID) and
// returns them.
func sortedKeys(keys []Key) []Key {
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topology != keys[j].Topology {
			return keys[i].Topology < keys[j].Topology
		}
		return keys[i].ID < keys[j].ID
	})
	return keys
}

// Allocation is what cluster-manager stored on a ClusterNetworkConnect: its
// connect router's tunnel key and its networks' slices.
type Allocation struct {
	TunnelKey int
	Subnets   Subnets
}

// ParseAllocation reads a ClusterNetworkConnect's annotations; ok is false
// when cluster-manager has not written them (yet).
func ParseAllocation(annotations map[string]string) (a Allocation, ok bool, err error) {
	k, hasKey := annotations[v1.ConnectRouterTunnelKeyAnnotation]
	s, hasSubnets := annotations[v1.ConnectSubnetsAnnotation]
	if !hasKey || !hasSubnets {
		return Allocation{}, false, nil
	}
	if a.TunnelKey, err = strconv.Atoi(k); err != nil || a.TunnelKey <= 0 {
		return Allocation{}, false, fmt.Errorf("annotation %s=%q is not a tunnel key", v1.ConnectRouterTunnelKeyAnnotation, k)
	}
	if a.Subnets, err = ParseSubnets(s); err != nil {
		return Allocation{}, false, err
	}
	return a, true, nil
}

// Annotations renders the allocation's annotations.
func (a Allocation) Annotations() map[string]string {
	return map[string]string{
		v1.ConnectRouterTunnelKeyAnnotation: strconv.Itoa(a.TunnelKey),
		v1.ConnectSubnetsAnnotation:         a.Subnets.Format(),
	}
}
