// Package netalloc is cluster-manager's allocation controllers: the NAD
// controller gives each network its ID and tunnel keys from the shared
// registry (package registry), and the node controller gives each node its
// ID and, where a Layer3 network is used (package whereused), its slices of
// the network's subnets (nodes.go keeps them). State lives in the Kubernetes
// API; each controller recovers it before it allocates anything.
package netalloc

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// Layer3Network is a network whose subnets are split into per-node slices.
type Layer3Network struct {
	Name string
	// Subnets carry their host prefix (the default applied when the network
	// did not give one).
	Subnets []netconf.Subnet
	// Primary is set for a primary user-defined network: with a Usage,
	// nodes hold its slices only where it is used. The default network and
	// secondary networks have slices on every node.
	Primary bool
}

// key identifies the network's slicing; a change means new pools.
func (n Layer3Network) key() string { return netconf.JoinList(n.Subnets) }

// Layer3FromConfig returns the Layer3 network of a NAD config, with default
// host prefixes applied; ok is false for other topologies.
func Layer3FromConfig(c *netconf.NetConf) (Layer3Network, bool) {
	if c == nil || c.Topology != netconf.TopologyLayer3 {
		return Layer3Network{}, false
	}
	n := WithDefaultHostPrefixes(c.Name, c.ParsedSubnets())
	n.Primary = c.IsPrimary()
	return n, true
}

// WithDefaultHostPrefixes returns the network with every subnet's host prefix
// set (DefaultHostPrefix where it was not given).
func WithDefaultHostPrefixes(name string, subnets []netconf.Subnet) Layer3Network {
	out := Layer3Network{Name: name}
	for _, s := range subnets {
		if s.HostPrefix == 0 {
			s.HostPrefix = allocator.DefaultHostPrefix(s.CIDR)
		}
		out.Subnets = append(out.Subnets, s)
	}
	return out
}

type pools struct {
	key   string
	pools []*allocator.SubnetPool
	// err says why the network's subnets cannot be split into node slices
	// (a host prefix leaving no room for pods); no node gets a slice then.
	err error
}

// Nodes allocates node IDs and per-node subnets of Layer3 networks. It is safe
// for concurrent use.
type Nodes struct {
	mu       sync.Mutex
	ids      *allocator.IDs
	networks map[string]*pools
	// lacking records, per network, the nodes that could not get a subnet.
	lacking map[string]map[string]bool
	// released remembers, per network and node, the slices a node gave back
	// because it stopped using the network: it gets them again if they are
	// still free (a pod that lands as its slice is released then keeps its
	// address).
	released map[string]map[string][]netip.Prefix
}

// NewNodes returns an empty allocator for node IDs up to maxNodeID.
func NewNodes(maxNodeID int) *Nodes {
	return &Nodes{
		ids:      allocator.NewIDs(allocator.FirstNodeID, maxNodeID),
		networks: map[string]*pools{},
		lacking:  map[string]map[string]bool{},
		released: map[string]map[string][]netip.Prefix{},
	}
}

