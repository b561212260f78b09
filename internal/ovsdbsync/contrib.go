package ovsdbsync

import (
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/ovsdb"

	ovsdbclient "github.com/ovn-udn/ovn-udn/internal/ovsdb"
)

// heldByReference fills held for tables without external_ids: the rows the
// owner's held rows refer to through columns that are not shared.
func (s *Syncer) heldByReference(held map[*table]map[string]existing) error {
	r, err := s.rows()
	if err != nil {
		return err
	}
	for _, t := range s.order {
		if t.extIDs >= 0 {
			continue
		}
		h := map[string]existing{}
		for _, from := range s.order {
			for _, col := range from.columns {
				if !col.ref || col.shared || col.refTable != t.name {
					continue
				}
				for _, e := range held[from] {
					for _, u := range refs(e.row.Elem().Field(col.index)) {
						if m := r.row(t, u); m != nil {
							h["ref:"+u] = existing{uuid: u, row: reflect.ValueOf(m)}
						}
					}
				}
			}
		}
		held[t] = h
	}
	return nil
}

// refs returns the UUIDs a reference column value holds.
func refs(f reflect.Value) []string {
	switch f.Kind() {
	case reflect.String:
		if f.String() != "" {
			return []string{f.String()}
		}
	case reflect.Ptr:
		if !f.IsNil() {
			return []string{f.Elem().String()}
		}
	case reflect.Slice:
		out := make([]string, f.Len())
		for i := range out {
			out[i] = f.Index(i).String()
		}
		return out
	case reflect.Map:
		var out []string
		for _, k := range f.MapKeys() {
			if v := f.MapIndex(k); v.Kind() == reflect.String {
				out = append(out, v.String())
			}
		}
		return out
	}
	return nil
}

// target is a contribution's target row: its table and column, and the row
// (nil when it does not exist).
type target struct {
	t   *table
	col column
	row *existing
}

// targets looks up every contribution's target once per plan.
func (s *Syncer) targets(contribs []Contribution) ([]target, error) {
	out := make([]target, len(contribs))
	for i, cb := range contribs {
		t, ok := s.tables[reflect.TypeOf(cb.Target)]
		if !ok {
			return nil, fmt.Errorf("ovsdbsync: contribution to %T, which is not a managed table", cb.Target)
		}
		col, ok := t.column(cb.Column)
		if !ok || !t.sharedIn(col, reflect.ValueOf(cb.Target)) {
			return nil, fmt.Errorf("ovsdbsync: contribution to %s.%s of %s, which is not shared", t.name, cb.Column, indexString(t, reflect.ValueOf(cb.Target)))
		}
		out[i] = target{t: t, col: col}
		if e, found := s.byIndex(t, reflect.ValueOf(cb.Target)); found {
			out[i].row = &e
		}
	}
	return out, nil
}

// viewer is a client whose own monitor keeps a view of some tables
// (ovsdbclient.ClientOptions.Views).
type viewer interface {
	View(tc *cache.TableCache) *ovsdbclient.View
}

// view returns the client's view of its cache tc, nil if it has none.
func (s *Syncer) view(tc *cache.TableCache) *ovsdbclient.View {
	if v, ok := s.client.(viewer); ok {
		return v.View(tc)
	}
	return nil
}

// unanchored returns the desired rows of non-root tables that no desired row
// refers to and no contribution with an existing target names.
func unanchored(rows []reflect.Value, tabs []*table, ids []string, contribs []Contribution, targets []target) map[int]bool {
	referenced := map[string]bool{}
	for i, v := range rows {
		for _, col := range tabs[i].columns {
			if col.ref {
				for _, id := range refs(v.Elem().Field(col.index)) {
					referenced[id] = true
				}
			}
		}
	}
	for i, cb := range contribs {
		if targets[i].row != nil {
			for _, id := range cb.Members {
				referenced[id] = true
			}
		}
	}
	out := map[int]bool{}
	for i := range rows {
		if !tabs[i].root && !referenced[ids[i]] {
			out[i] = true
		}
	}
	return out
}

// ownerOf returns the owner of the row u of table t ("" for a row without
// one); known is false when the cache does not hold the row.
func (s *Syncer) ownerOf(t *table, u string) (owner string, known bool) {
	rs, err := s.rows()
	if err != nil {
		return "", false
	}
	r := rs.row(t, u)
	if r == nil {
		return "", false
	}
	return reflect.ValueOf(r).Elem().Field(t.extIDs).Interface().(map[string]string)[OwnerKey], true
}

