package ovsdb

import (
	"reflect"
	"sync"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
)

// View is a read-only view of some tables of an own monitor's cache: the
// rows as the monitor last applied them, read without a copy. A libovsdb
// cache hands out a deep copy of a row on every read, which for a switch
// with 10,000 ports is 160 KB of garbage per read, several times per pod
// added. The view holds the models the monitor built (the cache stores
// copies of them), so the tables it follows are held twice; the models it
// returns, and those the cache's event handlers receive, must not be
// changed.
//
// The monitor updates the view before it updates the cache with the same
// rows (for rows it builds itself), or with its readers held until it has
// (for rows it leaves to libovsdb), so a reader that saw the cache show a
// write sees it in the view too.
type View struct {
	tc     *cache.TableCache
	mu     sync.RWMutex
	tables map[string]*viewTable
}

// viewTable is one table of a view.
type viewTable struct {
	rows map[string]model.Model
	// name is the index of the model's name field (-1 if it has none), and
	// named its rows' UUIDs by name.
	name  int
	named map[string]map[string]bool
}

// newView is a view of the given tables of tc (nil when there are none).
func newView(tc *cache.TableCache, f fields, tables []string) *View {
	if len(tables) == 0 {
		return nil
	}
	v := &View{tc: tc, tables: map[string]*viewTable{}}
	for _, t := range tables {
		tf := f[t]
		if tf == nil {
			continue
		}
		vt := &viewTable{rows: map[string]model.Model{}, name: -1}
		if fl, ok := tf.columns["name"]; ok && fl.typ.Kind() == reflect.String {
			vt.name = fl.index
			vt.named = map[string]map[string]bool{}
		}
		v.tables[t] = vt
	}
	return v
}

// Follows reports whether the view holds table.
func (v *View) Follows(table string) bool {
	if v == nil {
		return false
	}
	_, ok := v.tables[table]
	return ok
}

// Row returns the row of table with the given UUID (nil if there is none);
// ok is false if the view does not hold the table.
func (v *View) Row(table, uuid string) (m model.Model, ok bool) {
	if v == nil {
		return nil, false
	}
	vt := v.tables[table]
	if vt == nil {
		return nil, false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	return vt.rows[uuid], true
}

// Named returns the UUIDs of the rows of table with the given name; ok is
// false if the view does not hold the table or its rows have no name.
func (v *View) Named(table, name string) (uuids []string, ok bool) {
	if v == nil {
		return nil, false
	}
	vt := v.tables[table]
	if vt == nil || vt.name < 0 {
		return nil, false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	for u := range vt.named[name] {
		uuids = append(uuids, u)
	}
	return uuids, true
}

// set records a row (nil: deleted). Callers hold v.mu.
func (vt *viewTable) set(uuid string, m model.Model) {
	if old, ok := vt.rows[uuid]; ok && vt.name >= 0 {
		n := reflect.ValueOf(old).Elem().Field(vt.name).String()
		delete(vt.named[n], uuid)
		if len(vt.named[n]) == 0 {
			delete(vt.named, n)
		}
	}
	if m == nil {
		delete(vt.rows, uuid)
		return
	}
	vt.rows[uuid] = m
	if vt.name >= 0 {
		n := reflect.ValueOf(m).Elem().Field(vt.name).String()
		if vt.named[n] == nil {
			vt.named[n] = map[string]bool{}
		}
		vt.named[n][uuid] = true
	}
}

// setModels records the models apply built (before the cache gets them).
func (v *View) setModels(u *modelUpdates) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for table, rows := range u.tables {
		vt := v.tables[table]
		if vt == nil {
			continue
		}
		for uuid, m := range rows {
			vt.set(uuid, m[1])
		}
	}
}

// setFromCache records the rows libovsdb applied (after it did), read back
// from the cache: a copy of each, the view's own. Callers hold v.mu.
func (v *View) setFromCache(updated map[string][]string) {
	for table, uuids := range updated {
		vt := v.tables[table]
		if vt == nil {
			continue
		}
		rc := v.tc.Table(table)
		for _, uuid := range uuids {
			var m model.Model
			if rc != nil {
				m = rc.Row(uuid) // nil once deleted
			}
			vt.set(uuid, m)
		}
	}
}
