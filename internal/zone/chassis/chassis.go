// Package chassis is the zone feature that registers the other zones'
// chassis in the zone's Southbound: each remote node with a chassis ID and
// an encapsulation address is a Chassis marked is-remote, with its Geneve
// Encap, so that northd binds the networks' remote ports to it and traffic
// to them is tunnelled there. Its one key is feature.ChassisKey; its rows
// carry the owner zone/chassis.
package chassis

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/sbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Owner marks the remote chassis a zone controller registers.
const Owner = "zone/chassis"

// remoteChassis is the Southbound registration of another zone's node: its
// chassis marked is-remote, with its Geneve endpoint. With it, northd binds the
// network's remote ports to that chassis and traffic to them is tunnelled
// there.
type remoteChassis struct {
	name, hostname, encapIP string
}

func desiredChassis(nodes []nodeinfo.Info, zone string) []remoteChassis {
	var out []remoteChassis
	for _, n := range nodes {
		if n.Zone == zone || n.ChassisID == "" || !n.EncapIP.IsValid() {
			continue
		}
		out = append(out, remoteChassis{name: n.ChassisID, hostname: n.Name, encapIP: n.EncapIP.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// syncChassis makes the zone's remote chassis registrations equal to want, in
// one transaction (none when nothing changed), and waits until the cache shows
// it. It returns whether it wrote.
func syncChassis(ctx context.Context, sb client.Client, want []remoteChassis) (bool, error) {
	ops, err := planChassis(ctx, sb, want)
	if err != nil || len(ops) == 0 {
		return false, err
	}
	res, err := sb.Transact(ctx, ops...)
	if err != nil {
		return false, fmt.Errorf("registering remote chassis: %w", err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return false, fmt.Errorf("registering remote chassis: %w", err)
	}
	err = proc.WaitFor(10*time.Second, time.Millisecond, func() (bool, error) {
		again, err := planChassis(ctx, sb, want)
		return err == nil && len(again) == 0, err
	})
	if err != nil {
		return true, fmt.Errorf("registering remote chassis: the cache did not show the result: %w", err)
	}
	return true, nil
}

// planChassis returns the operations that make the registrations equal to want.
func planChassis(ctx context.Context, sb client.Client, want []remoteChassis) ([]ovsdb.Operation, error) {
	if sb.Cache() == nil {
		return nil, ovsdbsync.ErrNotConnected
	}
	var have []sbdb.Chassis
	if err := sb.WhereCache(func(c *sbdb.Chassis) bool { return c.ExternalIDs[ovsdbsync.OwnerKey] == Owner }).List(ctx, &have); err != nil {
		return nil, err
	}
	encaps := map[string]sbdb.Encap{}
	var allEncaps []sbdb.Encap
	if err := sb.List(ctx, &allEncaps); err != nil {
		return nil, err
	}
	for _, e := range allEncaps {
		encaps[e.UUID] = e
	}
	byName := map[string]sbdb.Chassis{}
	for _, c := range have {
		byName[c.Name] = c
	}
	var ops []ovsdb.Operation
	add := func(o []ovsdb.Operation, err error) error {
		ops = append(ops, o...)
		return err
	}
	wanted := map[string]bool{}
	for i, w := range want {
		wanted[w.name] = true
		cur, exists := byName[w.name]
		if exists && chassisMatches(cur, encaps, w) {
			continue
		}
		encap := &sbdb.Encap{UUID: fmt.Sprintf("encap%d", i), Type: "geneve", IP: w.encapIP, ChassisName: w.name,
			Options: map[string]string{"csum": "true"}}
		ch := &sbdb.Chassis{Name: w.name, Hostname: w.hostname, Encaps: []string{encap.UUID},
			OtherConfig: map[string]string{"is-remote": "true"},
			ExternalIDs: map[string]string{"ovn-is-interconn": "true", ovsdbsync.OwnerKey: Owner}}
		if err := add(sb.Create(encap)); err != nil {
			return nil, err
		}
		if exists {
			ch.UUID = cur.UUID
			if err := add(sb.Where(ch).Update(ch, &ch.Hostname, &ch.Encaps, &ch.OtherConfig, &ch.ExternalIDs)); err != nil {
				return nil, err
			}
			continue
		}
		ch.UUID = fmt.Sprintf("chassis%d", i)
		if err := add(sb.Create(ch)); err != nil {
			return nil, err
		}
	}
	for _, c := range have {
		if !wanted[c.Name] {
			if err := add(sb.Where(&sbdb.Chassis{UUID: c.UUID}).Delete()); err != nil {
				return nil, err
			}
		}
	}
	return ops, nil
}

func chassisMatches(c sbdb.Chassis, encaps map[string]sbdb.Encap, w remoteChassis) bool {
	if c.Hostname != w.hostname || c.OtherConfig["is-remote"] != "true" || len(c.Encaps) != 1 {
		return false
	}
	e, ok := encaps[c.Encaps[0]]
	return ok && e.Type == "geneve" && e.IP == w.encapIP
}

// SBTables are the Southbound tables the feature reads (the zone's
// Southbound client monitors them).
var SBTables = []model.Model{&sbdb.Chassis{}, &sbdb.Encap{}}
