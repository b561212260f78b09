// Package ovsdbsync makes the rows an owner holds in an OVSDB database equal to
// a desired set, in one transaction: plan (diff desired rows against the
// rows the client last saw: its own monitor's view, or its libovsdb cache;
// rows.go), then apply (transact, and wait until the client shows the
// result, so the next plan never works from stale rows).
//
// Desired rows are libovsdb models whose UUID field holds a stable ID chosen by
// the caller (e.g. "lsp:stor-net_node1"), and whose reference columns hold IDs
// of other desired rows. Every row written carries two external_ids: the owner
// key (OwnerKey) and its ID (IDKey). Existing rows are found by owner through a
// client index (see Indexes), or, for tables with unique schema indexes such as
// port names, by those indexes (a row left by an earlier owner is adopted).
// Rows the owner holds that are no longer desired are deleted.
//
// Tables without external_ids (Load_Balancer_Group) are held through
// references: such a row belongs to the owner whose rows refer to it (a
// network's switches and routers hold its load balancer groups), and is
// matched by its unique schema index.
//
// Owners may contribute members to a set column of a row another owner holds
// (a service's load balancer in a network's Load_Balancer_Group, an ACL in a
// port group): see Contribution and Share. The row's owner never removes
// members that refer to another owner's rows, and each contributor adds and
// removes only members that refer to its own rows, so the two never undo
// each other.
package ovsdbsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

// External IDs ovsdbsync writes on every row.
const (
	// OwnerKey names the owner (reconcile key) a row belongs to.
	OwnerKey = "k8s.ovn.org/owner"
	// IDKey is the row's stable identity within its owner.
	IDKey = "k8s.ovn.org/id"
)

// ignored are columns other writers own (northd and ovn-controller write them
// back into the Northbound): never compared, never written.
var ignored = map[string]bool{"_uuid": true, "up": true, "dynamic_addresses": true, "status": true, "tag": true}

