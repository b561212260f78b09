package ovsdbsync

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"

	ovsdbclient "github.com/ovn-udn/ovn-udn/internal/ovsdb"
)

// rows reads the managed tables as the client last saw them: from the
// client's view for the tables it holds (their only store, see
// ovsdbclient.View: its models are shared, read only, as a plan reads
// them), from libovsdb's cache for the others (which copies each row it
// hands out).
type rows struct {
	c *cache.TableCache
	v *ovsdbclient.View
}

// rows returns the reader of the client's current cache and view
// (ErrNotConnected while it has none).
func (s *Syncer) rows() (rows, error) {
	c, err := s.cache()
	if err != nil {
		return rows{}, err
	}
	return s.rowsOf(c), nil
}

// rowsOf is the reader of the cache c and the client's view of it.
func (s *Syncer) rowsOf(c *cache.TableCache) rows { return rows{c: c, v: s.view(c)} }

// row returns the row u of table t, nil if there is none.
func (r rows) row(t *table, u string) model.Model {
	if m, viewed := r.v.Row(t.name, u); viewed {
		return m
	}
	return r.c.Table(t.name).Row(u)
}

// has reports whether table holds the row u.
func (r rows) has(table, u string) bool {
	if has, viewed := r.v.Has(table, u); viewed {
		return has
	}
	rc := r.c.Table(table)
	return rc != nil && rc.HasRow(u)
}

// all returns every row of t, by UUID (read only).
func (r rows) all(t *table) map[string]model.Model {
	if all, viewed := r.v.Rows(t.name); viewed {
		return all
	}
	return r.c.Table(t.name).RowsShallow()
}

// held returns the rows the owner holds in the tables with external IDs,
// by table and ID: those of the tables the view indexes by owner in one
// reading of it, the others from libovsdb's cache.
func (s *Syncer) held(owner string) (map[*table]map[string]existing, error) {
	return s.heldWhere(owner, nil)
}

// heldWhere is held keeping only the rows keep accepts (all when keep is
// nil): keep is given each row's table, ID and row.
func (s *Syncer) heldWhere(owner string, keep func(t *table, id string, e existing) bool) (map[*table]map[string]existing, error) {
	r, err := s.rows()
	if err != nil {
		return nil, err
	}
	held := make(map[*table]map[string]existing, len(s.order))
	add := func(t *table, u string, m model.Model) {
		v := reflect.ValueOf(m)
		ext := v.Elem().Field(t.extIDs).Interface().(map[string]string)
		if ext[OwnerKey] != owner {
			return // RowsByModels may also match on schema indexes
		}
		id := ext[IDKey]
		if id == "" {
			id = "legacy:" + u // held without an ID: stale
		}
		if e := (existing{uuid: u, row: v}); keep == nil || keep(t, id, e) {
			held[t][id] = e
		}
	}
	for _, t := range s.order {
		if t.extIDs >= 0 {
			held[t] = map[string]existing{}
		}
	}
	r.v.KeyedEach(OwnerKey, owner, func(table, u string, m model.Model) {
		if t := s.byName[table]; t != nil && t.extIDs >= 0 {
			add(t, u, m)
		}
	})
	for _, t := range s.order {
		if t.extIDs < 0 || r.v.IndexedBy(t.name, OwnerKey) {
			continue
		}
		probe := reflect.New(t.typ)
		probe.Elem().Field(t.extIDs).Set(reflect.ValueOf(map[string]string{OwnerKey: owner}))
		found, err := r.c.Table(t.name).RowsByModels([]model.Model{probe.Interface().(model.Model)})
		if err != nil {
			return nil, fmt.Errorf("ovsdbsync: looking up %s rows of %s: %w", t.name, owner, err)
		}
		for u, m := range found {
			add(t, u, m)
		}
	}
	return held, nil
}

// byIndex finds a row with the same index values (unique schema indexes,
// or the name) as target (a desired row, or a contribution's target).
// Several rows of one name (made by someone else): the first by UUID, so
// the choice is deterministic.
func (s *Syncer) byIndex(t *table, target reflect.Value) (existing, bool) {
	r, err := s.rows()
	if err != nil {
		return existing{}, false
	}
	var found map[string]model.Model
	switch {
	case !r.v.Follows(t.name):
		if found, err = r.byIndexInCache(t, target); err != nil {
			return existing{}, false
		}
	case len(t.indexCols) == 1 && t.typ.Field(t.indexCols[0]).Tag.Get("ovsdb") == "name":
		uuids, _ := r.v.Named(t.name, target.Elem().Field(t.indexCols[0]).String())
		found = make(map[string]model.Model, len(uuids))
		for _, u := range uuids {
			if m, _ := r.v.Row(t.name, u); m != nil {
				found[u] = m
			}
		}
	default: // tables with another index are small (BFD): go through them
		found, _ = r.v.Rows(t.name)
	}
	var uuids []string
	for u, m := range found {
		if sameIndex(t, reflect.ValueOf(m), target) {
			uuids = append(uuids, u)
		}
	}
	if len(uuids) == 0 {
		return existing{}, false
	}
	sort.Strings(uuids)
	return existing{uuid: uuids[0], row: reflect.ValueOf(found[uuids[0]])}, true
}

// byIndexInCache is byIndex's lookup in libovsdb's cache: the candidates
// its indexes give (copies), to be checked with sameIndex.
func (r rows) byIndexInCache(t *table, target reflect.Value) (map[string]model.Model, error) {
	probe := reflect.New(t.typ)
	for _, i := range t.indexCols {
		probe.Elem().Field(i).Set(target.Elem().Field(i))
	}
	if t.extIDs >= 0 {
		// libovsdb tries the client indexes in order, the owner key first
		// (Indexes), and reads a missing key as "": a probe without one
		// would match every row without an owner and never reach the
		// name. No owner is named this.
		probe.Elem().Field(t.extIDs).Set(reflect.ValueOf(map[string]string{OwnerKey: noOwner}))
	}
	return r.c.Table(t.name).RowsByModels([]model.Model{probe.Interface().(model.Model)})
}

// owners adds to out the owners of rows of t whose key starts with prefix.
func (r rows) owners(t *table, prefix string, out map[string]bool) {
	if values, viewed := r.v.KeyValues(t.name, OwnerKey); viewed {
		for _, o := range values {
			if o != "" && strings.HasPrefix(o, prefix) {
				out[o] = true
			}
		}
		return
	}
	// The owner index holds each owner once: much less to go through than
	// every row (83,000 rows, about 1,000 owners in a zone of 1,000
	// networks).
	if idx, err := r.c.Table(t.name).Index(OwnerIndex); err == nil {
		for v := range idx {
			if o, _ := v.(string); o != "" && strings.HasPrefix(o, prefix) {
				out[o] = true
			}
		}
		return
	}
	for _, m := range r.c.Table(t.name).RowsShallow() {
		ext := reflect.ValueOf(m).Elem().Field(t.extIDs).Interface().(map[string]string)
		if o, ok := ext[OwnerKey]; ok && strings.HasPrefix(o, prefix) {
			out[o] = true
		}
	}
}
