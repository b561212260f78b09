package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
)

// View holds some tables of an own monitor's database (ClientOptions.Views)
// in place of the libovsdb cache, whose copies of those tables stay empty:
// the rows as the monitor last applied them, read without a copy, indexed
// by name and by the external ID of the cache's client index. A libovsdb
// cache copies each row it stores and hands out another copy on every
// read (for a switch with 10,000 ports, 160 KB of garbage per read); a
// converging zone controller spent a sixth of its CPU on the copies it
// stores alone. The models it returns are shared by every reader and must
// not be changed: the monitor replaces a changed row by a new model.
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
	named map[string]uuidSet
	// extIDs is the index of the model's external_ids field (-1 if it has
	// none), key the external ID the cache's client index names (""
	// without one), and keyed its rows' UUIDs by that key's value.
	extIDs int
	key    string
	keyed  map[string]uuidSet
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
		vt := &viewTable{rows: map[string]model.Model{}, name: -1, extIDs: -1}
		if fl, ok := tf.columns["name"]; ok && fl.typ.Kind() == reflect.String {
			vt.name = fl.index
			vt.named = map[string]uuidSet{}
		}
		if fl, ok := tf.columns["external_ids"]; ok && fl.typ == reflect.TypeOf(map[string]string(nil)) {
			if key := externalIDIndex(tc.DatabaseModel().Client().Indexes(t)); key != "" {
				vt.extIDs, vt.key = fl.index, key
				vt.keyed = map[string]uuidSet{}
			}
		}
		v.tables[t] = vt
	}
	return v
}

// externalIDIndex is the key of the first client index that is one
// external ID ("" if there is none): the view indexes its rows by it too.
func externalIDIndex(indexes []model.ClientIndex) string {
	for _, ix := range indexes {
		if len(ix.Columns) == 1 && ix.Columns[0].Column == "external_ids" && ix.Columns[0].Key != nil {
			if k, ok := ix.Columns[0].Key.(string); ok {
				return k
			}
		}
	}
	return ""
}

// Follows reports whether the view holds table.
func (v *View) Follows(table string) bool { return v.table(table) != nil }

// table is the view's table of that name, nil if it holds none (or v is
// nil).
func (v *View) table(name string) *viewTable {
	if v == nil {
		return nil
	}
	return v.tables[name]
}

