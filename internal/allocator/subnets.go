package allocator

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
)

// SubnetPool carves a network's subnet into equal slices (one per node) of
// HostPrefix bits and hands them to names (nodes). It is next-fit like IDs.
type SubnetPool struct {
	cidr       netip.Prefix
	hostPrefix int
	ids        *IDs
}

// maxSlices bounds the index space of a pool; an IPv6 /32 split into /64s has
// 2^32 slices, far more than any cluster has nodes.
const maxSlices = 1 << 30

// NewSubnetPool returns a pool of cidr split into /hostPrefix slices. It
// refuses slices too small for a node (see MaxHostPrefix).
func NewSubnetPool(cidr netip.Prefix, hostPrefix int) (*SubnetPool, error) {
	cidr = cidr.Masked()
	if hostPrefix <= cidr.Bits() || hostPrefix > cidr.Addr().BitLen() {
		return nil, fmt.Errorf("host prefix /%d does not split %s", hostPrefix, cidr)
	}
	if max := MaxHostPrefix(cidr.Addr()); hostPrefix > max {
		return nil, fmt.Errorf("host prefix /%d of %s leaves no room in a node's slice for a gateway, a management port and a pod (at most /%d)", hostPrefix, cidr, max)
	}
	n := hostPrefix - cidr.Bits()
	count := maxSlices
	if n < 30 {
		count = 1 << n
	}
	return &SubnetPool{cidr: cidr, hostPrefix: hostPrefix, ids: NewIDs(0, count-1)}, nil
}

// CIDR and HostPrefix describe the pool.
func (p *SubnetPool) CIDR() netip.Prefix { return p.cidr }

// HostPrefix is the prefix length of each slice.
func (p *SubnetPool) HostPrefix() int { return p.hostPrefix }

// Allocate returns name's slice, allocating one if it has none.
func (p *SubnetPool) Allocate(name string) (netip.Prefix, error) {
	i, err := p.ids.Allocate(name)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("no /%d left in %s: %w", p.hostPrefix, p.cidr, err)
	}
	return p.slice(i), nil
}

// Reserve records that name holds s (from persisted state). s must be one of
// the pool's slices and not held by another name.
func (p *SubnetPool) Reserve(name string, s netip.Prefix) error {
	i, ok := p.index(s)
	if !ok {
		return fmt.Errorf("%s is not a /%d slice of %s", s, p.hostPrefix, p.cidr)
	}
	return p.ids.Reserve(name, i)
}

// Get returns name's slice.
func (p *SubnetPool) Get(name string) (netip.Prefix, bool) {
	i, ok := p.ids.Get(name)
	if !ok {
		return netip.Prefix{}, false
	}
	return p.slice(i), true
}

// Release frees name's slice.
func (p *SubnetPool) Release(name string) { p.ids.Release(name) }

// Len is the number of slices in use.
func (p *SubnetPool) Len() int { return p.ids.Len() }

func (p *SubnetPool) slice(i int) netip.Prefix {
	shift := uint(p.cidr.Addr().BitLen() - p.hostPrefix)
	return netip.PrefixFrom(addU128(p.cidr.Addr(), u128{lo: uint64(i)}.shl(shift)), p.hostPrefix)
}

func (p *SubnetPool) index(s netip.Prefix) (int, bool) {
	if s.Bits() != p.hostPrefix || s.Masked() != s || !p.cidr.Contains(s.Addr()) {
		return 0, false
	}
	off := fromAddr(s.Addr()).sub(fromAddr(p.cidr.Addr())).shr(uint(p.cidr.Addr().BitLen() - p.hostPrefix))
	if off.hi != 0 || off.lo >= maxSlices {
		return 0, false
	}
	return int(off.lo), true
}

