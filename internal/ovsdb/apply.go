package ovsdb

import (
	"fmt"
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

// apply applies table updates: the rows of the tables the view v holds to
// the view alone (it is their only store, see View), the others to the
// libovsdb cache tc.
//
// New rows are built into models here (f.newModel), and modifications of
// sets of strings (or UUIDs) and maps of strings are applied here:
// libovsdb's set difference boxes every element of the current set into
// an interface{} and hashes it, a fifth of a zone controller's CPU once a
// switch holds 10,000 ports. In the cache's tables, everything else, and
// any row with a column of another kind, goes through libovsdb's
// Populate2, and the models built here are handed to the cache in one
// ApplyCacheUpdate, which copies and indexes them and raises its events
// as Populate2 does. In the view's tables every change is applied here
// (viewUpdate).
func (f fields) apply(tc *cache.TableCache, u ovsdb.TableUpdates2, v *View) error {
	done := &modelUpdates{}
	viewed := &modelUpdates{}
	for table, rows := range u {
		if v.Follows(table) {
			for uuid, ru := range rows {
				if ru == nil {
					continue
				}
				old, m, err := f.viewUpdate(tc.DatabaseModel(), v, table, uuid, *ru)
				if err != nil {
					return fmt.Errorf("%s %s: %w", table, uuid, err)
				}
				viewed.add(table, uuid, old, m)
			}
			delete(u, table)
			continue
		}
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
				old := rc.Row(uuid) // a copy
				updated, ok := f.modify(old, table, *ru.Modify)
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
	v.setModels(viewed)
	wire.GenericUpdates(u) // what is left is libovsdb's
	if err := tc.Populate2(u); err != nil {
		return err
	}
	if len(done.tables) == 0 {
		return nil
	}
	return tc.ApplyCacheUpdate(done)
}

// viewUpdate applies one <row-update2> of a table the view holds: the
// row's model before (nil if new) and after (nil if deleted). A change
// that cannot be applied is an error (the monitor stops, and the client
// connects again): the view has no one to leave it to.
func (f fields) viewUpdate(dbModel model.DatabaseModel, v *View, table, uuid string, ru ovsdb.RowUpdate2) (old, updated model.Model, err error) {
	old, _ = v.Row(table, uuid)
	switch {
	case ru.Initial != nil || ru.Insert != nil:
		row := ru.Initial
		if row == nil {
			row = ru.Insert
		}
		if old != nil {
			return nil, nil, fmt.Errorf("inserted, and already held")
		}
		if m, ok := f.newModel(table, uuid, *row); ok {
			insertedHere.Add(1)
			return nil, m, nil
		}
		// A column of a kind newModel leaves to libovsdb's mapper.
		wire.GenericUpdates(ovsdb.TableUpdates2{table: {uuid: &ovsdb.RowUpdate2{Insert: row}}})
		m, err := model.CreateModel(dbModel, table, row, uuid)
		return nil, m, err
	case ru.Modify != nil:
		if old == nil {
			return nil, nil, fmt.Errorf("modified, and not held")
		}
		m, ok := f.modify(old, table, *ru.Modify)
		if !ok {
			return nil, nil, fmt.Errorf("a modification of a column the view cannot apply: %v", *ru.Modify)
		}
		modifiedHere.Add(1)
		return old, m, nil
	default: // deleted
		return old, nil, nil
	}
}

// modify applies a row's <row-update2> modification to old, which it
// leaves alone (models are never changed in place: readers of the view
// hold them), ok false if a column is of a kind it does not apply (or old
// is not the table's model).
func (f fields) modify(old model.Model, table string, diff ovsdb.Row) (updated model.Model, ok bool) {
	tf := f[table]
	if tf == nil || old == nil || reflect.TypeOf(old) != reflect.PointerTo(tf.typ) {
		return nil, false
	}
	nv := reflect.New(tf.typ)
	nv.Elem().Set(reflect.ValueOf(old).Elem()) // columns not in the diff are shared
	for column, d := range diff {
		fl, known := tf.columns[column]
		if !known {
			return nil, false
		}
		dst := nv.Elem().Field(fl.index)
		switch cur := dst.Interface().(type) {
		case []string:
			elems, ok := stringElems(d)
			if !ok {
				return nil, false
			}
			dst.Set(reflect.ValueOf(toggled(cur, elems)))
			continue
		case map[string]string:
			out, ok := mapDiffApplied(cur, d)
			if !ok {
				return nil, false
			}
			dst.Set(reflect.ValueOf(out))
			continue
		}
		if !fl.modify(dst, d) {
			return nil, false
		}
	}
	return nv.Interface().(model.Model), true
}

// modify applies a diff to a column of another kind than a set of strings
// or a map of strings: an atom or an optional atom (the diff is the new
// value), a set of an enum of strings (its elements are toggled).
func (fl field) modify(dst reflect.Value, d any) bool {
	switch fl.typ.Kind() {
	case reflect.String, reflect.Int, reflect.Bool, reflect.Float64:
		return fl.set(dst, d)
	case reflect.Pointer:
		// ovsdb-server sends an optional column's new value (as libovsdb
		// reads it), not a difference; two elements would be one.
		elems, ok := fl.atoms(d)
		if !ok {
			return false
		}
		out := elems
		if len(elems) == 2 && !dst.IsNil() {
			out = toggled([]any{dst.Elem().Interface()}, elems)
		}
		switch len(out) {
		case 0:
			dst.Set(reflect.Zero(fl.typ))
		case 1:
			p := reflect.New(fl.typ.Elem())
			p.Elem().Set(reflect.ValueOf(out[0]))
			dst.Set(p)
		default:
			return false
		}
		return true
	case reflect.Slice:
		if fl.typ.Elem().Kind() != reflect.String {
			return false
		}
		cur := make([]any, dst.Len())
		for i := range cur {
			cur[i] = dst.Index(i).Interface()
		}
		elems, ok := fl.atoms(d)
		if !ok {
			return false
		}
		out := toggled(cur, elems)
		if len(out) == 0 {
			dst.Set(reflect.Zero(fl.typ))
			return true
		}
		sv := reflect.MakeSlice(fl.typ, len(out), len(out))
		for i, e := range out {
			sv.Index(i).Set(reflect.ValueOf(e))
		}
		dst.Set(sv)
		return true
	}
	return false
}

// atoms are a diff's elements as values of the field's element type.
func (fl field) atoms(d any) ([]any, bool) {
	var raw []any
	switch d := d.(type) {
	case wire.StringSet:
		for _, e := range d {
			if fl.key == ovsdb.TypeUUID {
				raw = append(raw, ovsdb.UUID{GoUUID: e})
				continue
			}
			raw = append(raw, e)
		}
	case ovsdb.OvsSet:
		raw = d.GoSet
	default:
		raw = []any{d}
	}
	out := make([]any, 0, len(raw))
	for _, e := range raw {
		v := reflect.New(fl.typ.Elem()).Elem()
		if !setAtom(v, fl.key, e) {
			return nil, false
		}
		out = append(out, v.Interface())
	}
	return out, true
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
func toggled[T comparable](cur, diff []T) []T {
	has := func(e T) bool {
		for _, d := range diff {
			if d == e {
				return true
			}
		}
		return false
	}
	if len(diff) > 8 {
		in := make(map[T]bool, len(diff))
		for _, d := range diff {
			in[d] = true
		}
		has = func(e T) bool { return in[e] }
	}
	out := make([]T, 0, len(cur)+len(diff))
	removed := map[T]bool{}
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
