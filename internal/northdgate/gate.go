// Package northdgate keeps ovn-northd 26.03.0 and 26.03.1 from aborting. In
// those versions northd's incremental processing asserts (in
// ods_assign_array_index) when one of its runs sees a datapath deleted and
// another one created — a Logical_Switch, or a Logical_Router created without
// ports — whether in one Northbound transaction or in two that northd reads
// together (because it was busy, or simply because the second came within a
// millisecond or so of the first). A zone controller writes networks in
// parallel, so deleting one network while another is created can hit it.
// Fixed upstream by "northd: recompute on datapath index reuse" (in 26.03.2);
// the gate can go once that is the oldest OVN supported.
//
// The Gate separates the two kinds of writes in time: writes that create
// datapaths run concurrently with each other, a write that deletes datapaths
// runs alone, after northd has processed everything written before it and
// before anything is written after it (a northd barrier on each side: bump
// NB_Global.nb_cfg and wait until NB_Global.sb_cfg reaches it, as
// `ovn-nbctl --wait=sb` does). Writes that touch no datapath (ports, ACLs,
// routes, NAT: the frequent ones) pass through without waiting.
package northdgate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
)

// Datapath tables: rows northd turns into datapaths.
var datapathTables = map[string]bool{nbdb.LogicalSwitchTable: true, nbdb.LogicalRouterTable: true}

// Change is what a transaction does to datapaths.
type Change struct {
	Creates, Deletes bool
}

// Classify says whether operations create or delete datapaths.
func Classify(ops []ovsdb.Operation) Change {
	var c Change
	for _, op := range ops {
		if !datapathTables[op.Table] {
			continue
		}
		switch op.Op {
		case ovsdb.OperationInsert:
			c.Creates = true
		case ovsdb.OperationDelete:
			c.Deletes = true
		}
	}
	return c
}

// ErrMixed is returned for a write that both creates and deletes datapaths:
// northd would see both in one run whatever the gate does. Split it.
var ErrMixed = errors.New("a transaction both creates and deletes datapaths; ovn-northd 26.03.1 aborts on that")

// Gate orders the writes of one Northbound database. The zero value is not
// usable: set NB.
type Gate struct {
	// NB is a connection to the Northbound database (no monitor needed).
	NB client.Client
	// Timeout bounds one wait for northd (default 20 s, within a zone
	// reconcile's 30 s).
	Timeout time.Duration
	// Interval is the longest pause between two reads of NB_Global.sb_cfg
	// while waiting (default 20 ms). The first read comes 1 ms after the
	// bump and the pauses double up to Interval: an idle northd answers in
	// a few milliseconds, a busy one is not polled 1,000 times a second.
	Interval time.Duration

	// mu: datapath creations hold it shared, a deletion exclusively.
	mu sync.RWMutex
	// createsSynced: no creation committed through the gate since the last
	// barrier (cleared under mu shared, read and set under mu exclusive).
	// deletesSynced: likewise for deletions (written under mu exclusive).
	// Both start false: a previous controller may have written just before
	// it stopped.
	createsSynced, deletesSynced atomic.Bool
}

