package ovsdb

import "github.com/ovn-org/libovsdb/model"

// ModifiedHere is how many row modifications the own monitor applied
// without libovsdb's set difference.
func ModifiedHere() int64 { return modifiedHere.Load() }

// InsertedHere is how many rows the own monitor built into models without
// libovsdb's mapper.
func InsertedHere() int64 { return insertedHere.Load() }

// ViewRows returns every row of a table in a view.
func ViewRows(v *View, table string) map[string]model.Model {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := map[string]model.Model{}
	for u, m := range v.tables[table].rows {
		out[u] = m
	}
	return out
}

// ViewNames returns a view table's rows by name.
func ViewNames(v *View, table string) map[string][]string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := map[string][]string{}
	for n, uuids := range v.tables[table].named {
		uuids.each(func(u string) { out[n] = append(out[n], u) })
	}
	return out
}