// OthersColumns are the columns (of any table) that other writers own, which
// a Syncer never reads: a client monitoring for a Syncer need not monitor
// them (ovsdb.ClientOptions.Unmonitored), and is then not sent the changes
// they alone make (northd setting a port up, ovn-controller a BFD
// session's status).
func OthersColumns() []string {
	var out []string
	for c := range ignored {
		if c != "_uuid" {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// nameIndexed are tables whose "name" column has no unique schema index but
// must still be unique for operators and tools (ovn-nbctl, ovn-trace address
// datapaths by name): a row of the same name is adopted, never duplicated.
var nameIndexed = map[string]bool{"Logical_Switch": true, "Logical_Router": true, "Load_Balancer": true}

// withoutExternalIDs are tables the Northbound schema gives no external_ids:
// their rows are held through references (see the package doc).
var withoutExternalIDs = map[string]bool{"Load_Balancer_Group": true}

// Indexes returns the client indexes the Syncer needs for the given tables,
// to be set on the client's database model before connecting
// (ClientDBModel.SetIndexes): the owner key on every table, and the name on
// tables whose names the schema does not index.
func Indexes(tables ...string) map[string][]model.ClientIndex {
	out := map[string][]model.ClientIndex{}
	for _, t := range tables {
		if !withoutExternalIDs[t] {
			out[t] = []model.ClientIndex{{Columns: []model.ColumnKey{{Column: "external_ids", Key: OwnerKey}}}}
		}
		if nameIndexed[t] {
			out[t] = append(out[t], model.ClientIndex{Columns: []model.ColumnKey{{Column: "name"}}})
		}
	}
	return out
}

// OwnerIndex names the client index on external_ids:OwnerKey (Indexes)
// in libovsdb's RowCache.Index.
const OwnerIndex = "external_ids|" + OwnerKey

func hasOwnerIndex(idx []model.ClientIndex) bool {
	for _, i := range idx {
		if len(i.Columns) == 1 && i.Columns[0].Column == "external_ids" && i.Columns[0].Key == OwnerKey {
			return true
		}
	}
	return false
}

// column describes one struct field of a model.
type column struct {
	name     string
	index    int
	ref      bool   // holds UUIDs of other rows
	refTable string // the table those rows are in
	shared   bool   // other owners contribute members (Share)
	// schema is the column's schema (nil for a field the schema lacks).
	schema *ovsdb.ColumnSchema
	// strings: a set or map of plain strings, encoded straight from the
	// field (as insertedColumn.strings).
	strings bool
}

// value encodes v, a value of the column's field, as an operation carries
// it: as libovsdb's NativeToOvs does, and strings without boxing them.
func (c column) value(v reflect.Value) (any, error) {
	if c.strings {
		switch v := v.Interface().(type) {
		case []string:
			return wire.StringSet(v), nil
		case map[string]string:
			return wire.StringMap(v), nil
		}
	}
	return ovsdb.NativeToOvs(c.schema, v.Interface())
}

// table describes one model type.
type table struct {
	name    string
	typ     reflect.Type // the struct type
	rank    int          // insertion order: lower first
	uuid    int          // field index of _uuid
	extIDs  int          // field index of external_ids; -1: held through references
	columns []column
	// indexCols are the columns rows are adopted by: the schema's unique
	// indexes, and the name for nameIndexed tables.
	indexCols []int
	// root: rows live without references (non-root rows are garbage
	// collected when nothing refers to them).
	root bool
	// sharedIf restricts a shared column (by field index) to the rows it
	// accepts (ShareRows); absent: every row.
	sharedIf map[int]func(model.Model) bool
	// inserted are the columns an insert writes (every column of the
	// schema the model has, but _uuid), with their schemas.
	inserted []insertedColumn
}

// insertedColumn is a column an insert writes: field index, name, schema.
type insertedColumn struct {
	index  int
	name   string
	schema *ovsdb.ColumnSchema
	// strings: a set or map of strings (not UUIDs) encoded straight from
	// the field (wire.StringSet, wire.StringMap), not through NativeToOvs.
	strings bool
}

// stringsColumn reports whether a column of schema cs held in a field of
// type ft is a set or a map of plain strings.
func stringsColumn(cs *ovsdb.ColumnSchema, ft reflect.Type) bool {
	if cs.TypeObj == nil || cs.TypeObj.Key == nil || cs.TypeObj.Key.Type != ovsdb.TypeString {
		return false
	}
	switch {
	case cs.Type == ovsdb.TypeSet && ft == reflect.TypeFor[[]string]():
		return true
	case cs.Type == ovsdb.TypeMap && ft == reflect.TypeFor[map[string]string]():
		return cs.TypeObj.Value != nil && cs.TypeObj.Value.Type == ovsdb.TypeString
	}
	return false
}

// insert is the insert operation of a desired row, as libovsdb's Create
// makes it (columns at their default value left out; a named or real
// UUID from the _uuid field), without looking columns up by name.
func (t *table) insert(m model.Model) (ovsdb.Operation, error) {
	v := reflect.ValueOf(m).Elem()
	row := make(ovsdb.Row, min(len(t.inserted), 8)) // most rows set a few columns
	for _, c := range t.inserted {
		native := v.Field(c.index).Interface()
		if c.strings {
			switch native := native.(type) {
			case []string:
				if len(native) > 0 {
					row[c.name] = wire.StringSet(native)
				}
			case map[string]string:
				if len(native) > 0 {
					row[c.name] = wire.StringMap(native)
				}
			}
			continue
		}
		if ovsdb.IsDefaultValue(c.schema, native) {
			continue
		}
		ovs, err := ovsdb.NativeToOvs(c.schema, native)
		if err != nil {
			return ovsdb.Operation{}, fmt.Errorf("table %s, column %s: %w", t.name, c.name, err)
		}
		row[c.name] = ovs
	}
	op := ovsdb.Operation{Op: ovsdb.OperationInsert, Table: t.name, Row: row}
	switch uuid := v.Field(t.uuid).String(); {
	case ovsdb.IsNamedUUID(uuid):
		op.UUIDName = uuid
	case ovsdb.IsValidUUID(uuid):
		op.UUID = uuid
	}
	return op, nil
}

// sharedIn reports whether column col of row (a model pointer) takes
// contributions.
func (t *table) sharedIn(col column, row reflect.Value) bool {
	if !col.shared {
		return false
	}
	f := t.sharedIf[col.index]
	return f == nil || f(row.Interface().(model.Model))
}

// Syncer plans and applies owner-scoped syncs against one database.
type Syncer struct {
	client client.Client
	// writer commits transactions; it may be a separate connection without a
	// monitor (see WithWriter).
	writer client.Client
	tables map[reflect.Type]*table
	byName map[string]*table
	order  []*table

	// WaitTimeout bounds how long Apply waits for the cache to show a
	// transaction's result (default 10 s).
	WaitTimeout time.Duration

	transactions atomic.Int64
	names        atomic.Int64 // named-UUID sequence, unique across plans
	observe      func(Applied)
	// nonContributing are owner key prefixes whose owners never contribute
	// (NeverContributes).
	nonContributing []string
	// memory is where contributing owners' members are (contributed).
	memory contribMemory
}

// NeverContributes declares that owners whose key starts with prefix never
// contribute members to other owners' rows (a zone's networks own their
// switches and routers and add to nobody's): their plans skip looking for
// contributions to withdraw, a scan of every row with a shared column that
// otherwise makes each plan cost O(rows in the zone). Contributions given for
// such an owner are an error. Declare before use.
func (s *Syncer) NeverContributes(prefix string) {
	s.nonContributing = append(s.nonContributing, prefix)
}

// contributes reports whether owner may contribute (NeverContributes).
func (s *Syncer) contributes(owner string) bool {
	for _, p := range s.nonContributing {
		if strings.HasPrefix(owner, p) {
			return false
		}
	}
	return true
}

// Applied describes one Apply of a plan that changed something: for
// observers (metrics), see Observe.
type Applied struct {
	Plan *Plan
	// Duration is from the transaction's start until the cache showed its
	// result (or the error).
	Duration time.Duration
	Err      error
}

// Observe calls f after every Apply of a non-empty plan (set it before
// use; f must be quick).
func (s *Syncer) Observe(f func(Applied)) { s.observe = f }

// New returns a Syncer for the given tables, listed so that referenced tables
// come before the tables referencing them (that is the insertion order).
func New(c client.Client, tables ...model.Model) (*Syncer, error) {
	s := &Syncer{client: c, writer: c, tables: map[reflect.Type]*table{}, byName: map[string]*table{}, WaitTimeout: 10 * time.Second}
	dbModel := c.Cache().DatabaseModel()
	schema := c.Schema()
	for rank, m := range tables {
		typ := reflect.TypeOf(m)
		name := dbModel.FindTable(typ)
		if name == "" {
			return nil, fmt.Errorf("ovsdbsync: %s is not a model of database %s", typ, schema.Name)
		}
		ts := schema.Table(name)
		t := &table{name: name, typ: typ.Elem(), rank: rank, uuid: -1, extIDs: -1, root: ts.IsRoot}
		adoptBy := map[string]bool{}
		for _, idx := range ts.Indexes {
			for _, c := range idx {
				adoptBy[c] = true
			}
		}
		if nameIndexed[name] {
			adoptBy["name"] = true
		}
		for i := 0; i < t.typ.NumField(); i++ {
			col := t.typ.Field(i).Tag.Get("ovsdb")
			if cs, ok := ts.Columns[col]; ok && col != "_uuid" {
				t.inserted = append(t.inserted, insertedColumn{index: i, name: col, schema: cs, strings: stringsColumn(cs, t.typ.Field(i).Type)})
			}
			if adoptBy[col] {
				t.indexCols = append(t.indexCols, i)
			}
			switch {
			case col == "_uuid":
				t.uuid = i
			case col == "external_ids":
				t.extIDs = i
				cs := ts.Columns[col]
				t.columns = append(t.columns, column{name: col, index: i, schema: cs, strings: cs != nil && stringsColumn(cs, t.typ.Field(i).Type)})
			case col != "" && !ignored[col]:
				cs, ok := ts.Columns[col]
				var refTable string
				if ok {
					refTable = refTableOf(cs)
				}
				t.columns = append(t.columns, column{name: col, index: i, ref: refTable != "", refTable: refTable,
					schema: cs, strings: ok && stringsColumn(cs, t.typ.Field(i).Type)})
			}
		}
		if t.uuid < 0 {
			return nil, fmt.Errorf("ovsdbsync: table %s needs a _uuid column", name)
		}
		if t.extIDs < 0 && len(ts.Indexes) == 0 {
			return nil, fmt.Errorf("ovsdbsync: table %s has neither external_ids nor a unique index", name)
		}
		if t.extIDs >= 0 && !hasOwnerIndex(dbModel.Client().Indexes(name)) {
			return nil, fmt.Errorf("ovsdbsync: table %s has no client index on external_ids:%s (see Indexes)", name, OwnerKey)
		}
		s.tables[typ] = t
		s.byName[name] = t
		s.order = append(s.order, t)
	}
	return s, nil
}

// refTableOf returns the table a reference column refers to ("" for other
// columns). A map column counts when its values are references.
func refTableOf(c *ovsdb.ColumnSchema) string {
	if c.TypeObj == nil {
		return ""
	}
	for _, b := range []*ovsdb.BaseType{c.TypeObj.Value, c.TypeObj.Key} {
		if b == nil || b.Type != ovsdb.TypeUUID {
			continue
		}
		if ref, err := b.RefTable(); err == nil && ref != "" {
			return ref
		}
	}
	return ""
}

// Share declares a set column whose members other owners contribute
// (Contribution): the column of table (a model, e.g.
// &nbdb.LoadBalancerGroup{}) named column (its OVSDB name) must be a set of
// references to a managed table with external_ids.
func (s *Syncer) Share(m model.Model, column string) error {
	return s.ShareRows(m, column, nil)
}

// ShareRows is Share for the rows rows accepts only (it is given a row of
// the table, or a contribution's Target with only its index set): in other
// rows the column is the row owner's alone, whoever owns its members (a
// NetworkPolicy's port group lists pods' ports it does not own and must
// remove them). nil accepts every row.
func (s *Syncer) ShareRows(m model.Model, column string, rows func(model.Model) bool) error {
	t, ok := s.tables[reflect.TypeOf(m)]
	if !ok {
		return fmt.Errorf("ovsdbsync: %T is not a managed table", m)
	}
	for i, c := range t.columns {
		if c.name != column {
			continue
		}
		ref, ok := s.byName[c.refTable]
		if !c.ref || t.typ.Field(c.index).Type.Kind() != reflect.Slice || !ok || ref.extIDs < 0 {
			return fmt.Errorf("ovsdbsync: %s.%s is not a set of references to a table with owners", t.name, column)
		}
		t.columns[i].shared = true
		if rows != nil {
			if t.sharedIf == nil {
				t.sharedIf = map[int]func(model.Model) bool{}
			}
			t.sharedIf[c.index] = rows
		}
		return nil
	}
	return fmt.Errorf("ovsdbsync: table %s has no column %s", t.name, column)
}

// WithWriter makes the Syncer commit through w, a second connection to the
// same database without a monitor. libovsdb decodes a monitor update in the
// connection's read loop before it reads the reply of the transaction that
// caused it, so writing on the monitoring connection serialises the server's
// work behind the client's decoding; a separate writer lets them overlap
// (measured: docs/performance.md).
func (s *Syncer) WithWriter(w client.Client) *Syncer {
	s.writer = w
	return s
}

// Transactions is how many transactions this Syncer has committed.
func (s *Syncer) Transactions() int64 { return s.transactions.Load() }

// Contribution asks for members in a set column of a row another owner
// holds: a service's load balancers in a network's Load_Balancer_Group. The
// column must be declared with Share. Members are IDs of the contributor's
// desired rows (or UUIDs of its rows); a member the contributor held before
// and no longer asks for is removed. The contributor removes only members
// that refer to its own rows, and the row's owner keeps them when it plans.
type Contribution struct {
	// Target is a model of the row's table with the row's unique index set
	// (e.g. &nbdb.LoadBalancerGroup{Name: "clusterLBGroup"}).
	Target model.Model
	// Column is the shared column's OVSDB name.
	Column string
	// Members are IDs of desired rows (or UUIDs).
	Members []string
}

// Plan is the set of operations that makes an owner's rows equal to desired.
type Plan struct {
	Owner    string
	Ops      []ovsdb.Operation
	Inserted int
	Updated  int
	Deleted  int
	// Added and Removed count the members contributions add to and remove
	// from other owners' rows.
	Added, Removed int
	// Missing lists contribution targets that do not exist (yet): their
	// members are not added; plan again when they exist.
	Missing  []string
	desired  []model.Model
	contribs []Contribution
	// contribOps are the indexes in Ops of the contributions' mutations.
	contribOps []int
	// part is the part of the owner's rows planned (PlanPart), nil for all.
	part *Part
	// deleted are the UUIDs the plan deletes, by table.
	deleted map[string][]string
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Ops) == 0 }

func (p *Plan) String() string {
	owner := p.Owner
	if p.part != nil {
		owner += " (" + p.part.String() + ")"
	}
	out := fmt.Sprintf("owner %s: %d inserted, %d updated, %d deleted", owner, p.Inserted, p.Updated, p.Deleted)
	if p.Added+p.Removed > 0 {
		out += fmt.Sprintf(", %d members contributed, %d withdrawn", p.Added, p.Removed)
	}
	return out
}

// existing is a row the owner holds (or may adopt).
type existing struct {
	uuid string
	row  reflect.Value // pointer to struct
}

// Plan diffs desired rows and contributions against the cache. desired is
// not modified.
func (s *Syncer) Plan(owner string, desired []model.Model, contribs ...Contribution) (*Plan, error) {
	return s.plan(owner, nil, desired, contribs)
}

// plan is Plan, or PlanPart when part is not nil (contribs are then the
// part's parents).
func (s *Syncer) plan(owner string, part *Part, desired []model.Model, contribs []Contribution) (*Plan, error) {
	p := &Plan{Owner: owner, desired: desired, contribs: contribs, part: part}
	rows := make([]reflect.Value, len(desired)) // clones, rewritten below
	tabs := make([]*table, len(desired))
	ids := make([]string, len(desired))
	byID := make(map[string]int, len(desired))
	for i, m := range desired {
		t, ok := s.tables[reflect.TypeOf(m)]
		if !ok {
			return nil, fmt.Errorf("ovsdbsync: %T is not a managed table", m)
		}
		// A shallow copy: the plan replaces the external IDs and the
		// references with new values and never writes into the desired
		// row's maps and slices, which its operations share (read-only).
		v := reflect.New(t.typ)
		v.Elem().Set(reflect.ValueOf(m).Elem())
		id := v.Elem().Field(t.uuid).String()
		if id == "" {
			return nil, fmt.Errorf("ovsdbsync: a desired %s row has no ID", t.name)
		}
		if _, dup := byID[id]; dup {
			return nil, fmt.Errorf("ovsdbsync: ID %q is desired twice", id)
		}
		if part != nil && !part.has(t, v) {
			return nil, fmt.Errorf("ovsdbsync: desired %s row %s is not in part %s", t.name, id, part)
		}
		if t.extIDs >= 0 {
			cur := v.Elem().Field(t.extIDs).Interface().(map[string]string)
			ext := make(map[string]string, len(cur)+2)
			for k, val := range cur {
				ext[k] = val
			}
			ext[OwnerKey], ext[IDKey] = owner, id
			v.Elem().Field(t.extIDs).Set(reflect.ValueOf(ext))
		}
		rows[i], tabs[i], ids[i], byID[id] = v, t, id, i
	}

	// Rows the owner holds now, by table and ID.
	// A part's: those of its rows, and the rows outside it with the ID of
	// a desired row of their table (collide: UUID by ID).
	var held map[*table]map[string]existing
	var err error
	collide := map[string]string{}
	if part != nil {
		held, err = s.heldWhere(owner, func(t *table, id string, e existing) bool {
			if part.has(t, e.row) {
				return true
			}
			if i, desired := byID[id]; desired && tabs[i] == t {
				collide[id] = e.uuid
			}
			return false
		})
	} else if held, err = s.held(owner); err == nil {
		err = s.heldByReference(held)
	}
	if err != nil {
		return nil, err
	}

	// Match desired rows to existing ones and decide every row's UUID.
	uuidOf := make(map[string]string, len(desired))
	match := make([]*existing, len(desired))
	adopted := map[string]bool{}
	for i := range rows {
		t := tabs[i]
		if e, ok := held[t][ids[i]]; ok {
			match[i] = &e
		} else if len(t.indexCols) > 0 {
			if e, ok := s.byIndex(t, rows[i]); ok {
				match[i] = &e
				adopted[e.uuid] = true
			}
		}
		if u, ok := collide[ids[i]]; ok && (match[i] == nil || match[i].uuid != u) {
			return nil, fmt.Errorf("ovsdbsync: part %s of %s: desired %s row %s is held outside the part: %w", part, owner, t.name, ids[i], ErrOutsidePart)
		}
		if match[i] != nil {
			uuidOf[ids[i]] = match[i].uuid
		} else {
			uuidOf[ids[i]] = "r" + strconv.FormatInt(s.names.Add(1), 10)
		}
	}

	// A non-root row nothing refers to would be garbage collected at commit
	// (a contributed ACL whose port group does not exist yet): it is not
	// written until it is anchored.
	targets, err := s.targets(contribs)
	if err != nil {
		return nil, err
	}
	unanchored := unanchored(rows, tabs, ids, contribs, targets)

	// Resolve references from IDs to UUIDs.
	for i, v := range rows {
		if err := resolve(tabs[i], v.Elem(), uuidOf); err != nil {
			return nil, fmt.Errorf("ovsdbsync: row %s: %w", ids[i], err)
		}
		v.Elem().Field(tabs[i].uuid).SetString(uuidOf[ids[i]])
	}

	var updates, deletes []ovsdb.Operation
	inserts := make([]ovsdb.Operation, 0, len(rows)) // most rows of a new owner are inserted
	var ownSet map[string]bool
	own := func() map[string]bool { // the held rows' UUIDs, when a shared column needs them
		if ownSet == nil {
			ownSet = ownUUIDs(held)
		}
		return ownSet
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return tabs[order[a]].rank < tabs[order[b]].rank })
	for _, i := range order {
		if unanchored[i] {
			continue
		}
		m := rows[i].Interface().(model.Model)
		if match[i] == nil {
			op, err := tabs[i].insert(m)
			if err != nil {
				return nil, fmt.Errorf("ovsdbsync: insert %s: %w", ids[i], err)
			}
			inserts = append(inserts, op)
			p.Inserted++
			continue
		}
		s.keepContributed(tabs[i], match[i], rows[i], owner, own)
		ops, err := s.update(tabs[i], match[i], rows[i])
		if err != nil {
			return nil, fmt.Errorf("ovsdbsync: update %s: %w", ids[i], err)
		}
		if len(ops) > 0 {
			updates = append(updates, ops...)
			p.Updated++
		}
	}
	var contributed []ovsdb.Operation
	switch {
	case part != nil:
		if contributed, err = s.memberships(p, targets, held, uuidOf); err != nil {
			return nil, err
		}
	case s.contributes(owner):
		if contributed, err = s.contribute(p, targets, held, uuidOf); err != nil {
			return nil, err
		}
	case len(p.contribs) > 0:
		return nil, fmt.Errorf("ovsdbsync: owner %s is declared never to contribute, and contributes to %d rows", owner, len(p.contribs))
	}
	for i := range contributed {
		p.contribOps = append(p.contribOps, len(inserts)+len(updates)+i)
	}
	updates = append(updates, contributed...)
	// Stale rows: held, not desired. Parents first (reverse rank), so a child
	// is unreferenced by the time its delete is checked at commit.
	for k := len(s.order) - 1; k >= 0; k-- {
		t := s.order[k]
		var stale []string
		for id, e := range held[t] {
			if i, ok := byID[id]; ok && tabs[i] == t {
				continue
			}
			if adopted[e.uuid] {
				continue
			}
			stale = append(stale, e.uuid)
		}
		sort.Strings(stale)
		for _, u := range stale {
			deletes = append(deletes, ovsdb.Operation{Op: ovsdb.OperationDelete, Table: t.name,
				Where: []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: u})}})
			p.Deleted++
			if p.deleted == nil {
				p.deleted = map[string][]string{}
			}
			p.deleted[t.name] = append(p.deleted[t.name], u)
		}
	}
	p.Ops = append(append(inserts, updates...), deletes...)
	return p, nil
}