// keepContributed adds to desired's shared columns the current members that
// refer to rows of other owners (or to rows the cache does not show): the
// row's owner never withdraws them. own returns the UUIDs of the rows the
// owner holds (ownUUIDs), whose owner is known without reading the cache,
// which copies each row read: a network's transit switch has a port per
// node, all its own.
func (s *Syncer) keepContributed(t *table, e *existing, desired reflect.Value, owner string, own func() map[string]bool) {
	for _, col := range t.columns {
		if !t.sharedIn(col, e.row) {
			continue
		}
		ref := s.byName[col.refTable]
		cur := e.row.Elem().Field(col.index)
		want := desired.Elem().Field(col.index)
		for i := 0; i < cur.Len(); i++ {
			m := cur.Index(i)
			if own()[m.String()] {
				continue
			}
			// A member whose row the cache does not show (yet) is kept: it
			// may be another owner's, committed with its contribution and not
			// cached in full yet; a deleted row leaves weak references by
			// itself.
			if o, known := s.ownerOf(ref, m.String()); !known || (o != "" && o != owner) {
				want = reflect.Append(want, m)
			}
		}
		desired.Elem().Field(col.index).Set(want)
	}
}

// ownUUIDs is the set of UUIDs of the rows held by owner (with an owner
// key: the rows held through references have no owner to compare).
func ownUUIDs(held map[*table]map[string]existing) map[string]bool {
	n := 0
	for t, h := range held {
		if t.extIDs >= 0 {
			n += len(h)
		}
	}
	own := make(map[string]bool, n)
	for t, h := range held {
		if t.extIDs >= 0 {
			for _, e := range h {
				own[e.uuid] = true
			}
		}
	}
	return own
}

// memberKey is one shared column of one row.
type memberKey struct {
	t   *table
	col column
	row string // UUID
}

// contribute returns the mutations that make the owner's members of shared
// columns equal to its contributions: members it asks for are inserted,
// members referring to its rows that it no longer asks for are deleted.
func (s *Syncer) contribute(p *Plan, targets []target, held map[*table]map[string]existing, uuidOf map[string]string) ([]ovsdb.Operation, error) {
	want := map[memberKey]map[string]bool{}
	for i, cb := range p.contribs {
		tg := targets[i]
		if tg.row == nil {
			p.Missing = append(p.Missing, fmt.Sprintf("%s %s", tg.t.name, indexString(tg.t, reflect.ValueOf(cb.Target))))
			continue
		}
		k := memberKey{t: tg.t, col: tg.col, row: tg.row.uuid}
		if want[k] == nil {
			want[k] = map[string]bool{}
		}
		for _, id := range cb.Members {
			u, ok := uuidOf[id]
			if !ok {
				if !ovsdb.IsValidUUID(id) {
					return nil, fmt.Errorf("ovsdbsync: contribution to %s.%s names %q, which is not desired", tg.t.name, cb.Column, id)
				}
				u = id
			}
			want[k][u] = true
		}
	}
	have, err := s.contributed(p.Owner, held, targets)
	if err != nil {
		return nil, err
	}
	keys := make([]memberKey, 0, len(want)+len(have))
	for k := range want {
		keys = append(keys, k)
	}
	for k := range have {
		if want[k] == nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].t.rank != keys[j].t.rank {
			return keys[i].t.rank < keys[j].t.rank
		}
		if keys[i].col.index != keys[j].col.index {
			return keys[i].col.index < keys[j].col.index
		}
		return keys[i].row < keys[j].row
	})
	var ops []ovsdb.Operation
	for _, k := range keys {
		add, del := diffSets(want[k], have[k])
		if len(add)+len(del) == 0 {
			continue
		}
		ops = append(ops, memberMutation(k, del, add))
		p.Added += len(add)
		p.Removed += len(del)
	}
	return ops, nil
}

// memberMutation is the mutation of row k's shared column that deletes
// del and inserts add (UUIDs, or named UUIDs of rows inserted in the same
// transaction), as libovsdb's Mutate makes it, without its lookup of the
// row in the cache (a copy of a switch of 10,000 ports per pod).
func memberMutation(k memberKey, del, add []string) ovsdb.Operation {
	uuids := func(members []string) ovsdb.OvsSet {
		set := ovsdb.OvsSet{GoSet: make([]any, len(members))}
		for i, m := range members {
			set.GoSet[i] = ovsdb.UUID{GoUUID: m}
		}
		return set
	}
	op := ovsdb.Operation{Op: ovsdb.OperationMutate, Table: k.t.name,
		Where: []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: k.row})}}
	if len(del) > 0 {
		op.Mutations = append(op.Mutations, *ovsdb.NewMutation(k.col.name, ovsdb.MutateOperationDelete, uuids(del)))
	}
	if len(add) > 0 {
		op.Mutations = append(op.Mutations, *ovsdb.NewMutation(k.col.name, ovsdb.MutateOperationInsert, uuids(add)))
	}
	return op
}

