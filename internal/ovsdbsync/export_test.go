package ovsdbsync

import (
	"reflect"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"
)

// Remembered is how many owners' contributions the Syncer remembers (for
// tests: an owner that went must be forgotten).
func (s *Syncer) Remembered() int { return s.memory.remembered() }

// Insert is the insert operation the Syncer writes for a desired row.
func (s *Syncer) Insert(m model.Model) (ovsdb.Operation, error) {
	return s.tables[reflect.TypeOf(m)].insert(m)
}
