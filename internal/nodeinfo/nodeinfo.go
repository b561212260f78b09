// Package nodeinfo defines, once, the annotations on Node objects through which
// ovn-udn's components talk about nodes: cluster-manager writes what it
// allocates (node ID, per-node subnets), the node agent publishes what the node
// is (chassis, zone, addresses, gateway), and zone controllers read both.
// docs/annotations.md describes each.
package nodeinfo

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
)

// Written by cluster-manager.
const (
	// NodeIDAnnotation holds the node's cluster-wide ID (2..32767).
	NodeIDAnnotation = "k8s.ovn.org/node-id"
	// NodeSubnetsAnnotation holds the node's slice of every Layer3 network, as a
	// JSON object from network name ("default" for the cluster default network)
	// to a list of CIDRs (one per IP family).
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

// ParseSubnets parses the node-subnets annotation ("" is an empty map).
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

// Networks returns the network names, sorted.
func (s Subnets) Networks() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
