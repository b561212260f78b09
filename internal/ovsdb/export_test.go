package ovsdb

// ModifiedHere is how many row modifications the own monitor applied
// without libovsdb's set difference.
func ModifiedHere() int64 { return modifiedHere.Load() }

// InsertedHere is how many rows the own monitor built into models without
// libovsdb's mapper.
func InsertedHere() int64 { return insertedHere.Load() }
