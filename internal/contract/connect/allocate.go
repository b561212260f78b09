package connect

import (
	"errors"
	"fmt"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// ErrExhausted is wrapped when the connect subnets have no room left.
var ErrExhausted = errors.New("connect subnets exhausted")

// ExhaustedError names the network that found no room.
type ExhaustedError struct {
	Network Key
	What    string // "block" or "link"
	Layout  Layout
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("no %s left in %s for network %s (%d blocks of %d links)", e.What, e.Layout, e.Network, e.Layout.Blocks, e.Layout.LinksPerBlock)
}

// Unwrap makes errors.Is(err, ErrExhausted) hold.
func (e *ExhaustedError) Unwrap() error { return ErrExhausted }

// Allocate returns the slices of the networks keys (the selected networks)
// in layout l: a network that holds a valid slice in held keeps it; one that
// held a slice before (remembered, e.g. unselected and selected again) gets
// it back when it is free; the others get the lowest free block (Layer3), or
// the lowest free link of a block Layer2 networks share (a new shared block
// when none has room). Networks no longer in keys lose their slices. Nothing
// is returned on error: the caller keeps what it had.
func Allocate(l Layout, held, remembered Subnets, keys []Key) (Subnets, error) {
	want := map[Key]bool{}
	for _, k := range keys {
		want[k] = true
	}
	out := Subnets{}
	blockOwner := map[int]string{} // block -> "layer3" owner key or "layer2" (shared)
	usedLinks := map[int]map[int]bool{}
	take := func(k Key, s Slice) bool {
		b, link, err := l.locate(s)
		if err != nil {
			return false
		}
		switch {
		case k.Topology == netconf.TopologyLayer3 && link < 0:
			if _, taken := blockOwner[b]; taken {
				return false
			}
			blockOwner[b] = k.String()
		case k.Topology == netconf.TopologyLayer2 && link >= 1:
			if o, taken := blockOwner[b]; taken && o != netconf.TopologyLayer2 {
				return false
			}
			if usedLinks[b][link] {
				return false
			}
			blockOwner[b] = netconf.TopologyLayer2
			if usedLinks[b] == nil {
				usedLinks[b] = map[int]bool{}
			}
			usedLinks[b][link] = true
		default:
			return false
		}
		out[k] = s
		return true
	}
	// Current holders first (in key order, so a conflict resolves the same way
	// every time), then the remembered, then everyone else.
	for _, k := range held.Keys() {
		if want[k] {
			take(k, held[k])
		}
	}
	var fresh []Key
	for _, k := range sortedKeys(append([]Key(nil), keys...)) {
		if _, ok := out[k]; ok {
			continue
		}
		if s, ok := remembered[k]; ok && take(k, s) {
			continue
		}
		fresh = append(fresh, k)
	}
	rememberedBlocks := map[int]bool{}
	for _, s := range remembered {
		if b, _, err := l.locate(s); err == nil {
			rememberedBlocks[b] = true
		}
	}
	// freeBlock prefers blocks nobody remembers, so a network coming back
	// finds its old block free.
	freeBlock := func() (int, bool) {
		for pass := 0; pass < 2; pass++ {
			for b := 0; b < l.Blocks; b++ {
				if _, taken := blockOwner[b]; !taken && (pass == 1 || !rememberedBlocks[b]) {
					return b, true
				}
			}
		}
		return 0, false
	}
	for _, k := range fresh {
		if k.Topology == netconf.TopologyLayer3 {
			b, ok := freeBlock()
			if !ok {
				return nil, &ExhaustedError{Network: k, What: "block", Layout: l}
			}
			take(k, l.Block(b))
			continue
		}
		placed := false
		for b := 0; b < l.Blocks && !placed; b++ {
			if blockOwner[b] != netconf.TopologyLayer2 {
				continue
			}
			for link := 1; link < l.LinksPerBlock && !placed; link++ {
				placed = !usedLinks[b][link] && take(k, l.link(b, link))
			}
		}
		if !placed {
			b, ok := freeBlock()
			if !ok || l.LinksPerBlock < 2 {
				return nil, &ExhaustedError{Network: k, What: "link", Layout: l}
			}
			take(k, l.link(b, 1))
		}
	}
	return out, nil
}
