package ovsdb

import (
	"reflect"
	"sync/atomic"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

// modifiedHere and insertedHere count the rows apply modified and
// inserted itself (for tests).
var modifiedHere, insertedHere atomic.Int64

// apply applies table updates to a libovsdb cache. New rows are built into
// models here (f.newModel), and modifications of sets of strings (or
// UUIDs) and maps of strings are applied here: libovsdb's set difference
// boxes every element of the current set into an interface{} and hashes
// it, a fifth of a zone controller's CPU once a switch holds 10,000 ports.
// Everything else, and any row with a column of another kind, goes through
// libovsdb's Populate2. The finished models are handed to the cache in one
// ApplyCacheUpdate, which indexes them and raises its events as Populate2
// does.
//
// v, if not nil, is the monitor's view of some tables: it gets the models
// built here before the cache does, and the rows left to libovsdb right
// after it applied them.
func (f fields) apply(tc *cache.TableCache, u ovsdb.TableUpdates2, v *View) error {
	done := &modelUpdates{}
	for table, rows := range u {
		rc := tc.Table(table)
		if rc == nil {
			continue
		}
		for uuid, ru := range rows {
			if ru == nil || ru.Delete != nil {
				continue
			}
			switch {
			case ru.Modify != nil && ru.Initial == nil && ru.Insert == nil:
				old, updated, ok := f.modify(rc, v, table, uuid, *ru.Modify)
				if ok {
					delete(rows, uuid)
					done.add(table, uuid, old, updated)
					modifiedHere.Add(1)
				}
			case ru.Modify == nil && (ru.Initial == nil) != (ru.Insert == nil):
				row := ru.Initial
				if row == nil {
					row = ru.Insert
				}
				if rc.HasRow(uuid) {
					continue // for libovsdb to report
				}
				if m, ok := f.newModel(table, uuid, *row); ok {
					delete(rows, uuid)
					done.add(table, uuid, nil, m)
					insertedHere.Add(1)
				}
			}
		}
	}
	wire.GenericUpdates(u)       // what is left is libovsdb's
	var left map[string][]string // rows left to libovsdb in tables v holds
	for table, rows := range u {
		if !v.Follows(table) {
			continue
		}
		for uuid := range rows {
			if left == nil {
				left = map[string][]string{}
			}
			left[table] = append(left[table], uuid)
		}
	}
	// The view takes the rows libovsdb applies right after it, its readers
	// held meanwhile: one that saw the cache change sees the view changed.
	if left != nil {
		v.mu.Lock()
	}
	err := tc.Populate2(u)
	if left != nil {
		v.setFromCache(left)
		v.mu.Unlock()
	}
	if err != nil {
		return err
	}
	if len(done.tables) == 0 {
		return nil
	}
	v.setModels(done)
	return tc.ApplyCacheUpdate(done)
}

// modify applies a row's <row-update2> modification, ok false if it has a
// column of a kind left to libovsdb (or the row is not in the cache).
func (f fields) modify(rc *cache.RowCache, v *View, table, uuid string, diff ovsdb.Row) (old, updated model.Model, ok bool) {
	tf := f[table]
	if tf == nil {
		return nil, nil, false
	}
	old, viewed := v.Row(table, uuid) // as the cache holds it, not copied
	if !viewed {
		old = rc.Row(uuid) // a copy
	}
	if old == nil || reflect.TypeOf(old) != reflect.PointerTo(tf.typ) {
		return nil, nil, false
	}
	nv := reflect.New(tf.typ)
	nv.Elem().Set(reflect.ValueOf(old).Elem()) // columns not in the diff are shared: models are never changed in place
	for column, d := range diff {
		fl, known := tf.columns[column]
		if !known {
			return nil, nil, false
		}
		dst := nv.Elem().Field(fl.index)
		switch cur := dst.Interface().(type) {
		case []string:
			elems, ok := stringElems(d)
			if !ok {
				return nil, nil, false
			}
			dst.Set(reflect.ValueOf(toggled(cur, elems)))
		case map[string]string:
			out, ok := mapDiffApplied(cur, d)
			if !ok {
				return nil, nil, false
			}
			dst.Set(reflect.ValueOf(out))
		default:
			return nil, nil, false
		}
	}
	return old, nv.Interface().(model.Model), true
}

// stringElems returns the elements of a set diff of strings or UUIDs (a
// lone element stands for itself).
func stringElems(d any) ([]string, bool) {
	one := func(e any) (string, bool) {
		switch e := e.(type) {
		case string:
			return e, true
		case ovsdb.UUID:
			return e.GoUUID, true
		}
		return "", false
	}
	if set, isSet := d.(wire.StringSet); isSet {
		return set, true
	}
	set, isSet := d.(ovsdb.OvsSet)
	if !isSet {
		s, ok := one(d)
		return []string{s}, ok
	}
	out := make([]string, 0, len(set.GoSet))
	for _, e := range set.GoSet {
		s, ok := one(e)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// toggled applies a set difference (ovsdb-server(7), update2): elements
// of diff in cur are removed, the others added. A diff is usually one or
// two elements against thousands: those are compared, not hashed.
func toggled(cur, diff []string) []string {
	has := func(e string) bool {
		for _, d := range diff {
			if d == e {
				return true
			}
		}
		return false
	}
	if len(diff) > 8 {
		in := make(map[string]bool, len(diff))
		for _, d := range diff {
			in[d] = true
		}
		has = func(e string) bool { return in[e] }
	}
	out := make([]string, 0, len(cur)+len(diff))
	removed := map[string]bool{}
	for _, e := range cur {
		if has(e) {
			removed[e] = true
			continue
		}
		out = append(out, e)
	}
	for _, d := range diff {
		if !removed[d] {
			out = append(out, d)
			removed[d] = true // once
		}
	}
	if len(out) == 0 {
		return nil // an empty set, as libovsdb leaves it
	}
	return out
}

// mapDiffApplied applies a map difference: a key absent is added, a key
// with the same value removed, a key with another value changed.
func mapDiffApplied(cur map[string]string, diff any) (map[string]string, bool) {
	var pairs map[string]string
	switch diff := diff.(type) {
	case wire.StringMap:
		pairs = diff
	case ovsdb.OvsMap:
		pairs = make(map[string]string, len(diff.GoMap))
		for k, v := range diff.GoMap {
			ks, ok1 := k.(string)
			vs, ok2 := v.(string)
			if !ok1 || !ok2 {
				return nil, false
			}
			pairs[ks] = vs
		}
	default:
		return nil, false
	}
	out := make(map[string]string, len(cur)+len(pairs))
	for k, v := range cur {
		out[k] = v
	}
	for k, v := range pairs {
		if old, ok := cur[k]; ok && old == v {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil, true // an empty map, as libovsdb leaves it
	}
	return out, true
}

// modelUpdates are models already updated, for TableCache.ApplyCacheUpdate.
type modelUpdates struct {
	tables map[string]map[string][2]model.Model
}

func (u *modelUpdates) add(table, uuid string, old, updated model.Model) {
	if u.tables == nil {
		u.tables = map[string]map[string][2]model.Model{}
	}
	if u.tables[table] == nil {
		u.tables[table] = map[string][2]model.Model{}
	}
	u.tables[table][uuid] = [2]model.Model{old, updated}
}

// GetUpdatedTables lists the tables updated.
func (u *modelUpdates) GetUpdatedTables() []string {
	out := make([]string, 0, len(u.tables))
	for t := range u.tables {
		out = append(out, t)
	}
	return out
}

// ForEachModelUpdate calls do with each row's old and new model.
func (u *modelUpdates) ForEachModelUpdate(table string, do func(uuid string, old, new model.Model) error) error {
	for uuid, m := range u.tables[table] {
		if err := do(uuid, m[0], m[1]); err != nil {
			return err
		}
	}
	return nil
}
