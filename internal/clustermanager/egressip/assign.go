// Package egressip is cluster-manager's EgressIP controller: it gives each
// egress IP of every EgressIP to one node, and reports where in the
// object's status (items, and an EgressIPsAssigned condition naming the
// addresses no node can hold, and why).
//
// Assignment (Assign) is a pure function of the objects and the nodes. A
// node may hold an egress IP when it is Ready, reachable (Reachability),
// labelled k8s.ovn.org/egress-assignable, and one of its external subnets (its
// primary interface's, its uplinks') holds the address. The addresses of
// one object go to distinct nodes, in distinct failure domains
// (topology.kubernetes.io/zone) first, then to the least loaded node. An
// assignment that is still possible is kept, so nothing moves while the
// cluster is unchanged. An address two objects claim is the older
// object's; the younger is refused.
package egressip

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

// Node is what assignment knows of a node.
type Node struct {
	Name string
	// Ready and Assignable: it is Ready, and labelled
	// k8s.ovn.org/egress-assignable.
	Ready, Assignable bool
	// Unreachable: its agent stopped answering probes (Reachability).
	Unreachable bool
	// FailureDomain is its topology.kubernetes.io/zone ("": none).
	FailureDomain string
	// Subnets are its external subnets, with its own address on each (the
	// prefix's address: 172.18.0.12/16).
	Subnets []netip.Prefix
}

// holds reports whether the node can hold addr.
func (n Node) holds(addr netip.Addr) bool {
	if !n.Ready || !n.Assignable || n.Unreachable {
		return false
	}
	return slices.ContainsFunc(n.Subnets, func(p netip.Prefix) bool { return p.Contains(addr) && usable(p, addr) })
}

// usable reports whether addr can be a host's in p: not p's network
// address nor, for IPv4, its broadcast address.
func usable(p netip.Prefix, addr netip.Addr) bool {
	m := p.Masked()
	if addr == m.Addr() && p.Bits() < addr.BitLen()-1 {
		return false
	}
	if addr.Is4() && p.Bits() < 31 {
		b := addr.As4()
		host := 32 - p.Bits()
		v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
		if v|(1<<host-1) == v {
			return false
		}
	}
	return true
}

// Object is an EgressIP as assignment reads it.
type Object struct {
	Name    string
	Created time.Time
	// IPs are its addresses, in the spec's order.
	IPs []netip.Addr
	// Spelled are the addresses as the spec writes them (status repeats
	// them so); an address missing here is written canonically.
	Spelled map[netip.Addr]string
	// Current are the nodes its status says hold its addresses.
	Current map[netip.Addr]string
}

// Problem is an address of an object that no node holds.
type Problem struct {
	IP     netip.Addr
	Reason string // v1.ReasonNoNodeForIP or v1.ReasonIPClaimedByOlder
	// Message says why, for the condition and the Event.
	Message string
}

// Result is one object's assignment.
type Result struct {
	// Items are the addresses with a node, in the spec's order.
	Items []v1.EgressIPStatusItem
	// Problems are the addresses without one, in the spec's order.
	Problems []Problem
}

// Assign gives the objects' addresses to nodes (see the package comment);
// the result is by object name.
func Assign(objects []Object, nodes []Node) map[string]Result {
	objs := slices.Clone(objects)
	slices.SortFunc(objs, func(a, b Object) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name))
	})
	byName := map[string]Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	// A node's own address is nobody's egress IP.
	nodeAddr := map[netip.Addr]string{}
	for _, n := range nodes {
		for _, p := range n.Subnets {
			nodeAddr[p.Addr()] = n.Name
		}
	}
	// Each address is the oldest claimant's.
	owner := map[netip.Addr]string{}
	problems := map[string][]Problem{}
	for _, o := range objs {
		for _, ip := range o.IPs {
			if n, ok := nodeAddr[ip]; ok {
				problems[o.Name] = append(problems[o.Name], Problem{IP: ip, Reason: v1.ReasonIPIsNodeAddress,
					Message: fmt.Sprintf("%s is node %s's own address", ip, n)})
				continue
			}
			if first, ok := owner[ip]; ok && first != o.Name {
				problems[o.Name] = append(problems[o.Name], Problem{IP: ip, Reason: v1.ReasonIPClaimedByOlder,
					Message: fmt.Sprintf("%s is already EgressIP %s's, which is older", ip, first)})
				continue
			}
			owner[ip] = o.Name
		}
	}
	load := map[string]int{}
	placed := map[string]map[netip.Addr]string{} // object → address → node
	used := func(o, node string) bool {
		for _, n := range placed[o] {
			if n == node {
				return true
			}
		}
		return false
	}
	place := func(o string, ip netip.Addr, node string) {
		if placed[o] == nil {
			placed[o] = map[netip.Addr]string{}
		}
		placed[o][ip] = node
		load[node]++
	}
	// What still holds stays where it is.
	for _, o := range objs {
		for _, ip := range o.IPs {
			cur, ok := o.Current[ip]
			if owner[ip] != o.Name || !ok || !byName[cur].holds(ip) || used(o.Name, cur) {
				continue
			}
			place(o.Name, ip, cur)
		}
	}
	// The rest goes where it spreads best.
	for _, o := range objs {
		domains := map[string]bool{}
		for _, n := range placed[o.Name] {
			domains[byName[n].FailureDomain] = true
		}
		for _, ip := range o.IPs {
			if owner[ip] != o.Name || placed[o.Name][ip] != "" {
				continue
			}
			var candidates []Node
			holders := 0
			for _, n := range nodes {
				if !n.holds(ip) {
					continue
				}
				holders++
				if !used(o.Name, n.Name) {
					candidates = append(candidates, n)
				}
			}
			if len(candidates) == 0 {
				msg := fmt.Sprintf("no Ready, reachable node labelled %s has %s in its subnets", v1.EgressAssignableLabel, ip)
				if holders > 0 {
					msg = fmt.Sprintf("each of the %d nodes that can hold %s already holds another address of this EgressIP", holders, ip)
				}
				problems[o.Name] = append(problems[o.Name], Problem{IP: ip, Reason: v1.ReasonNoNodeForIP, Message: msg})
				continue
			}
			best := slices.MinFunc(candidates, func(a, b Node) int {
				return cmp.Or(cmp.Compare(spreadRank(domains, a), spreadRank(domains, b)),
					cmp.Compare(load[a.Name], load[b.Name]), cmp.Compare(a.Name, b.Name))
			})
			place(o.Name, ip, best.Name)
			domains[best.FailureDomain] = true
		}
	}
	out := map[string]Result{}
	for _, o := range objs {
		var r Result
		for _, ip := range o.IPs {
			if n, ok := placed[o.Name][ip]; ok {
				spelled, ok := o.Spelled[ip]
				if !ok {
					spelled = ip.String()
				}
				r.Items = append(r.Items, v1.EgressIPStatusItem{Node: n, EgressIP: spelled})
			}
		}
		r.Problems = problems[o.Name]
		slices.SortStableFunc(r.Problems, func(a, b Problem) int {
			return cmp.Compare(slices.Index(o.IPs, a.IP), slices.Index(o.IPs, b.IP))
		})
		out[o.Name] = r
	}
	return out
}

// spreadRank is 0 for a node in a failure domain the object does not use
// yet, 1 otherwise (nodes without one never count as spreading).
func spreadRank(domains map[string]bool, n Node) int {
	if n.FailureDomain != "" && !domains[n.FailureDomain] {
		return 0
	}
	return 1
}