// noOwner is an owner key value no owner has (byIndexInCache).
const noOwner = "\x00"

// sameIndex reports whether rows a and b (model pointers) agree on every
// index column of t.
func sameIndex(t *table, a, b reflect.Value) bool {
	for _, i := range t.indexCols {
		if !reflect.DeepEqual(a.Elem().Field(i).Interface(), b.Elem().Field(i).Interface()) {
			return false
		}
	}
	return true
}

// resolve rewrites the reference columns of row from IDs to UUIDs. A value
// that is already a real UUID is kept (a reference to a row outside the
// owner's set).
func resolve(t *table, row reflect.Value, uuidOf map[string]string) error {
	for _, c := range t.columns {
		if !c.ref {
			continue
		}
		f := row.Field(c.index)
		mapOne := func(id string) (string, error) {
			if u, ok := uuidOf[id]; ok {
				return u, nil
			}
			if ovsdb.IsValidUUID(id) {
				return id, nil
			}
			return "", fmt.Errorf("column %s refers to %q, which is not desired", c.name, id)
		}
		switch f.Kind() {
		case reflect.String:
			if f.String() == "" {
				continue
			}
			u, err := mapOne(f.String())
			if err != nil {
				return err
			}
			f.SetString(u)
		case reflect.Ptr:
			if f.IsNil() {
				continue
			}
			u, err := mapOne(f.Elem().String())
			if err != nil {
				return err
			}
			f.Set(reflect.ValueOf(&u))
		case reflect.Slice:
			out := make([]string, f.Len())
			for j := 0; j < f.Len(); j++ {
				u, err := mapOne(f.Index(j).String())
				if err != nil {
					return err
				}
				out[j] = u
			}
			f.Set(reflect.ValueOf(out))
		case reflect.Map:
			if f.Type().Elem().Kind() != reflect.String {
				continue
			}
			out := reflect.MakeMap(f.Type())
			for _, k := range f.MapKeys() {
				u, err := mapOne(f.MapIndex(k).String())
				if err != nil {
					return err
				}
				out.SetMapIndex(k, reflect.ValueOf(u))
			}
			f.Set(out)
		}
	}
	return nil
}