// SetNetworks makes the Layer3 networks exactly nets: new networks get pools,
// networks whose subnets changed get fresh pools, and networks no longer
// present are dropped with every slice they held. It returns the names of the
// networks added, changed or dropped (their node annotations must change).
func (n *Nodes) SetNetworks(nets []Layer3Network) (changed []string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	want := map[string]bool{}
	var errs []string
	for _, net := range nets {
		want[net.Name] = true
		if cur, ok := n.networks[net.Name]; ok && cur.key == net.key() {
			continue
		}
		p := &pools{key: net.key()}
		for _, s := range net.Subnets {
			sp, err := allocator.NewSubnetPool(s.CIDR, s.HostPrefix)
			if err != nil {
				errs = append(errs, fmt.Sprintf("network %s: %v", net.Name, err))
				p.err = err
				continue
			}
			p.pools = append(p.pools, sp)
		}
		n.networks[net.Name] = p
		delete(n.lacking, net.Name)
		delete(n.released, net.Name)
		changed = append(changed, net.Name)
	}
	for name := range n.networks {
		if !want[name] {
			delete(n.networks, name)
			delete(n.lacking, name)
			delete(n.released, name)
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	if len(errs) > 0 {
		return changed, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return changed, nil
}

// RecoverNode records a node's persisted ID and subnets. What does not fit (an
// ID held by another node, a subnet not in the network's pools or held by
// another node) is skipped and reported; it will be allocated afresh.
func (n *Nodes) RecoverNode(node string, id int, hasID bool, subnets nodeinfo.Subnets) []error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var errs []error
	if hasID {
		if err := n.ids.Reserve(node, id); err != nil {
			errs = append(errs, fmt.Errorf("node %s: %w", node, err))
		}
	}
	for name, list := range subnets {
		p, ok := n.networks[name]
		if !ok {
			continue
		}
		for _, s := range list {
			sp := poolFor(p, s)
			if sp == nil {
				errs = append(errs, fmt.Errorf("node %s: network %s: %s is not in the network's subnets", node, name, s))
				continue
			}
			if err := sp.Reserve(node, s); err != nil {
				errs = append(errs, fmt.Errorf("node %s: network %s: %w", node, name, err))
			}
		}
	}
	return errs
}

func poolFor(p *pools, s netip.Prefix) *allocator.SubnetPool {
	for _, sp := range p.pools {
		if sp.CIDR().Contains(s.Addr()) {
			return sp
		}
	}
	return nil
}

// Allocation is what a node holds.
type Allocation struct {
	ID int
	// IDErr is set when the node has no ID (the range is exhausted).
	IDErr error
	// Subnets are the node's slices; a network in Failed is listed with
	// none, so that zones know it is not coming (nodeinfo.Subnets.Lacks).
	Subnets nodeinfo.Subnets
	// Failed maps networks to why the node has no subnet there.
	Failed map[string]error
	// Released are the networks whose slices the node gave back (it no
	// longer uses them); nodes lacking a slice there may now get one.
	Released []string
}

// Node returns the node's ID and its slice of every Layer3 network,
// allocating what it lacks. A network exhausted for this node does not affect
// its other networks or other nodes. It is NodeUsing with every network.
func (n *Nodes) Node(node string) Allocation { return n.NodeUsing(node, nil) }

// NodeUsing returns the node's ID and its slice of every Layer3 network use
// reports (every network when use is nil), allocating what it lacks, and
// releases its slices of the others (docs/allocation.md "Slices only where
// used"). A released slice is given back to the node first if it is still
// free when the node uses the network again.
func (n *Nodes) NodeUsing(node string, use func(network string) bool) Allocation {
	n.mu.Lock()
	defer n.mu.Unlock()
	a := Allocation{Subnets: nodeinfo.Subnets{}, Failed: map[string]error{}}
	a.ID, a.IDErr = n.ids.Allocate(node)
	for name, p := range n.networks {
		if use != nil && !use(name) {
			if n.releaseUnused(name, node, p) {
				a.Released = append(a.Released, name)
			}
			continue
		}
		if p.err != nil {
			a.Failed[name] = p.err
			a.Subnets[name] = []netip.Prefix{} // listed, lacking (nodeinfo.Subnets.Lacks)
			n.markLacking(name, node, true)
			continue
		}
		var got []netip.Prefix
		var failed error
		for _, sp := range p.pools {
			s, err := n.allocate(name, node, sp)
			if err != nil {
				failed = err
				continue
			}
			got = append(got, s)
		}
		if failed != nil {
			// No half allocation: a node gets every family of a network or none.
			for _, sp := range p.pools {
				sp.Release(node)
			}
			a.Failed[name] = failed
			a.Subnets[name] = []netip.Prefix{} // listed, lacking (nodeinfo.Subnets.Lacks)
			n.markLacking(name, node, true)
			continue
		}
		n.markLacking(name, node, false)
		delete(n.released[name], node)
		a.Subnets[name] = got
	}
	sort.Strings(a.Released)
	return a
}

// allocate returns node's slice of sp: the one it holds, else the one it
// released last if still free, else a new one.
func (n *Nodes) allocate(network, node string, sp *allocator.SubnetPool) (netip.Prefix, error) {
	if s, ok := sp.Get(node); ok {
		return s, nil
	}
	for _, s := range n.released[network][node] {
		if sp.CIDR().Contains(s.Addr()) && sp.Reserve(node, s) == nil {
			return s, nil
		}
	}
	// Not free any more (another node has it): forget it.
	delete(n.released[network], node)
	return sp.Allocate(node)
}

// releaseUnused frees node's slices of a network it no longer uses,
// remembering them, and reports whether it held any.
func (n *Nodes) releaseUnused(network, node string, p *pools) bool {
	n.markLacking(network, node, false)
	var held []netip.Prefix
	for _, sp := range p.pools {
		if s, ok := sp.Get(node); ok {
			held = append(held, s)
			sp.Release(node)
		}
	}
	if len(held) == 0 {
		return false
	}
	if n.released[network] == nil {
		n.released[network] = map[string][]netip.Prefix{}
	}
	n.released[network][node] = held
	return true
}

// Held returns the networks node holds a slice of, sorted.
func (n *Nodes) Held(node string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name, p := range n.networks {
		for _, sp := range p.pools {
			if _, ok := sp.Get(node); ok {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func (n *Nodes) markLacking(network, node string, lacking bool) {
	if lacking {
		if n.lacking[network] == nil {
			n.lacking[network] = map[string]bool{}
		}
		n.lacking[network][node] = true
		return
	}
	delete(n.lacking[network], node)
}

// Unsplittable returns why network's subnets cannot be split into node slices,
// or nil when they can (or the network is unknown).
func (n *Nodes) Unsplittable(network string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p, ok := n.networks[network]; ok {
		return p.err
	}
	return nil
}

// Lacking returns the nodes that could not get a subnet of network, sorted.
func (n *Nodes) Lacking(network string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.lacking[network]))
	for node := range n.lacking[network] {
		out = append(out, node)
	}
	sort.Strings(out)
	return out
}

// ReleaseNode frees a deleted node's ID and subnets. It returns the nodes that
// lack a subnet in a network where a slice was freed: they should try again.
func (n *Nodes) ReleaseNode(node string) (retry []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ids.Release(node)
	seen := map[string]bool{}
	for name, p := range n.networks {
		for _, sp := range p.pools {
			sp.Release(node)
		}
		delete(n.lacking[name], node)
		delete(n.released[name], node)
		for other := range n.lacking[name] {
			if !seen[other] {
				seen[other] = true
				retry = append(retry, other)
			}
		}
	}
	sort.Strings(retry)
	return retry
}

// NodeIDHolder returns the node holding id (for tests and diagnostics).
func (n *Nodes) NodeIDHolder(id int) (string, bool) { return n.ids.Holder(id) }
