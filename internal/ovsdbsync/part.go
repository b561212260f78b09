package ovsdbsync

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// Part is a slice of one owner's rows that can be planned without the rest:
// the rows tagged external_ids:Key with one of Values (a network's rows for
// some remote nodes), and their membership in set columns of the owner's
// other rows (the network's transit switch's ports, its cluster router's
// routes).
//
// A part's plan leaves every other row of the owner alone, so planning the
// owner whole afterwards finds nothing to do when the part's rows are what
// the whole would have given them. That is the caller's promise: the part's
// desired rows are exactly the whole's rows with those tags, and its
// Parents name every row of the owner that refers to them. Rows are matched
// by ID across the part's values, as a plan of the whole matches them: a
// row whose tag changes (a node leaving and another taking its ID, in one
// part) is updated, not deleted and inserted again.
type Part struct {
	// Key and Values are the external ID that tags the part's rows.
	Key    string
	Values []string
	// Parents are the owner's rows whose set columns list the part's rows:
	// Target (with its index set) and Column (declared with Share) as for a
	// Contribution, Members the IDs of the part's desired rows the column
	// lists (none: the part's rows leave it). Members of the column that
	// are not the part's rows are kept.
	Parents []Contribution
}

// ErrOutsidePart is wrapped by PlanPart's error when a desired row's ID is
// held by the owner outside the part: the part is not what a plan of the
// whole would make of it (plan the whole).
var ErrOutsidePart = errors.New("a desired row's ID is held outside the part")

// PlanPart diffs an owner's part against the cache: the part's rows are
// inserted, updated and deleted as Plan would, the Parents' columns gain
// and lose the part's members by mutation, and nothing else is read or
// written. A parent that does not exist is listed in Plan.Missing (plan
// the owner whole instead); one held by another owner is an error, and so
// is a desired row outside the part, or one whose ID the owner holds outside
// it (ErrOutsidePart: the part is not what the whole would make of it).
func (s *Syncer) PlanPart(owner string, part Part, desired []model.Model) (*Plan, error) {
	return s.plan(owner, &part, desired, part.Parents)
}

// has reports whether the part covers the row v of table t (a model
// pointer).
func (part *Part) has(t *table, v reflect.Value) bool {
	if t.extIDs < 0 {
		return false
	}
	tag, ok := v.Elem().Field(t.extIDs).Interface().(map[string]string)[part.Key]
	return ok && slices.Contains(part.Values, tag)
}

// String names the part.
func (part *Part) String() string { return part.Key + "=" + strings.Join(part.Values, ",") }

// memberships returns the mutations that make the part's members of its
// parents' columns those the plan's parents list: members that are the
// part's desired rows are inserted, members that are rows the part holds
// and does not list are deleted.
func (s *Syncer) memberships(p *Plan, targets []target, held map[*table]map[string]existing, uuidOf map[string]string) ([]ovsdb.Operation, error) {
	var ops []ovsdb.Operation
	for i, cb := range p.contribs {
		tg := targets[i]
		if tg.row == nil {
			p.Missing = append(p.Missing, fmt.Sprintf("%s %s", tg.t.name, indexString(tg.t, reflect.ValueOf(cb.Target))))
			continue
		}
		if o := tg.row.row.Elem().Field(tg.t.extIDs).Interface().(map[string]string)[OwnerKey]; o != p.Owner {
			return nil, fmt.Errorf("ovsdbsync: part %s of %s: parent %s %s is held by %q", p.part, p.Owner,
				tg.t.name, indexString(tg.t, reflect.ValueOf(cb.Target)), o)
		}
		want := make(map[string]bool, len(cb.Members))
		for _, id := range cb.Members {
			u, ok := uuidOf[id]
			if !ok {
				return nil, fmt.Errorf("ovsdbsync: part %s of %s: parent %s.%s lists %q, which is not desired", p.part, p.Owner, tg.t.name, cb.Column, id)
			}
			want[u] = true
		}
		// The column's members that are the part's rows (a wanted member
		// already there is one: it was matched to a held row).
		mine := map[string]bool{}
		for _, e := range held[s.byName[tg.col.refTable]] {
			mine[e.uuid] = true
		}
		have := map[string]bool{}
		for _, m := range membersIn(tg.row.row.Elem().Field(tg.col.index), mine) {
			have[m] = true
		}
		add, del := diffSets(want, have)
		if len(add)+len(del) == 0 {
			continue
		}
		ops = append(ops, memberMutation(memberKey{t: tg.t, col: tg.col, row: tg.row.uuid}, del, add))
		p.Added += len(add)
		p.Removed += len(del)
	}
	return ops, nil
}

// Part returns the part the plan covers (PlanPart), nil for a plan of the
// owner's rows whole.
func (p *Plan) Part() *Part { return p.part }
