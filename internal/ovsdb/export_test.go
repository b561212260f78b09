package ovsdb

// ModifiedHere is how many row modifications the own monitor applied
// without libovsdb's set difference.
func ModifiedHere() int64 { return modifiedHere.Load() }
