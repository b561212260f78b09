// Package connect is the arithmetic of ClusterNetworkConnect (seed 001):
// how its connect subnets are carved into per-network blocks and
// point-to-point links, the annotations cluster-manager stores them in, the
// allocation of blocks to networks, and the validation of a selection. It is
// pure: internal/clustermanager/connectcontroller runs it in cluster-manager, and
// internal/rows/connectrouter renders the links a zone needs from it.
package connect

import (
	"fmt"
	"net/netip"
	"strings"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
)

// MaxPortKey is the largest tunnel key of a logical router port: OVN carries
// port keys in 15 bits, so one connect router holds at most 32767 ports
// (one per Layer3 network and node, one per Layer2 network).
const MaxPortKey = 1<<15 - 1

// Range is one connect subnet: the CIDR and the prefix length of each
// network's block.
type Range struct {
	CIDR          netip.Prefix
	NetworkPrefix int
}

// linkBits is the prefix length of a point-to-point link in a's family.
func linkBits(a netip.Addr) int {
	if a.Is4() {
		return 31
	}
	return 127
}

// Layout is how a ClusterNetworkConnect's connect subnets are carved. Every
// connected network gets block b (the same b in every family): a Layer3
// network a whole block, whose link k (the /31 or /127 at offset 2k) serves
// the node with ID k; Layer2 networks share blocks, one link each (links 1
// and up; link 0 of a shared block stays unused so that no port gets key
// 0). A link's router port key on the connect router is b × LinksPerBlock +
// k, so keys never collide and every zone derives the same ones.
type Layout struct {
	// Ranges are the connect subnets, IPv4 first.
	Ranges []Range
	// LinksPerBlock is how many links of a block are used: the smallest
	// number any family's block holds, and no more than port keys allow.
	LinksPerBlock int
	// Blocks is how many blocks can be handed out: the smallest number any
	// family holds, and no more than LinksPerBlock × Blocks port keys allow.
	Blocks int
}

// NewLayout returns the layout of a spec's connect subnets, or an error
// naming the subnet the API server should have refused.
func NewLayout(subnets []v1.ConnectSubnet) (Layout, error) {
	var l Layout
	links, blocks := uint64(MaxPortKey+1), uint64(MaxPortKey+1)
	for _, s := range subnets {
		p, err := netip.ParsePrefix(string(s.CIDR))
		if err != nil || p.Masked() != p {
			return Layout{}, fmt.Errorf("connect subnet %q is not a network address", s.CIDR)
		}
		np := int(s.NetworkPrefix)
		if np <= p.Bits() || np >= linkBits(p.Addr())+1 {
			return Layout{}, fmt.Errorf("connect subnet %s: networkPrefix %d must be longer than /%d and at most /%d", p, np, p.Bits(), linkBits(p.Addr()))
		}
		for _, r := range l.Ranges {
			if r.CIDR.Addr().Is4() == p.Addr().Is4() {
				return Layout{}, fmt.Errorf("connect subnets %s and %s are of the same IP family", r.CIDR, p)
			}
		}
		l.Ranges = append(l.Ranges, Range{CIDR: p, NetworkPrefix: np})
		links = min(links, pow2(linkBits(p.Addr())-np))
		blocks = min(blocks, pow2(np-p.Bits()))
	}
	if len(l.Ranges) == 0 {
		return Layout{}, fmt.Errorf("no connect subnet")
	}
	if len(l.Ranges) == 2 && l.Ranges[0].CIDR.Addr().Is6() {
		l.Ranges[0], l.Ranges[1] = l.Ranges[1], l.Ranges[0]
	}
	blocks = min(blocks, uint64(MaxPortKey+1)/links)
	l.LinksPerBlock, l.Blocks = int(links), int(blocks)
	return l, nil
}

// pow2 is 2^n, capped at 2^32 (more than any count here can use).
func pow2(n int) uint64 {
	if n > 32 {
		n = 32
	}
	return 1 << uint(n)
}

// String describes the layout for messages: "192.168.0.0/16 (/24 per
// network)".
func (l Layout) String() string {
	var parts []string
	for _, r := range l.Ranges {
		parts = append(parts, fmt.Sprintf("%s (/%d per network)", r.CIDR, r.NetworkPrefix))
	}
	return strings.Join(parts, " and ")
}

// Has reports whether the layout has a range of a's IP family.
func (l Layout) Has(a netip.Addr) bool {
	for _, r := range l.Ranges {
		if r.CIDR.Addr().Is4() == a.Is4() {
			return true
		}
	}
	return false
}