// contributed returns the members of shared columns of other owners' rows
// that refer to rows the owner holds, by row. It looks only at the rows the
// owner may have contributed to: its targets now, and those it was found in
// or contributed to when last planned (contribMemory); an owner this Syncer
// has not planned yet is looked up in an index of every contributed member,
// built from the cache once. So a plan costs O(the owner's targets), not
// O(rows with shared columns), which a pod's port in a switch of thousands
// would otherwise pay on every plan.
func (s *Syncer) contributed(owner string, held map[*table]map[string]existing, targets []target) (map[memberKey]map[string]bool, error) {
	tc, err := s.cache()
	if err != nil {
		return nil, err
	}
	cands := map[memberKey]bool{}
	rowOf := map[string]reflect.Value{} // target rows targets() read already (no second clone)
	for _, tg := range targets {
		if tg.row != nil {
			cands[memberKey{t: tg.t, col: tg.col, row: tg.row.uuid}] = true
			rowOf[tg.row.uuid] = tg.row.row
		}
	}
	s.memory.mu.Lock()
	s.memory.describe(tc)
	if prev, known := s.memory.rows[owner]; known {
		for k := range prev {
			cands[k] = true
		}
	} else {
		if s.memory.byMember == nil {
			s.memory.byMember = s.indexContributions(tc)
		}
		for _, h := range held {
			for _, e := range h {
				for _, k := range s.memory.byMember[e.uuid] {
					cands[k] = true
				}
			}
		}
	}
	s.memory.mu.Unlock()

	out := map[memberKey]map[string]bool{}
	for k := range cands {
		if _, own := heldUUID(held[k.t], k.row); own {
			continue // the owner's own row: its columns are planned as rows
		}
		mine := map[string]bool{}
		for _, e := range held[s.byName[k.col.refTable]] {
			mine[e.uuid] = true
		}
		if len(mine) == 0 {
			continue
		}
		rv, ok := rowOf[k.row]
		if !ok {
			r := s.rowsOf(tc).row(k.t, k.row) // read only
			if r == nil {
				continue
			}
			rv = reflect.ValueOf(r)
		}
		for _, m := range membersIn(rv.Elem().Field(k.col.index), mine) {
			if out[k] == nil {
				out[k] = map[string]bool{}
			}
			out[k][m] = true
		}
	}

	// Remember where the owner's members are, or are about to be: rows found
	// holding some, and the targets of this plan. A row is forgotten once a
	// plan finds none of the owner's members in it; the owner stays known
	// (with no rows) until a committed plan leaves it holding nothing: the
	// index of contributions is as old as the cache's first plan, and would
	// not show members contributed since.
	keep := map[memberKey]bool{}
	for k := range out {
		keep[k] = true
	}
	for _, tg := range targets {
		if tg.row != nil {
			keep[memberKey{t: tg.t, col: tg.col, row: tg.row.uuid}] = true
		}
	}
	s.memory.mu.Lock()
	if s.memory.cache == tc { // not a cache replaced (a reconnection) meanwhile
		if s.memory.rows == nil {
			s.memory.rows = map[string]map[memberKey]bool{}
		}
		s.memory.rows[owner] = keep
	}
	s.memory.mu.Unlock()
	return out, nil
}

// heldUUID finds a held row by UUID.
func heldUUID(h map[string]existing, u string) (existing, bool) {
	for _, e := range h {
		if e.uuid == u {
			return e, true
		}
	}
	return existing{}, false
}

// contribMemory is where contributing owners' members are: per owner, the
// rows (table, shared column, UUID) that may hold some of its members.
type contribMemory struct {
	mu sync.Mutex
	// cache is the client's cache the memory describes: a reconnected
	// client has a new one, filled from a database that may have come back
	// different (rows gone, UUIDs new), so the memory starts again.
	cache *cache.TableCache
	rows  map[string]map[memberKey]bool
	// byMember indexes every member of a shared column that refers to a
	// row of another owner than the column's row, by the member's UUID:
	// built once from the cache, for owners not planned since (the rows
	// they contributed to before a restart).
	byMember map[string][]memberKey
}

