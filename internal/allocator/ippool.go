package allocator

import (
	"fmt"
	"net/netip"
	"sync"
)

// IPPool hands out the addresses of one CIDR to names (pods, IPAM claims).
// Excluded ranges and reserved addresses are never handed out; the network
// address (and the IPv4 broadcast address) neither. Allocation is next-fit, so
// a released address comes back as late as possible. The pool is sparse: its
// cost is in the addresses held, not in the CIDR's size. Safe for concurrent
// use.
type IPPool struct {
	mu       sync.Mutex
	cidr     netip.Prefix
	base     u128
	first    uint64
	last     uint64
	exclude  []netip.Prefix
	reserved map[uint64]bool
	byName   map[string]uint64
	byOff    map[uint64]string
	next     uint64
}

// NewIPPool returns a pool of cidr without the excluded ranges and reserved
// addresses (e.g. a gateway).
func NewIPPool(cidr netip.Prefix, exclude []netip.Prefix, reserved ...netip.Addr) (*IPPool, error) {
	cidr = cidr.Masked()
	hostBits := cidr.Addr().BitLen() - cidr.Bits()
	if hostBits < 1 {
		return nil, fmt.Errorf("%s has no host addresses", cidr)
	}
	p := &IPPool{cidr: cidr, base: fromAddr(cidr.Addr()), first: 1, exclude: exclude,
		reserved: map[uint64]bool{}, byName: map[string]uint64{}, byOff: map[uint64]string{}}
	switch {
	case hostBits >= 31:
		p.last = maxSlices
	case cidr.Addr().Is4() && hostBits > 1:
		p.last = 1<<uint(hostBits) - 2 // not the broadcast address
	default:
		p.last = 1<<uint(hostBits) - 1
	}
	if hostBits == 1 { // a /31 or /127: both addresses are usable
		p.first = 0
	}
	for _, a := range reserved {
		if off, ok := p.offset(a); ok {
			p.reserved[off] = true
		}
	}
	p.next = p.first
	return p, nil
}

// NewNetworkPool returns the pool of one subnet of a network whose
// addresses are handed out cluster-wide (Layer2, Localnet): without the
// excluded ranges and, for a primary network, without its first two
// addresses (the gateway and the management ports).
func NewNetworkPool(cidr netip.Prefix, exclude []netip.Prefix, primary bool) (*IPPool, error) {
	var reserved []netip.Addr
	if primary {
		for _, off := range []uint64{1, 2} {
			if a, err := NthAddress(cidr, off); err == nil {
				reserved = append(reserved, a)
			}
		}
	}
	return NewIPPool(cidr, exclude, reserved...)
}

// CIDR is the pool's subnet.
func (p *IPPool) CIDR() netip.Prefix { return p.cidr }

func (p *IPPool) offset(a netip.Addr) (uint64, bool) {
	if !p.cidr.Contains(a) {
		return 0, false
	}
	off := fromAddr(a).sub(p.base)
	if off.hi != 0 || off.lo < p.first || off.lo > p.last {
		return 0, false
	}
	return off.lo, true
}

func (p *IPPool) addr(off uint64) netip.Addr { return addU128(p.cidr.Addr(), u128{lo: off}) }

func (p *IPPool) usable(off uint64) bool {
	if p.reserved[off] {
		return false
	}
	if _, taken := p.byOff[off]; taken {
		return false
	}
	a := p.addr(off)
	for _, e := range p.exclude {
		if e.Contains(a) {
			return false
		}
	}
	return true
}

// skip is how far the scan moves from an unusable offset: past the end of
// the excluded range it is in, or by one.
func (p *IPPool) skip(off uint64) uint64 {
	a := p.addr(off)
	for _, e := range p.exclude {
		if e.Contains(a) {
			end := fromAddr(e.Masked().Addr()).add(u128{lo: 1}.shl(uint(a.BitLen() - e.Bits()))).sub(p.base)
			if end.hi == 0 && end.lo > off {
				return end.lo - off
			}
		}
	}
	return 1
}

// Allocate returns name's address, allocating one if it has none.
func (p *IPPool) Allocate(name string) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off, ok := p.byName[name]; ok {
		return p.addr(off), nil
	}
	off, ok := p.free()
	if !ok {
		return netip.Addr{}, fmt.Errorf("no address left in %s: %w", p.cidr, ErrExhausted)
	}
	p.byName[name], p.byOff[off] = off, name
	p.next = off + 1
	if p.next > p.last {
		p.next = p.first
	}
	return p.addr(off), nil
}

// HasRoom reports whether Allocate would find an address for a new name.
func (p *IPPool) HasRoom() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.free()
	return ok
}

// free returns the next usable offset from p.next (next-fit), wrapping once.
func (p *IPPool) free() (uint64, bool) {
	size := p.last - p.first + 1
	off := p.next
	for scanned := uint64(0); scanned < size; {
		if p.usable(off) {
			return off, true
		}
		step := p.skip(off)
		scanned += step
		off += step
		if off > p.last {
			off = p.first + (off - p.last - 1)
			if off > p.last {
				off = p.first
			}
		}
	}
	return 0, false
}

// Reserve gives name the address a (a recovered allocation, or a requested
// address). It fails when a is outside the pool, excluded, reserved, or held
// by another name.
func (p *IPPool) Reserve(name string, a netip.Addr) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	off, ok := p.offset(a)
	if !ok {
		return fmt.Errorf("%s is not an assignable address of %s", a, p.cidr)
	}
	if holder, taken := p.byOff[off]; taken {
		if holder == name {
			return nil
		}
		return fmt.Errorf("%s is already in use (by %s)", a, holder)
	}
	if !p.usable(off) {
		return fmt.Errorf("%s is excluded or reserved in %s", a, p.cidr)
	}
	if old, had := p.byName[name]; had {
		delete(p.byOff, old)
	}
	p.byName[name], p.byOff[off] = off, name
	return nil
}

// Get returns name's address.
func (p *IPPool) Get(name string) (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	off, ok := p.byName[name]
	return p.addr(off), ok
}

// Release frees name's address.
func (p *IPPool) Release(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if off, ok := p.byName[name]; ok {
		delete(p.byName, name)
		delete(p.byOff, off)
	}
}

// Len is how many addresses are held.
func (p *IPPool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byName)
}