// DefaultHostPrefix is the per-node slice size of a Layer3 subnet that does not
// give one: /24 for IPv4 and /64 for IPv6 when the subnet is larger, otherwise
// 4 bits (IPv4) or 8 bits (IPv6) longer than the subnet, so it still splits
// into 16 or 256 node slices (capped at MaxHostPrefix: /29 and /126). A subnet
// of /29 (IPv4) or /126 (IPv6) or smaller cannot be split; the API rejects it
// for Layer3.
func DefaultHostPrefix(cidr netip.Prefix) int {
	if cidr.Addr().Is4() {
		if cidr.Bits() < 24 {
			return 24
		}
		return min(cidr.Bits()+4, MaxHostPrefix(cidr.Addr()))
	}
	if cidr.Bits() < 64 {
		return 64
	}
	return min(cidr.Bits()+8, MaxHostPrefix(cidr.Addr()))
}

// MaxHostPrefix is the longest prefix of a Layer3 node slice in a's family:
// /29 for IPv4, /126 for IPv6. A slice gives offset 0 to nobody (the network
// address), offset 1 to the node's router port (the pods' gateway), offset 2
// to its management port, and, for IPv4, the last address to nobody (the
// broadcast address); at least one address must be left for a pod. An IPv4
// /30 (offsets 0-3) has none left, a /29 has four; an IPv6 /126 (offsets 0-3)
// has one. The API's CEL rules on NetworkSubnet use the same bounds.
func MaxHostPrefix(a netip.Addr) int {
	if a.Is4() {
		return 29
	}
	return 126
}

// CheckNodeSlice returns an error when a node's slice of a Layer3 network is
// too small to hold its gateway, its management port and a pod.
func CheckNodeSlice(s netip.Prefix) error {
	if max := MaxHostPrefix(s.Addr()); s.Bits() > max {
		return fmt.Errorf("node subnet %s leaves no room for a gateway, a management port and a pod (at most /%d)", s, max)
	}
	return nil
}

// u128 is an address as a 128-bit integer (IPv4 in the low 32 bits).
type u128 struct{ hi, lo uint64 }

func fromAddr(a netip.Addr) u128 {
	if a.Is4() {
		b := a.As4()
		return u128{lo: uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := a.As16()
	return u128{hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:])}
}

func (x u128) toAddr(v6 bool) netip.Addr {
	if !v6 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(x.lo))
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], x.hi)
	binary.BigEndian.PutUint64(b[8:], x.lo)
	return netip.AddrFrom16(b)
}

func (x u128) add(y u128) u128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, carry)
	return u128{hi, lo}
}

func (x u128) sub(y u128) u128 {
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, borrow)
	return u128{hi, lo}
}

func (x u128) shl(n uint) u128 {
	switch {
	case n == 0:
		return x
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{hi: x.lo << (n - 64)}
	}
	return u128{hi: x.hi<<n | x.lo>>(64-n), lo: x.lo << n}
}

func (x u128) shr(n uint) u128 {
	switch {
	case n == 0:
		return x
	case n >= 128:
		return u128{}
	case n >= 64:
		return u128{lo: x.hi >> (n - 64)}
	}
	return u128{hi: x.hi >> n, lo: x.lo>>n | x.hi<<(64-n)}
}

func addU128(a netip.Addr, off u128) netip.Addr { return fromAddr(a).add(off).toAddr(a.Is6()) }

// AddOffset returns a + off within a's family.
func AddOffset(a netip.Addr, off uint64) netip.Addr { return addU128(a, u128{lo: off}) }

// SliceAt returns the i-th slice of length bits of cidr (i counts from 0;
// the caller keeps i inside cidr).
func SliceAt(cidr netip.Prefix, bits int, i uint64) netip.Prefix {
	shift := uint(cidr.Addr().BitLen() - bits)
	return netip.PrefixFrom(addU128(cidr.Masked().Addr(), u128{lo: i}.shl(shift)), bits)
}

// SliceIndex returns which slice of cidr, of s's length, s is; ok is false
// when s is not such a slice (host bits set, outside cidr, or an index
// beyond 2^63).
func SliceIndex(cidr, s netip.Prefix) (uint64, bool) {
	if s.Bits() < cidr.Bits() || s.Masked() != s || !cidr.Contains(s.Addr()) {
		return 0, false
	}
	off := fromAddr(s.Addr()).sub(fromAddr(cidr.Masked().Addr())).shr(uint(s.Addr().BitLen() - s.Bits()))
	if off.hi != 0 || off.lo >= 1<<63 {
		return 0, false
	}
	return off.lo, true
}
