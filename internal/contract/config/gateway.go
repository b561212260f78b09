package config

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Gateway is the zone controller's policy for every gateway router's
// default routes (the seed 004's router attributes
// enable_default_route_ecmp and enable_default_route_bfd). A node may
// override ECMP and BFD in its l3-gateway-config annotation.
type Gateway struct {
	// ECMP routes through every next hop of a family; off, through the
	// first one only (the "compatibility gateway").
	ECMP bool
	// BFD watches each next hop with a BFD session (one per node and next
	// hop, shared by every network's gateway router: docs/gateway.md), so a
	// dead next hop leaves the routes until it answers again.
	BFD bool
	// BFDMinTx, BFDMinRx (milliseconds) and BFDDetectMult are the sessions'
	// timers; 0 leaves OVN's default (1000, 1000, 3).
	BFDMinTx, BFDMinRx, BFDDetectMult int
}

// DefaultGateway is ECMP on, BFD off, OVN's timers.
func DefaultGateway() Gateway { return Gateway{ECMP: true} }

// GatewayOrDefault is *g, or DefaultGateway() when g is nil (callers that
// leave the policy unset get the binaries' default).
func GatewayOrDefault(g *Gateway) Gateway {
	if g == nil {
		return DefaultGateway()
	}
	return *g
}

// AddFlags registers the policy's flags (the zone controller's).
func (g *Gateway) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&g.ECMP, "default-route-ecmp", g.ECMP, "gateway routers route through every next hop of a family (off: the first only)")
	fs.BoolVar(&g.BFD, "default-route-bfd", g.BFD, "watch gateway routers' next hops with BFD, withdrawing routes through dead ones")
	fs.IntVar(&g.BFDMinTx, "bfd-min-tx", g.BFDMinTx, "BFD min_tx in milliseconds (0: OVN's default, 1000)")
	fs.IntVar(&g.BFDMinRx, "bfd-min-rx", g.BFDMinRx, "BFD min_rx in milliseconds (0: OVN's default, 1000)")
	fs.IntVar(&g.BFDDetectMult, "bfd-detect-mult", g.BFDDetectMult, "BFD detect_mult (0: OVN's default, 5)")
}

// Validate checks the timers.
func (g Gateway) Validate() error {
	for name, v := range map[string]int{"bfd-min-tx": g.BFDMinTx, "bfd-min-rx": g.BFDMinRx, "bfd-detect-mult": g.BFDDetectMult} {
		if v < 0 {
			return fmt.Errorf("%s: %d is negative", name, v)
		}
	}
	return nil
}