// Row returns the row of table with the given UUID (nil if there is none);
// ok is false if the view does not hold the table.
func (v *View) Row(table, uuid string) (m model.Model, ok bool) {
	vt := v.table(table)
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
	vt := v.table(table)
	if vt == nil || vt.name < 0 {
		return nil, false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	set := vt.named[name]
	set.each(func(u string) { uuids = append(uuids, u) })
	return uuids, true
}

// Has reports whether table holds the row with the given UUID; ok is false
// if the view does not hold the table.
func (v *View) Has(table, uuid string) (has, ok bool) {
	m, ok := v.Row(table, uuid)
	return m != nil, ok
}

// Rows returns every row of table by UUID (a new map of the shared
// models); ok is false if the view does not hold the table.
func (v *View) Rows(table string) (rows map[string]model.Model, ok bool) {
	vt := v.table(table)
	if vt == nil {
		return nil, false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	rows = make(map[string]model.Model, len(vt.rows))
	for u, m := range vt.rows {
		rows[u] = m
	}
	return rows, true
}

// KeyValues returns the values the rows of table have for the indexed
// external ID key (see KeyedEach), each once; ok is false if the view does not
// hold the table or does not index it by key.
func (v *View) KeyValues(table, key string) (values []string, ok bool) {
	vt := v.table(table)
	if vt == nil || vt.extIDs < 0 || vt.key != key {
		return nil, false
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	values = make([]string, 0, len(vt.keyed))
	for k := range vt.keyed {
		values = append(values, k)
	}
	return values, true
}

// IndexedBy reports whether the view holds table and indexes its rows by
// the external ID key.
func (v *View) IndexedBy(table, key string) bool {
	vt := v.table(table)
	return vt != nil && vt.extIDs >= 0 && vt.key == key
}

// KeyedEach calls f with every row whose external ID key (the one the
// cache's client index names) is value, in every table the view indexes by
// key, as one consistent reading. f must not call the view.
func (v *View) KeyedEach(key, value string, f func(table, uuid string, m model.Model)) {
	if v == nil {
		return
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	for name, vt := range v.tables {
		if vt.extIDs < 0 || vt.key != key {
			continue
		}
		set := vt.keyed[value]
		set.each(func(u string) { f(name, u, vt.rows[u]) })
	}
}

// set records a row (nil: deleted). Callers hold v.mu.
func (vt *viewTable) set(uuid string, m model.Model) {
	if old, ok := vt.rows[uuid]; ok {
		if vt.name >= 0 {
			unindex(vt.named, reflect.ValueOf(old).Elem().Field(vt.name).String(), uuid)
		}
		if vt.extIDs >= 0 {
			if k, ok := vt.keyOf(old); ok {
				unindex(vt.keyed, k, uuid)
			}
		}
	}
	if m == nil {
		delete(vt.rows, uuid)
		return
	}
	vt.rows[uuid] = m
	if vt.name >= 0 {
		index(vt.named, reflect.ValueOf(m).Elem().Field(vt.name).String(), uuid)
	}
	if vt.extIDs >= 0 {
		if k, ok := vt.keyOf(m); ok {
			index(vt.keyed, k, uuid)
		}
	}
}

// keyOf is a row's value of the indexed external ID (ok false without one).
func (vt *viewTable) keyOf(m model.Model) (string, bool) {
	ext := reflect.ValueOf(m).Elem().Field(vt.extIDs).Interface().(map[string]string)
	k, ok := ext[vt.key]
	return k, ok
}

// index adds uuid to the set of value in idx.
func index(idx map[string]uuidSet, value, uuid string) {
	set := idx[value]
	set.add(uuid)
	idx[value] = set
}

// unindex removes uuid from the set of value in idx.
func unindex(idx map[string]uuidSet, value, uuid string) {
	set, ok := idx[value]
	if !ok {
		return
	}
	set.remove(uuid)
	if set.empty() {
		delete(idx, value)
	} else {
		idx[value] = set
	}
}

// setModels records the rows apply built and changed.
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

// viewOf returns the client's cache and its own monitor's view of it (nil
// when it keeps none), or an error while it has no cache (reconnecting).
func viewOf(c client.Client) (*cache.TableCache, *View, error) {
	tc := c.Cache()
	if tc == nil {
		return nil, nil, errors.New("not connected to the database")
	}
	if v, ok := c.(interface{ View(*cache.TableCache) *View }); ok {
		return tc, v.View(tc), nil
	}
	return tc, nil, nil
}

// List returns the rows of T's table that match pred: from the client's
// view when it holds the table (the shared models: read only), from its
// libovsdb cache otherwise (copies). T is a model pointer, e.g.
// *nbdb.BFD.
func List[T model.Model](ctx context.Context, c client.Client, pred func(T) bool) ([]T, error) {
	tc, view, err := viewOf(c)
	if err != nil {
		return nil, err
	}
	table := tc.DatabaseModel().FindTable(reflect.TypeFor[T]())
	if table == "" {
		return nil, fmt.Errorf("%v is not a model of %s", reflect.TypeFor[T](), tc.DatabaseModel().Schema.Name)
	}
	var out []T
	if rows, viewed := view.Rows(table); viewed {
		for _, m := range rows {
			if t := m.(T); pred(t) {
				out = append(out, t)
			}
		}
		return out, nil
	}
	if err := c.WhereCache(pred).List(ctx, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Get fills m (a model pointer with its UUID or its name set) with the
// row it names, as libovsdb's Get does (client.ErrNotFound if there is
// none): from the client's view when it holds the table (m then shares the
// row's sets and maps: read only), from its libovsdb cache otherwise.
func Get(ctx context.Context, c client.Client, m model.Model) error {
	tc, view, err := viewOf(c)
	if err != nil {
		return err
	}
	table := tc.DatabaseModel().FindTable(reflect.TypeOf(m))
	if !view.Follows(table) {
		return c.Get(ctx, m)
	}
	dst := reflect.ValueOf(m).Elem()
	var found model.Model
	if f := dst.FieldByName("UUID"); f.IsValid() && f.String() != "" {
		found, _ = view.Row(table, f.String())
	} else if f := dst.FieldByName("Name"); f.IsValid() && f.Kind() == reflect.String {
		uuids, _ := view.Named(table, f.String())
		sort.Strings(uuids) // several of one name: one, always the same
		for _, u := range uuids {
			if found, _ = view.Row(table, u); found != nil {
				break
			}
		}
	} else {
		return fmt.Errorf("a %s to get names neither its UUID nor its name", table)
	}
	if found == nil {
		return client.ErrNotFound
	}
	dst.Set(reflect.ValueOf(found).Elem())
	return nil
}
