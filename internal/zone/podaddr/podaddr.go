// Package podaddr keeps the addresses a zone gives its node's pods on Layer3
// networks (the default network included): per network, one pool per IP
// family of the node's slice, without the slice's gateway and management
// addresses and the network's exclusions. It is bookkeeping only: the zone
// controller decides when a pod is attached, recovered or released, and
// records the result in the pod's annotation.
//
// Contract: an attachment holds the IPAM (Lock) for its whole course, from
// reading the pod to writing its annotation, so that two pods never get one
// address and a network found here stays until it is done; Forget takes the
// lock itself.
package podaddr

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
)

// IPAM holds the node's Layer3 pools, by network.
type IPAM struct {
	mu        sync.Mutex
	recovered bool
	pools     map[string]*nodePools
}

type nodePools struct {
	key   string // the node slice the pools were made from
	pools []*allocator.IPPool
}

// Lock holds the IPAM for one attachment.
func (m *IPAM) Lock() { m.mu.Lock() }

// Unlock ends the attachment.
func (m *IPAM) Unlock() { m.mu.Unlock() }

// Recovered reports whether the pods' addresses have been recovered (with
// the lock held).
func (m *IPAM) Recovered() bool { return m.recovered }

// MarkRecovered records that they have (with the lock held).
func (m *IPAM) MarkRecovered() { m.recovered = true }

// Pools returns the network's pools for the node's slices (made, or made
// again when the slices changed), with the lock held.
func (m *IPAM) Pools(network string, slices []netip.Prefix, exclude []netip.Prefix) ([]*allocator.IPPool, error) {
	key := fmt.Sprint(slices)
	if p, ok := m.pools[network]; ok && p.key == key {
		return p.pools, nil
	}
	np := &nodePools{key: key}
	for _, s := range slices {
		if err := allocator.CheckNodeSlice(s); err != nil {
			return nil, fmt.Errorf("network %s: %w", network, err)
		}
		gw, _ := allocator.NthAddress(s, 1)
		mgmt, _ := allocator.NthAddress(s, 2)
		pool, err := allocator.NewIPPool(s, exclude, gw, mgmt)
		if err != nil {
			return nil, err
		}
		np.pools = append(np.pools, pool)
	}
	if m.pools == nil {
		m.pools = map[string]*nodePools{}
	}
	m.pools[network] = np
	return np.pools, nil
}

// Forget drops a network's pools if gone still says it is gone once the
// pools are locked: a pod attached meanwhile holds the lock for its whole
// attachment, so a network it found there is found here too.
func (m *IPAM) Forget(network string, gone func() bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pools[network]; ok && gone() {
		delete(m.pools, network)
	}
}

// Release frees every address of a pod ("<namespace>/<name>"), with the
// lock held.
func (m *IPAM) Release(podKey string) {
	for _, np := range m.pools {
		for _, p := range np.pools {
			p.Release(podKey)
		}
	}
}

// Recover reserves a pod's addresses in the pools that hold them (a
// restarted zone reading its pods' annotations); it returns an error per
// address another pod holds already.
func Recover(pools []*allocator.IPPool, podKey string, addrs []netip.Prefix) []error {
	var errs []error
	for _, pr := range addrs {
		for _, pool := range pools {
			if pool.CIDR().Contains(pr.Addr()) {
				if err := pool.Reserve(podKey, pr.Addr()); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errs
}

// Assign gives a pod an address from each pool (one per IP family): the one
// of want of the pool's family when there is one, else the next free one.
// A wanted address that is taken is an error when requested (the pod asked
// for it), and otherwise is replaced, each replacement described in
// reassigned. On error nothing of the pod's is held in any pool. gws are the
// pools' gateways, in the same order as addrs.
func Assign(pools []*allocator.IPPool, podKey string, want []netip.Addr, requested bool) (addrs []netip.Prefix, gws []netip.Addr, reassigned []string, err error) {
	for i, pool := range pools {
		var a netip.Addr
		var err error
		if w, ok := familyAddr(want, pool.CIDR()); ok {
			err = pool.Reserve(podKey, w)
			a = w
			if err != nil && !requested {
				reassigned = append(reassigned, fmt.Sprintf("%s: %v", w, err))
				a, err = pool.Allocate(podKey)
			}
		} else {
			a, err = pool.Allocate(podKey)
		}
		if err != nil {
			for _, p := range pools[:i] {
				p.Release(podKey)
			}
			return nil, nil, nil, err
		}
		addrs = append(addrs, netip.PrefixFrom(a, pool.CIDR().Bits()))
		gw, _ := allocator.NthAddress(pool.CIDR(), 1)
		gws = append(gws, gw)
	}
	return addrs, gws, reassigned, nil
}

func familyAddr(list []netip.Addr, cidr netip.Prefix) (netip.Addr, bool) {
	for _, a := range list {
		if a.Is4() == cidr.Addr().Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}
