package feature

import (
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Scope is what a namespace's Services and policies are rendered with in
// the zone: its primary networks and the zone's node.
type Scope struct {
	// Nets are the namespace's primary networks, oldest first (one but for
	// a namespace with several, OKEP-5252); the first is its home: the
	// network its Services' load balancers and node ports belong to.
	Nets []ScopedNetwork
	// Local is the zone's node.
	Local nodeinfo.Info
}

// ScopedNetwork is one primary network of a namespace.
type ScopedNetwork struct {
	Primary podnet.Primary
	Network topology.Network
}

// Home is the namespace's first primary network.
func (s Scope) Home() ScopedNetwork { return s.Nets[0] }

// NotRendered is why something cannot be rendered now (a network
// malformed, not yet allocated; a namespace whose primary network is
// undecided): its rows stay as they are.
type NotRendered struct{ Reason string }

func (e *NotRendered) Error() string { return "network not rendered: " + e.Reason }
