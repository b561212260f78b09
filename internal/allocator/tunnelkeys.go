package allocator

// OVN reserves the top 2^16 datapath tunnel keys (of 2^24) for interconnect:
// northd never allocates them, so transit switches and routers shared by zones
// take theirs from there (seed 000, "Tunnel keys for the transit
// switches/routers", option 3).
const (
	// FirstInterconnectKey is the first datapath tunnel key of OVN's
	// interconnect range, 2^24 - 2^16.
	FirstInterconnectKey = 1<<24 - 1<<16
	// LastTunnelKey is the last datapath tunnel key, 2^24 - 1.
	LastTunnelKey = 1<<24 - 1
	// LegacyKeyRange is how many keys at the start of the interconnect range are
	// derived from network IDs (one per network ID 0..4095).
	LegacyKeyRange = 4096
	// FirstAllocatedKey is the first key allocated centrally (Layer2 transit
	// routers, connect routers), right after the derived ones.
	FirstAllocatedKey = FirstInterconnectKey + LegacyKeyRange
)

// TransitSwitchKey is the tunnel key of a network's transit switch (Layer3) or
// distributed Layer2 switch, derived from its network ID.
func TransitSwitchKey(networkID int) int { return FirstInterconnectKey + networkID }
