// Package registry is cluster-manager's record of what must be unique across
// networks: network IDs and tunnel keys (kept on NetworkAttachmentDefinitions,
// and connect routers' keys on ClusterNetworkConnects). State lives in the
// Kubernetes API; Recovery rebuilds it at start-up before anything new is
// allocated, and the pure allocators of internal/allocator do the arithmetic.
// Every controller that allocates shares one registry; no controller imports
// another's package for it.
package registry

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Network is what a network holds cluster-wide.
type Network struct {
	// ID is the network ID, 1..4095.
	ID int
	// TunnelKeys are the network's centrally allocated interconnect keys; a
	// Layer2 primary network holds one, for its transit router.
	TunnelKeys []int
}

// ErrLimit is returned when the configured maximum number of networks exists.
var ErrLimit = errors.New("network limit reached")

// ErrTunnelKeys is returned when the interconnect tunnel-key range is used up.
var ErrTunnelKeys = errors.New("interconnect tunnel keys exhausted")

// Networks allocates network IDs and tunnel keys. It is safe for concurrent use.
type Networks struct {
	mu    sync.Mutex
	limit int
	ids   *allocator.IDs
	keys  *allocator.IDs
	held  map[string][]int // network -> tunnel keys
	// subs are notified (coalesced) after a release.
	subs []chan struct{}
}

// NewNetworks returns an empty registry allowing up to limit networks.
func NewNetworks(limit int) *Networks {
	if limit <= 0 || limit > config.MaxNetworkID {
		limit = config.MaxNetworkID
	}
	return &Networks{
		limit: limit,
		ids:   allocator.NewIDs(1, config.MaxNetworkID),
		keys:  allocator.NewIDs(allocator.FirstAllocatedKey, allocator.LastTunnelKey),
		held:  map[string][]int{},
	}
}

// TunnelKeysNeeded is how many central tunnel keys a network of this config
// needs: one for the transit router of a Layer2 network with a gateway.
func TunnelKeysNeeded(c *netconf.NetConf) int {
	if c.Topology == netconf.TopologyLayer2 && c.HasGateway() {
		return 1
	}
	return 0
}

// Allocate returns the network's ID and keys, allocating what it lacks. A
// network that cannot get everything gets nothing (no half allocation).
func (n *Networks) Allocate(name string, keys int) (Network, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, had := n.ids.Get(name)
	if !had {
		if n.ids.Len() >= n.limit {
			return Network{}, fmt.Errorf("network %s: %d networks exist, the configured maximum: %w", name, n.ids.Len(), ErrLimit)
		}
		var err error
		if id, err = n.ids.Allocate(name); err != nil {
			return Network{}, fmt.Errorf("network %s: network ID: %w", name, err)
		}
	}
	got := append([]int(nil), n.held[name]...)
	for i := len(got); i < keys; i++ {
		k, err := n.keys.Allocate(keyName(name, i))
		if err != nil {
			for j := len(n.held[name]); j < i; j++ {
				n.keys.Release(keyName(name, j))
			}
			if !had {
				n.ids.Release(name)
			}
			return Network{}, fmt.Errorf("network %s: %w (%v)", name, ErrTunnelKeys, err)
		}
		got = append(got, k)
	}
	n.held[name] = got
	return Network{ID: id, TunnelKeys: append([]int(nil), got...)}, nil
}

// Recover records a network's persisted ID and keys (from a NAD's annotations)
// before anything new is allocated. It fails if they collide with another
// network's; the caller then lets the network be allocated afresh.
func (n *Networks) Recover(name string, id int, keys []int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cur, ok := n.ids.Get(name); ok {
		if cur != id {
			return fmt.Errorf("network %s has ID %d on one NAD and %d on another", name, cur, id)
		}
	} else if err := n.ids.Reserve(name, id); err != nil {
		return fmt.Errorf("network %s: %w", name, err)
	}
	if len(n.held[name]) > 0 {
		return nil
	}
	for i, k := range keys {
		if err := n.keys.Reserve(keyName(name, i), k); err != nil {
			for j := 0; j < i; j++ {
				n.keys.Release(keyName(name, j))
			}
			return fmt.Errorf("network %s: tunnel key: %w", name, err)
		}
	}
	n.held[name] = append([]int(nil), keys...)
	return nil
}

// Get returns the network's allocation.
func (n *Networks) Get(name string) (Network, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id, ok := n.ids.Get(name)
	if !ok {
		return Network{}, false
	}
	return Network{ID: id, TunnelKeys: append([]int(nil), n.held[name]...)}, true
}

// Release frees the network's ID and keys.
func (n *Networks) Release(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, had := n.ids.Get(name)
	for i := range n.held[name] {
		n.keys.Release(keyName(name, i))
	}
	delete(n.held, name)
	n.ids.Release(name)
	if had {
		n.notify()
	}
}

// Released returns a channel that receives a value after network IDs or
// tunnel keys are released, so that networks waiting for one are retried.
// Notifications coalesce: one value may stand for several releases.
func (n *Networks) Released() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := make(chan struct{}, 1)
	n.subs = append(n.subs, ch)
	return ch
}

// notify signals every subscriber without blocking. Callers hold mu.
func (n *Networks) notify() {
	for _, ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Len is the number of networks holding an ID.
func (n *Networks) Len() int { return n.ids.Len() }

// All returns every network's allocation.
func (n *Networks) All() map[string]Network {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]Network{}
	for name, id := range n.ids.Names() {
		out[name] = Network{ID: id, TunnelKeys: append([]int(nil), n.held[name]...)}
	}
	return out
}

func keyName(network string, i int) string { return network + "#" + strconv.Itoa(i) }

// Holders of tunnel keys other than networks (connect routers) are named
// with a "/" no network name has.

// ConnectRouterKeyHolder is the key holder name of a ClusterNetworkConnect's
// connect router.
func ConnectRouterKeyHolder(cnc string) string { return "cnc/" + cnc }

// AllocateKey returns holder's tunnel key, allocating one if it has none,
// from the same range as Layer2 transit routers' keys.
func (n *Networks) AllocateKey(holder string) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	k, err := n.keys.Allocate(keyName(holder, 0))
	if err != nil {
		return 0, fmt.Errorf("%s: %w (%v)", holder, ErrTunnelKeys, err)
	}
	return k, nil
}

// RecoverKey records holder's persisted key before anything new is
// allocated; it fails when another holder has it.
func (n *Networks) RecoverKey(holder string, key int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if cur, ok := n.keys.Get(keyName(holder, 0)); ok && cur == key {
		return nil
	}
	if err := n.keys.Reserve(keyName(holder, 0), key); err != nil {
		return fmt.Errorf("%s: tunnel key: %w", holder, err)
	}
	return nil
}

// ReleaseKey frees holder's key.
func (n *Networks) ReleaseKey(holder string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, had := n.keys.Get(keyName(holder, 0)); had {
		n.keys.Release(keyName(holder, 0))
		n.notify()
	}
}