// update returns the operations that make existing row e equal to desired:
// set-valued columns are mutated by their difference (so a port added to a
// switch with a thousand ports costs one element), other columns updated.
// The operations are those libovsdb's Update and Mutate make (an update,
// then a mutate, each where _uuid is e's), built without reading the row
// from libovsdb's cache, which copies it (TestUpdateLikeLibovsdb).
func (s *Syncer) update(t *table, e *existing, desired reflect.Value) ([]ovsdb.Operation, error) {
	cur := e.row.Elem()
	want := desired.Elem()
	var row ovsdb.Row
	var mutations []ovsdb.Mutation
	for _, c := range t.columns {
		a, b := cur.Field(c.index), want.Field(c.index)
		if equal(a, b) {
			continue
		}
		if c.schema == nil {
			return nil, fmt.Errorf("table %s has no column %s", t.name, c.name)
		}
		if !c.schema.Mutable() {
			return nil, fmt.Errorf("column %s of table %s is not mutable", c.name, t.name)
		}
		if a.Kind() == reflect.Slice {
			add, del := setDiff(b, a)
			for _, m := range []struct {
				op     ovsdb.Mutator
				values reflect.Value
			}{{ovsdb.MutateOperationDelete, del}, {ovsdb.MutateOperationInsert, add}} {
				if m.values.Len() == 0 {
					continue
				}
				v, err := c.value(m.values)
				if err != nil {
					return nil, fmt.Errorf("table %s, column %s: %w", t.name, c.name, err)
				}
				mutations = append(mutations, ovsdb.Mutation{Column: c.name, Mutator: m.op, Value: v})
			}
			continue
		}
		v, err := c.value(b)
		if err != nil {
			return nil, fmt.Errorf("table %s, column %s: %w", t.name, c.name, err)
		}
		if row == nil {
			row = ovsdb.Row{}
		}
		row[c.name] = v
	}
	where := []ovsdb.Condition{ovsdb.NewCondition("_uuid", ovsdb.ConditionEqual, ovsdb.UUID{GoUUID: e.uuid})}
	var ops []ovsdb.Operation
	if row != nil {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationUpdate, Table: t.name, Row: row, Where: where})
	}
	if mutations != nil {
		ops = append(ops, ovsdb.Operation{Op: ovsdb.OperationMutate, Table: t.name, Mutations: mutations, Where: where})
	}
	return ops, nil
}