// describe starts the memory again when tc is not the cache it describes.
// The caller holds mu.
func (m *contribMemory) describe(tc *cache.TableCache) {
	if m.cache != tc {
		m.cache, m.rows, m.byMember = tc, nil, nil
	}
}

// distrust drops what is remembered of an owner, and the index: its next
// plan looks for its members in an index built afresh. For a plan the
// database refused (a member left behind would make deleting its row a
// referential integrity violation, for ever, if the memory missed it).
func (m *contribMemory) distrust(owner string) {
	m.mu.Lock()
	delete(m.rows, owner)
	m.byMember = nil
	m.mu.Unlock()
}

// forget drops what is remembered of an owner that holds nothing.
func (m *contribMemory) forget(owner string) {
	m.mu.Lock()
	delete(m.rows, owner)
	m.mu.Unlock()
}

// remembered is how many owners are remembered with rows that may hold
// their members (owners known to hold none are not counted).
func (m *contribMemory) remembered() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, rows := range m.rows {
		if len(rows) > 0 {
			n++
		}
	}
	return n
}

// indexContributions scans every shared column once for members that
// refer to rows of another owner than the row holding them.
func (s *Syncer) indexContributions(tc *cache.TableCache) map[string][]memberKey {
	rs := s.rowsOf(tc)
	ownerOf := map[string]map[string]string{} // table -> UUID -> owner
	owners := func(t *table) map[string]string {
		if m, ok := ownerOf[t.name]; ok {
			return m
		}
		m := map[string]string{}
		if t.extIDs >= 0 {
			for u, r := range rs.all(t) {
				m[u] = reflect.ValueOf(r).Elem().Field(t.extIDs).Interface().(map[string]string)[OwnerKey]
			}
		}
		ownerOf[t.name] = m
		return m
	}
	out := map[string][]memberKey{}
	for _, t := range s.order {
		for _, col := range t.columns {
			if !col.shared {
				continue
			}
			rowOwners, memberOwners := owners(t), owners(s.byName[col.refTable])
			for u, r := range rs.all(t) {
				if !t.sharedIn(col, reflect.ValueOf(r)) {
					continue
				}
				f := reflect.ValueOf(r).Elem().Field(col.index)
				for i := 0; i < f.Len(); i++ {
					m := f.Index(i).String()
					if o, ok := memberOwners[m]; ok && o != "" && t.extIDs >= 0 && o == rowOwners[u] {
						continue // the row owner's own member
					}
					out[m] = append(out[m], memberKey{t: t, col: col, row: u})
				}
			}
		}
	}
	return out
}

// diffSets returns the members of want not in have, and of have not in want,
// sorted.
func diffSets(want, have map[string]bool) (add, del []string) {
	for m := range want {
		if !have[m] {
			add = append(add, m)
		}
	}
	for m := range have {
		if !want[m] {
			del = append(del, m)
		}
	}
	sort.Strings(add)
	sort.Strings(del)
	return add, del
}

// column returns t's column named name.
func (t *table) column(name string) (column, bool) {
	for _, c := range t.columns {
		if c.name == name {
			return c, true
		}
	}
	return column{}, false
}

// indexString describes a row by its index values (for messages).
func indexString(t *table, v reflect.Value) string {
	out := ""
	for _, i := range t.indexCols {
		if out != "" {
			out += ","
		}
		out += fmt.Sprintf("%s=%v", t.typ.Field(i).Tag.Get("ovsdb"), v.Elem().Field(i).Interface())
	}
	return out
}

// membersIn returns the members of set column f (a slice of UUIDs) that
// are in mine. A switch's ports may number ten thousand and an owner's rows
// one or two: for few, comparing strings beats hashing every member.
func membersIn(f reflect.Value, mine map[string]bool) []string {
	var out []string
	members, ok := f.Interface().([]string)
	if !ok || len(mine) > 8 {
		for i := 0; i < f.Len(); i++ {
			if m := f.Index(i).String(); mine[m] {
				out = append(out, m)
			}
		}
		return out
	}
	few := make([]string, 0, len(mine))
	for m := range mine {
		few = append(few, m)
	}
	for _, m := range members {
		for _, x := range few {
			if m == x {
				out = append(out, m)
				break
			}
		}
	}
	return out
}
