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

// MemberMutation is the mutation a contribution to row m's shared column
// makes.
func (s *Syncer) MemberMutation(m model.Model, column string, del, add []string) ovsdb.Operation {
	t := s.tables[reflect.TypeOf(m)]
	col, _ := t.column(column)
	return memberMutation(memberKey{t: t, col: col, row: reflect.ValueOf(m).Elem().Field(t.uuid).String()}, del, add)
}

// Update is the operations the Syncer writes to make row cur (as the cache
// holds it) equal to desired (references resolved).
func (s *Syncer) Update(cur, desired model.Model) ([]ovsdb.Operation, error) {
	t := s.tables[reflect.TypeOf(cur)]
	e := existing{uuid: reflect.ValueOf(cur).Elem().Field(t.uuid).String(), row: reflect.ValueOf(cur)}
	return s.update(t, &e, reflect.ValueOf(desired))
}

// Equal reports whether two column values (pointers to them) are equal by
// meaning, as plans compare them.
func Equal(a, b any) bool { return equal(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()) }

// EqualValues is Equal on the values themselves (not addressable, as a
// value read out of a map or an interface is).
func EqualValues(a, b any) bool { return equal(reflect.ValueOf(a), reflect.ValueOf(b)) }