// Do runs write, a transaction making change, in its turn (see the package
// comment). It returns write's error, or why the turn could not be had.
//
// A deletion waits for northd first only when something may have been
// committed since the last barrier, so a run of deletions pays one barrier
// each, not two. A write that failed counts as committed (it may have been,
// all the same), and a creation following a deletion whose second barrier
// failed waits for northd first: no error path lets a creation reach northd
// together with a deletion.
func (g *Gate) Do(ctx context.Context, change Change, write func() error) error {
	switch {
	case change.Creates && change.Deletes:
		return ErrMixed
	case change.Deletes:
		g.mu.Lock()
		defer g.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return err // waited for the turn past the caller's deadline
		}
		if err := g.sync(ctx); err != nil {
			return fmt.Errorf("before deleting datapaths: %w", err)
		}
		g.deletesSynced.Store(false)
		werr := write()
		if err := g.sync(ctx); err != nil {
			return errors.Join(werr, fmt.Errorf("after deleting datapaths: %w", err))
		}
		return werr
	case change.Creates:
		g.mu.RLock()
		if g.deletesSynced.Load() {
			defer g.mu.RUnlock()
		} else {
			// A deletion may be unprocessed (its second barrier failed,
			// or the controller just started): wait for northd alone.
			g.mu.RUnlock()
			g.mu.Lock()
			defer g.mu.Unlock()
			if err := g.sync(ctx); err != nil {
				return fmt.Errorf("before creating datapaths: %w", err)
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		g.createsSynced.Store(false)
	}
	return write()
}

// sync runs a barrier unless northd is known to have processed everything
// written through the gate. mu must be held exclusively.
func (g *Gate) sync(ctx context.Context) error {
	if g.createsSynced.Load() && g.deletesSynced.Load() {
		return nil
	}
	if err := g.Barrier(ctx); err != nil {
		return err
	}
	g.createsSynced.Store(true)
	g.deletesSynced.Store(true)
	return nil
}

// Sync is s.Sync(ctx, owner, rows, contribs...) in its turn: it makes
// owner's rows (and its contributions to other owners' rows) equal to rows
// in one transaction passed through Do. A plan that would both delete
// and create datapaths becomes two transactions: first all of the owner's
// rows go (a deletion, between barriers), then the new ones are planned again
// from the cache and come. Deleting everything rather than only the datapaths
// that go keeps this simple and correct (nothing half-built is ever
// committed); it costs little because such a plan is rare: network specs are
// immutable, so only a zone whose node changed name replaces datapaths (the
// node switch, gateway router and external switch carry the node's name),
// and then the network's local part is rebuilt anyway. A nil Gate syncs
// directly.
func (g *Gate) Sync(ctx context.Context, s *ovsdbsync.Syncer, owner string, rows []model.Model, contribs ...ovsdbsync.Contribution) (*ovsdbsync.Plan, error) {
	p, err := s.Plan(owner, rows, contribs...)
	if err != nil || p.Empty() {
		return p, err
	}
	if g == nil {
		return p, s.Apply(ctx, p)
	}
	change := Classify(p.Ops)
	if change.Creates && change.Deletes {
		gone, err := s.Plan(owner, nil)
		if err != nil {
			return nil, err
		}
		if err := g.Do(ctx, Classify(gone.Ops), func() error { return s.Apply(ctx, gone) }); err != nil {
			return nil, err
		}
		if p, err = s.Plan(owner, rows, contribs...); err != nil {
			return nil, err
		}
		change = Classify(p.Ops)
	}
	return p, g.Do(ctx, change, func() error { return s.Apply(ctx, p) })
}

// Barrier returns once ovn-northd has processed every Northbound change
// committed before it was called.
func (g *Gate) Barrier(ctx context.Context) error {
	timeout, interval := g.Timeout, g.Interval
	if timeout == 0 {
		timeout = 20 * time.Second
	}
	if interval == 0 {
		interval = 20 * time.Millisecond
	}
	pause := min(time.Millisecond, interval)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// One transaction bumps nb_cfg and reads the value it now has.
	ops := []ovsdb.Operation{
		{Op: ovsdb.OperationMutate, Table: nbdb.NBGlobalTable, Where: everyRow,
			Mutations: []ovsdb.Mutation{{Column: "nb_cfg", Mutator: ovsdb.MutateOperationAdd, Value: 1}}},
		{Op: ovsdb.OperationSelect, Table: nbdb.NBGlobalTable, Where: everyRow, Columns: []string{"nb_cfg"}},
	}
	res, err := g.NB.Transact(ctx, ops...)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, ops)
	}
	if err != nil {
		return fmt.Errorf("northd barrier: %w", err)
	}
	target, err := intColumn(res, 1, "nb_cfg")
	if err != nil {
		return err
	}
	for {
		res, err := g.NB.Transact(ctx, ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.NBGlobalTable,
			Where: everyRow, Columns: []string{"sb_cfg"}})
		if err != nil {
			return fmt.Errorf("northd barrier: %w", err)
		}
		cur, err := intColumn(res, 0, "sb_cfg")
		if err != nil {
			return err
		}
		if cur >= target {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("northd barrier: ovn-northd has not processed nb_cfg %d (at %d): %w", target, cur, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, interval)
	}
}

// everyRow selects every row (OVSDB requires a where clause; NB_Global has
// one row).
var everyRow = []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionNotEqual,
	Value: ovsdb.UUID{GoUUID: "00000000-0000-0000-0000-000000000000"}}}

// intColumn reads an integer column of the one row a select returned.
func intColumn(res []ovsdb.OperationResult, i int, col string) (int, error) {
	if len(res) <= i || res[i].Error != "" || len(res[i].Rows) != 1 {
		return 0, fmt.Errorf("northd barrier: unexpected NB_Global result %+v", res)
	}
	switch v := res[i].Rows[0][col].(type) {
	case int:
		return v, nil
	case float64:
		return int(v), nil
	}
	return 0, fmt.Errorf("northd barrier: NB_Global %s is %T", col, res[i].Rows[0][col])
}