// Prefixes are the connect subnets.
func (l Layout) Prefixes() []netip.Prefix {
	out := make([]netip.Prefix, len(l.Ranges))
	for i, r := range l.Ranges {
		out[i] = r.CIDR
	}
	return out
}

// Block returns block b in every family.
func (l Layout) Block(b int) Slice {
	var s Slice
	for _, r := range l.Ranges {
		s.set(allocator.SliceAt(r.CIDR, r.NetworkPrefix, uint64(b)))
	}
	return s
}

// link returns link k of block b in every family.
func (l Layout) link(b, k int) Slice {
	var s Slice
	for _, r := range l.Ranges {
		block := allocator.SliceAt(r.CIDR, r.NetworkPrefix, uint64(b))
		bits := linkBits(block.Addr())
		s.set(allocator.SliceAt(block, bits, uint64(k)))
	}
	return s
}

// locate returns the block and link of a slice: a block (k = -1) or a link.
// It fails when the slice does not lie where the layout puts blocks and
// links, in every family it has, at the same place.
func (l Layout) locate(s Slice) (b, k int, err error) {
	b, k = -1, -1
	for _, r := range l.Ranges {
		p := s.Of(r.CIDR.Addr())
		if !p.IsValid() {
			return 0, 0, fmt.Errorf("%s has no %s address", s, family(r.CIDR.Addr()))
		}
		bp := netip.PrefixFrom(p.Addr(), r.NetworkPrefix).Masked()
		bi, ok := allocator.SliceIndex(r.CIDR, bp)
		if !ok || bi >= uint64(l.Blocks) {
			return 0, 0, fmt.Errorf("%s is not in a block of %s", p, r.CIDR)
		}
		ki := -1
		switch p.Bits() {
		case r.NetworkPrefix:
			if p.Masked() != p {
				return 0, 0, fmt.Errorf("%s is not a block of %s", p, r.CIDR)
			}
		case linkBits(p.Addr()):
			x, ok := allocator.SliceIndex(bp, p)
			if !ok || x >= uint64(l.LinksPerBlock) {
				return 0, 0, fmt.Errorf("%s is not a link of block %s", p, bp)
			}
			ki = int(x)
		default:
			return 0, 0, fmt.Errorf("%s is neither a /%d block nor a link", p, r.NetworkPrefix)
		}
		if b >= 0 && (int(bi) != b || ki != k) {
			return 0, 0, fmt.Errorf("%s: its families are at different places", s)
		}
		b, k = int(bi), ki
	}
	return b, k, nil
}

// Link is a point-to-point link between a network's router and the connect
// router, in every family of the connect: the network's side takes the
// first address of each /31 (/127), the connect router's side the second.
type Link struct {
	NetworkSide, ConnectSide []netip.Prefix
	// PortKey is the connect router port's tunnel key (unique in the router).
	PortKey int
}

// NodeLink is the link of a Layer3 network, whose block is s, on the node
// with ID nodeID.
func (l Layout) NodeLink(s Slice, nodeID int) (Link, error) {
	b, k, err := l.locate(s)
	switch {
	case err != nil:
		return Link{}, err
	case k >= 0:
		return Link{}, fmt.Errorf("%s is a Layer2 link, not a Layer3 network's block", s)
	case nodeID < 1 || nodeID >= l.LinksPerBlock:
		return Link{}, fmt.Errorf("node ID %d does not fit a block of %s: it holds node IDs 1 to %d", nodeID, l, l.LinksPerBlock-1)
	}
	return l.linkAt(b, nodeID), nil
}

// Layer2Link is the link of a Layer2 network whose slice is s.
func (l Layout) Layer2Link(s Slice) (Link, error) {
	b, k, err := l.locate(s)
	switch {
	case err != nil:
		return Link{}, err
	case k < 1:
		return Link{}, fmt.Errorf("%s is not a Layer2 network's link", s)
	}
	return l.linkAt(b, k), nil
}

func (l Layout) linkAt(b, k int) Link {
	lk := Link{PortKey: b*l.LinksPerBlock + k}
	for _, p := range l.link(b, k).All() {
		second := netip.PrefixFrom(p.Addr().Next(), p.Bits())
		lk.NetworkSide = append(lk.NetworkSide, p)
		lk.ConnectSide = append(lk.ConnectSide, second)
	}
	return lk
}

func family(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}