// equal compares two column values by meaning: sets regardless of order, nil
// and empty alike. It runs for every column of every row a plan keeps, so
// the common kinds are compared without boxing them.
func equal(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return a.Int() == b.Int()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		if a.Len() == 0 {
			return true
		}
		if as, ok := stringsOf(a); ok {
			if bs, ok := stringsOf(b); ok {
				return sameStrings(as, bs)
			}
		}
		add, del := setDiff(a, b)
		return add.Len() == 0 && del.Len() == 0
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		if am, ok := stringMapOf(a); ok {
			if bm, ok := stringMapOf(b); ok {
				return maps.Equal(am, bm)
			}
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !reflect.DeepEqual(a.MapIndex(k).Interface(), bv.Interface()) {
				return false
			}
		}
		return true
	case reflect.Ptr:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equal(a.Elem(), b.Elem())
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// stringsOf returns v as a []string when it is one and addressable (a
// field of a model reached through its pointer): read through its address,
// without boxing a copy of the slice header.
func stringsOf(v reflect.Value) ([]string, bool) {
	if !v.CanAddr() {
		return nil, false
	}
	p, ok := v.Addr().Interface().(*[]string)
	if !ok {
		return nil, false
	}
	return *p, true
}

// stringMapOf is stringsOf for a map[string]string.
func stringMapOf(v reflect.Value) (map[string]string, bool) {
	if !v.CanAddr() {
		return nil, false
	}
	p, ok := v.Addr().Interface().(*map[string]string)
	if !ok {
		return nil, false
	}
	return *p, true
}

// sameStrings reports whether a and b, of one length, hold the same set of
// strings: in the same order (the common case), else each in the other.
func sameStrings(a, b []string) bool {
	if slices.Equal(a, b) {
		return true
	}
	if len(a) <= 16 {
		for _, x := range a {
			if !slices.Contains(b, x) {
				return false
			}
		}
		for _, x := range b {
			if !slices.Contains(a, x) {
				return false
			}
		}
		return true
	}
	inA := make(map[string]struct{}, len(a))
	for _, x := range a {
		inA[x] = struct{}{}
	}
	inB := make(map[string]struct{}, len(b))
	for _, x := range b {
		if _, ok := inA[x]; !ok {
			return false
		}
		inB[x] = struct{}{}
	}
	for _, x := range a {
		if _, ok := inB[x]; !ok {
			return false
		}
	}
	return true
}

// setDiff returns the elements of a not in b, and of b not in a.
func setDiff(a, b reflect.Value) (onlyA, onlyB reflect.Value) {
	inA, inB := map[any]bool{}, map[any]bool{}
	for i := 0; i < a.Len(); i++ {
		inA[a.Index(i).Interface()] = true
	}
	for i := 0; i < b.Len(); i++ {
		inB[b.Index(i).Interface()] = true
	}
	onlyA, onlyB = reflect.MakeSlice(a.Type(), 0, 0), reflect.MakeSlice(b.Type(), 0, 0)
	for i := 0; i < a.Len(); i++ {
		if !inB[a.Index(i).Interface()] {
			onlyA = reflect.Append(onlyA, a.Index(i))
		}
	}
	for i := 0; i < b.Len(); i++ {
		if !inA[b.Index(i).Interface()] {
			onlyB = reflect.Append(onlyB, b.Index(i))
		}
	}
	return onlyA, onlyB
}

// ErrNotConnected is returned while the client has no cache (it is
// disconnected and has not re-established its monitor yet).
var ErrNotConnected = errors.New("not connected to the database")

// cache returns the client's current cache (it is replaced on reconnection).
func (s *Syncer) cache() (*cache.TableCache, error) {
	c := s.client.Cache()
	if c == nil {
		return nil, ErrNotConnected
	}
	return c, nil
}

// ErrTargetGone is returned when a contribution's target row was deleted
// between plan and commit: plan again.
var ErrTargetGone = errors.New("a contribution's target row was deleted before the commit")

// ErrNotConverged is returned when the cache does not show a committed
// transaction's result in time.
var ErrNotConverged = errors.New("the cache did not show the transaction's result in time")

// Apply commits a plan in one transaction (none when it is empty) and waits
// until the cache shows the result.
func (s *Syncer) Apply(ctx context.Context, p *Plan) (err error) {
	if p.part == nil && len(p.desired) == 0 && len(p.contribs) == 0 {
		// The owner is going: once its plan is committed it holds nothing,
		// and where it contributed need not be remembered.
		defer func() {
			if err == nil {
				s.memory.forget(p.Owner)
			}
		}()
	}
	if p.Empty() {
		return nil
	}
	if s.observe != nil {
		start := time.Now()
		defer func() { s.observe(Applied{Plan: p, Duration: time.Since(start), Err: err}) }()
	}
	res, err := s.writer.Transact(ctx, p.Ops...)
	if err != nil {
		return fmt.Errorf("ovsdbsync: %s: transact: %w", p, err)
	}
	if _, err := ovsdb.CheckOperationResults(res, p.Ops); err != nil {
		var refs *ovsdb.ReferentialIntegrityViolation
		if errors.As(err, &refs) {
			// A row it deletes is still referred to: perhaps by a member
			// it contributed that the memory lost; look afresh next time.
			s.memory.distrust(p.Owner)
		}
		return fmt.Errorf("ovsdbsync: %s: %w", p, err)
	}
	s.transactions.Add(1)
	targetGone := false
	for _, i := range p.contribOps {
		if i < len(res) && res[i].Count == 0 {
			// The target row went between plan and commit (its owner
			// deleted it): the owner's rows are written, the contribution
			// is not; planning again reports the target missing, once the
			// cache shows the rows written (below), or a plan that follows
			// at once would not know it holds them.
			targetGone = true
		}
	}
	defer func() {
		if targetGone && err == nil {
			err = fmt.Errorf("ovsdbsync: %s: %w", p, ErrTargetGone)
		}
	}()
	deadline := time.Now().Add(s.WaitTimeout)
	// Wait until the cache shows the inserted rows and not the deleted ones.
	// A transaction's changes reach the cache in one monitor notification,
	// so that is enough when it inserted or deleted anything; an update-only
	// transaction is confirmed by planning again.
	for !s.reflected(p, res, targetGone) {
		if time.Now().After(deadline) {
			return fmt.Errorf("ovsdbsync: %s: %w", p, ErrNotConverged)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	if p.Inserted > 0 || p.Deleted > 0 || targetGone {
		return nil
	}
	for {
		again, err := s.plan(p.Owner, p.part, p.desired, p.contribs)
		if err != nil {
			return err
		}
		if again.Empty() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ovsdbsync: %s: %w (still to do: %s)", p, ErrNotConverged, again)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// reflected reports whether the cache shows a committed plan's inserts and
// deletes.
//
// rootsOnly leaves out inserts into non-root tables: when a contribution's
// target went before the commit, the rows it was to anchor (a pod's port,
// a service's ACL) were garbage collected at once and never show.
func (s *Syncer) reflected(p *Plan, res []ovsdb.OperationResult, rootsOnly bool) bool {
	r, err := s.rows()
	if err != nil {
		return false
	}
	for i, op := range p.Ops {
		if op.Op != ovsdb.OperationInsert || i >= len(res) || res[i].UUID.GoUUID == "" {
			continue
		}
		if t := s.byName[op.Table]; rootsOnly && (t == nil || !t.root) {
			continue
		}
		if !r.has(op.Table, res[i].UUID.GoUUID) {
			return false
		}
	}
	for table, uuids := range p.deleted {
		for _, u := range uuids {
			if r.has(table, u) {
				return false
			}
		}
	}
	return true
}

// Sync plans and applies in one step.
func (s *Syncer) Sync(ctx context.Context, owner string, desired []model.Model, contribs ...Contribution) (*Plan, error) {
	p, err := s.Plan(owner, desired, contribs...)
	if err != nil {
		return nil, err
	}
	return p, s.Apply(ctx, p)
}

// Owners returns every owner holding rows in the managed tables whose owner
// key starts with prefix (to find and remove owners that no longer exist).
func (s *Syncer) Owners(prefix string) (map[string]bool, error) {
	r, err := s.rows()
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, t := range s.order {
		if t.extIDs >= 0 {
			r.owners(t, prefix, out)
		}
	}
	return out, nil
}
