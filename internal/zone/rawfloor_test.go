package zone_test

// The raw floor of BenchmarkZoneConverge: the rows the controller writes,
// sent to a Northbound ovsdb-server by the cheapest means there is — OVSDB
// JSON-RPC (RFC 7047) "transact" requests written straight to the TCP
// connection, one transaction of named-UUID inserts per network, many in
// flight at once, no libovsdb on the write path and no monitor; and the
// same with a monitor of the controller's tables on that connection,
// counted rather than decoded, for the server's cost of sending a
// controller what it wrote.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// rawInFlight bounds the transactions sent and not yet answered: 64, or
// OVN_UDN_BENCH_RAW_INFLIGHT.
func rawInFlight() int {
	if k, err := strconv.Atoi(os.Getenv("OVN_UDN_BENCH_RAW_INFLIGHT")); err == nil && k > 0 {
		return k
	}
	return 64
}

// rawTxn is one network's transaction, encoded before the clock starts.
type rawTxn struct {
	// params is the JSON of the request's params: ["OVN_Northbound", op...].
	params []byte
	// ops is the number of operations (all inserts).
	ops int
}

// rawTable is what the conversion needs to know about a model type.
type rawTable struct {
	name     string
	rank     int // the controller's insertion order (zone.NBTables)
	root     bool
	uuid     int // field index of _uuid
	extIDs   int // field index of external_ids, -1 if none
	fields   []rawField
	refTable bool // some column refers to other rows
}

type rawField struct {
	index            int
	column           string
	keyRef, valueRef bool // the key (set member, map key) or map value is a reference
}

// rawTables describes zone.NBTables from their ovsdb struct tags and the
// Northbound schema.
func rawTables() (map[reflect.Type]*rawTable, error) {
	schema := nbdb.Schema()
	out := map[reflect.Type]*rawTable{}
	for rank, m := range zone.NBTables {
		name := zone.NBTableNames[rank]
		ts, ok := schema.Tables[name]
		if !ok {
			return nil, fmt.Errorf("table %s is not in the schema", name)
		}
		typ := reflect.TypeOf(m).Elem()
		t := &rawTable{name: name, rank: rank, root: ts.IsRoot, uuid: -1, extIDs: -1}
		for i := 0; i < typ.NumField(); i++ {
			col := typ.Field(i).Tag.Get("ovsdb")
			cs, inSchema := ts.Columns[col]
			switch {
			case col == "_uuid":
				t.uuid = i
			case !inSchema: // libovsdb writes only schema columns
			case col == "external_ids":
				t.extIDs = i
			default:
				f := rawField{index: i, column: col}
				if cs.TypeObj != nil {
					f.keyRef = isRef(cs.TypeObj.Key)
					f.valueRef = isRef(cs.TypeObj.Value)
				}
				t.refTable = t.refTable || f.keyRef || f.valueRef
				t.fields = append(t.fields, f)
			}
		}
		if t.uuid < 0 {
			return nil, fmt.Errorf("table %s: no _uuid field", name)
		}
		out[typ] = t
	}
	return out, nil
}

func isRef(b *ovsdb.BaseType) bool {
	if b == nil || b.Type != ovsdb.TypeUUID {
		return false
	}
	ref, err := b.RefTable()
	return err == nil && ref != ""
}

// rawTransactions renders every network as the controller does (same
// renderer, same inputs) and encodes each network's rows as one transaction
// of inserts (OVN_UDN_BENCH_RAW_BATCH=K: K networks per transaction), the way ovsdbsync would insert them into an empty database:
// the same columns (libovsdb leaves out columns at their Go zero value except
// booleans, and so does this), the same order (referenced tables first), the
// same rows (a non-root row no other row refers to is not written), and the
// same external_ids — including ovsdbsync's two keys, the owner
// (ovsdbsync.OwnerKey = feature.NetworkKey(network).String()) and the row's ID
// (ovsdbsync.IDKey), so the floor writes the same data as the
// controller (checked while developing: equal to ovsdbsync's inserts, row by
// row, up to named-UUID spelling). References, which hold row IDs in the models
// ("lsp:..."), become ["named-uuid", "nIrJ"] (J the row's index in network
// I, unique in a transaction of several networks). It returns the transactions and the number of rows.
func rawTransactions(b *testing.B, nets []topology.Network, infos []nodeinfo.Info, cfg config.Cluster) ([]rawTxn, int) {
	b.Helper()
	tables, err := rawTables()
	if err != nil {
		b.Fatal(err)
	}
	// One network per transaction, or OVN_UDN_BENCH_RAW_BATCH networks.
	batch := 1
	if k, err := strconv.Atoi(os.Getenv("OVN_UDN_BENCH_RAW_BATCH")); err == nil && k > 1 {
		batch = k
	}
	var batches [][]any
	rows := 0
	for i, n := range nets {
		res, err := topology.Render(topology.Input{Network: n, Nodes: infos, Zone: "node0", Cluster: cfg})
		if err != nil {
			b.Fatal(err)
		}
		ops, err := rawInserts(tables, feature.NetworkKey(n.Name).String(), res.Rows, "n"+strconv.Itoa(i)+"r")
		if err != nil {
			b.Fatalf("network %s: %v", n.Name, err)
		}
		if i%batch == 0 {
			batches = append(batches, []any{"OVN_Northbound"})
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], ops...)
		rows += len(ops)
	}
	txns := make([]rawTxn, len(batches))
	for i, ops := range batches {
		params, err := json.Marshal(ops)
		if err != nil {
			b.Fatal(err)
		}
		txns[i] = rawTxn{params: params, ops: len(ops) - 1}
	}
	return txns, rows
}

// rawInserts converts one owner's desired rows into insert operations, as
// plain JSON values, naming row i prefix+i.
func rawInserts(tables map[reflect.Type]*rawTable, owner string, desired []model.Model, prefix string) ([]any, error) {
	type row struct {
		t  *rawTable
		v  reflect.Value // the struct
		id string
	}
	rows := make([]row, len(desired))
	names := map[string]string{} // row ID -> named UUID
	for i, m := range desired {
		v := reflect.ValueOf(m)
		t, ok := tables[v.Type().Elem()]
		if !ok {
			return nil, fmt.Errorf("%T is not a table the zone controller writes", m)
		}
		id := v.Elem().Field(t.uuid).String()
		if _, dup := names[id]; dup || id == "" {
			return nil, fmt.Errorf("row ID %q is empty or desired twice", id)
		}
		rows[i] = row{t: t, v: v.Elem(), id: id}
		names[id] = prefix + strconv.Itoa(i)
	}
	// Rows other rows refer to (ovsdbsync leaves out non-root rows nothing
	// refers to: the server would garbage collect them at commit).
	referenced := map[string]bool{}
	for _, r := range rows {
		if !r.t.refTable {
			continue
		}
		for _, f := range r.t.fields {
			fv := r.v.Field(f.index)
			if f.keyRef {
				forEachAtom(fv, true, func(a reflect.Value) { referenced[a.String()] = true })
			}
			if f.valueRef {
				forEachAtom(fv, false, func(a reflect.Value) { referenced[a.String()] = true })
			}
		}
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].t.rank < rows[b].t.rank })

	var ops []any
	for _, r := range rows {
		if !r.t.root && !referenced[r.id] {
			continue
		}
		cols := map[string]any{}
		for _, f := range r.t.fields {
			val, ok, err := rawColumn(r.v.Field(f.index), f, names)
			if err != nil {
				return nil, fmt.Errorf("row %s column %s: %w", r.id, f.column, err)
			}
			if ok {
				cols[f.column] = val
			}
		}
		if r.t.extIDs >= 0 {
			ext := map[string]string{}
			for k, v := range r.v.Field(r.t.extIDs).Interface().(map[string]string) {
				ext[k] = v
			}
			ext[ovsdbsync.OwnerKey], ext[ovsdbsync.IDKey] = owner, r.id
			val, _, _ := rawColumn(reflect.ValueOf(ext), rawField{}, nil)
			cols["external_ids"] = val
		}
		ops = append(ops, map[string]any{"op": "insert", "table": r.t.name, "uuid-name": names[r.id], "row": cols})
	}
	return ops, nil
}

// forEachAtom calls f with each key (key true) or map value (key false) of a
// column's Go value.
func forEachAtom(v reflect.Value, key bool, f func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Ptr:
		if !v.IsNil() && key {
			f(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		if key {
			for i := 0; i < v.Len(); i++ {
				f(v.Index(i))
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if key {
				f(k)
			} else {
				f(v.MapIndex(k))
			}
		}
	default:
		if key {
			f(v)
		}
	}
}

// rawColumn encodes a column's Go value as RFC 7047 JSON: an atom (also for
// a set of one element, as RFC 7047 allows and libovsdb does), a
// ["set", [...]] or a ["map", [[k, v], ...]]; ok is false for a value
// libovsdb would leave out of an insert (the Go zero value, except booleans).
func rawColumn(v reflect.Value, f rawField, names map[string]string) (val any, ok bool, err error) {
	switch v.Kind() {
	case reflect.Bool:
		return v.Bool(), true, nil
	case reflect.String, reflect.Int, reflect.Float64:
		if v.IsZero() {
			return nil, false, nil
		}
		a, err := rawAtom(v, f.keyRef, names)
		return a, err == nil, err
	case reflect.Ptr:
		if v.IsNil() {
			return nil, false, nil
		}
		a, err := rawAtom(v.Elem(), f.keyRef, names) // a set of one: the atom
		return a, err == nil, err
	case reflect.Slice, reflect.Array:
		switch v.Len() {
		case 0:
			return nil, false, nil
		case 1:
			a, err := rawAtom(v.Index(0), f.keyRef, names)
			return a, err == nil, err
		}
		set := make([]any, v.Len())
		for i := range set {
			if set[i], err = rawAtom(v.Index(i), f.keyRef, names); err != nil {
				return nil, false, err
			}
		}
		return []any{"set", set}, true, nil
	case reflect.Map:
		if v.Len() == 0 {
			return nil, false, nil
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		pairs := make([]any, len(keys))
		for i, k := range keys {
			ka, err := rawAtom(k, f.keyRef, names)
			if err != nil {
				return nil, false, err
			}
			va, err := rawAtom(v.MapIndex(k), f.valueRef, names)
			if err != nil {
				return nil, false, err
			}
			pairs[i] = []any{ka, va}
		}
		return []any{"map", pairs}, true, nil
	}
	return nil, false, fmt.Errorf("unsupported Go kind %s", v.Kind())
}

// rawAtom encodes one atom; a reference becomes the named UUID of the row
// it names, or stays a UUID when it already is one (a row outside the
// network, as ovsdbsync keeps it).
func rawAtom(v reflect.Value, ref bool, names map[string]string) (any, error) {
	switch v.Kind() {
	case reflect.String:
		if !ref {
			return v.String(), nil
		}
		if n, ok := names[v.String()]; ok {
			return []any{"named-uuid", n}, nil
		}
		if ovsdb.IsValidUUID(v.String()) {
			return []any{"uuid", v.String()}, nil
		}
		return nil, fmt.Errorf("reference to %q, which is not a row of this transaction", v.String())
	case reflect.Int:
		return v.Int(), nil
	case reflect.Float64:
		return v.Float(), nil
	case reflect.Bool:
		return v.Bool(), nil
	}
	return nil, fmt.Errorf("unsupported atom kind %s", v.Kind())
}

// rawResult is one operation's result in a "transact" reply.
type rawResult struct {
	UUID    json.RawMessage   `json:"uuid"`
	Rows    []json.RawMessage `json:"rows"`
	Error   string            `json:"error"`
	Details string            `json:"details"`
}

// rawMonitorID is the id of the raw floor's monitor_cond request: the
// transactions' ids start at 1.
const rawMonitorID = "0"

// rawMonitorParams are the params of a monitor_cond of the tables the zone
// controller monitors, with the columns its monitor asks for
// (ovsdbsync.OthersColumns left out, unless OVN_UDN_BENCH_UNMONITORED=none).
func rawMonitorParams() ([]byte, error) {
	schema := nbdb.Schema()
	requests := map[string]any{}
	for _, name := range zone.NBTableNames {
		ts, ok := schema.Tables[name]
		if !ok {
			return nil, fmt.Errorf("table %s is not in the schema", name)
		}
		var columns []string
		for c := range ts.Columns {
			if !slices.Contains(unmonitored(), c) {
				columns = append(columns, c)
			}
		}
		sort.Strings(columns)
		requests[name] = map[string]any{"columns": columns}
	}
	return json.Marshal([]any{"OVN_Northbound", "raw-floor", requests})
}

// rawTransact sends every transaction to the OVSDB server at endpoint
// ("tcp:HOST:PORT") over one connection, pipelined: a writer goroutine
// streams requests (ids 1..len(txns)) while at most inFlight are
// unanswered, and the calling goroutine reads replies, matches them by id
// and answers the server's echo requests. It returns when every transaction is answered,
// with the first error any reply holds (a JSON-RPC error, an operation's
// error, an operation not executed). check, if set, sees each reply's
// results (by transaction index) as they arrive.
//
// With monitor set (the params of a monitor_cond, rawMonitorParams), the
// connection monitors the database first, and rawTransact returns only once
// the monitor's updates have also shown every row the transactions
// inserted (counted, not decoded: the least any client that learns what it
// wrote from a monitor must read). The transactions must insert only.
func rawTransact(endpoint string, txns []rawTxn, inFlight int, monitor []byte, check func(i int, res []*rawResult) error) error {
	conn, err := net.Dial("tcp", strings.TrimPrefix(endpoint, "tcp:"))
	if err != nil {
		return err
	}
	defer conn.Close()
	rd := wire.NewReader(conn)
	if monitor != nil {
		if _, err := fmt.Fprintf(conn, `{"method":"monitor_cond","params":%s,"id":%s}`, monitor, rawMonitorID); err != nil {
			return err
		}
		b, err := rd.Next()
		if err != nil {
			return fmt.Errorf("reading the monitor_cond reply: %w", err)
		}
		m, err := wire.ParseMessage(b)
		if err != nil {
			return err
		}
		if id, _ := m.ID.(float64); m.Method != "" || id != 0 || m.Error != nil {
			return fmt.Errorf("monitor_cond: unexpected reply %s", b)
		}
	}
	unseen := 0 // inserted rows the monitor has not shown yet
	if monitor != nil {
		for _, t := range txns {
			unseen += t.ops
		}
	}
	var mu sync.Mutex // serialises writes: requests and echo replies
	w := bufio.NewWriterSize(conn, 1<<20)
	send := func(parts ...[]byte) error {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return w.Flush()
	}

	slots := make(chan struct{}, inFlight)
	stop := make(chan struct{}) // closed when the reader is done
	writeErr := make(chan error, 1)
	go func() {
		var id []byte
		for i, t := range txns {
			select {
			case slots <- struct{}{}:
			case <-stop:
				writeErr <- nil
				return
			}
			id = strconv.AppendInt(id[:0], int64(i+1), 10)
			if err := send([]byte(`{"method":"transact","params":`), t.params, []byte(`,"id":`), id, []byte("}")); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()

	readErr := func() error {
		defer close(stop)
		answered := make([]bool, len(txns))
		left := len(txns)
		for left > 0 || unseen > 0 {
			b, err := rd.Next()
			if err != nil {
				return fmt.Errorf("reading a reply (%d of %d unanswered): %w", left, len(txns), err)
			}
			m, err := wire.ParseMessage(b)
			if err != nil {
				return err
			}
			switch m.Method {
			case "":
			case "echo":
				reply, err := wire.EchoReply(m)
				if err != nil {
					return err
				}
				if err := send(reply); err != nil {
					return err
				}
				continue
			case "update2":
				unseen -= bytes.Count(m.Params, []byte(`{"insert":`))
				continue
			default:
				continue
			}
			id, _ := m.ID.(float64)
			n := int(id)
			if float64(n) != id || n < 1 || n > len(txns) || answered[n-1] {
				return fmt.Errorf("reply with an unexpected id %v", m.ID)
			}
			answered[n-1] = true
			left--
			<-slots
			if m.Error != nil {
				return fmt.Errorf("transaction %d: %v", n, m.Error)
			}
			var results []*rawResult
			if err := json.Unmarshal(m.Result, &results); err != nil {
				return fmt.Errorf("transaction %d: %w", n, err)
			}
			if len(results) < txns[n-1].ops {
				return fmt.Errorf("transaction %d: %d results for %d operations", n, len(results), txns[n-1].ops)
			}
			for j, r := range results {
				switch {
				case r == nil:
					return fmt.Errorf("transaction %d: operation %d not executed", n, j)
				case r.Error != "":
					return fmt.Errorf("transaction %d: operation %d: %s: %s", n, j, r.Error, r.Details)
				}
			}
			if check != nil {
				if err := check(n-1, results); err != nil {
					return fmt.Errorf("transaction %d: %w", n, err)
				}
			}
		}
		return nil
	}()
	if readErr != nil {
		conn.Close() // unblocks the writer
		<-writeErr
		return readErr
	}
	return <-writeErr
}

// rawFloor writes txns to z's fresh NB and returns how long it took, from
// the first request to the last reply (and, with monitor, until the
// connection's monitor has shown every row), the ovsdb-server's CPU
// seconds meanwhile, and the CPU seconds of this process (the floor's
// client). It fails b unless every insert returned a UUID.
func rawFloor(b *testing.B, z *ovntest.Zone, txns []rawTxn, monitor []byte) (took time.Duration, serverCPU, clientCPU float64) {
	b.Helper()
	pid := strconv.Itoa(z.Processes()["nb"].PID())
	inserted := 0
	cpu0, self0 := cpuSeconds(pid), cpuSeconds("self")
	start := time.Now()
	err := rawTransact(z.NB, txns, rawInFlight(), monitor, func(i int, res []*rawResult) error {
		for _, r := range res[:txns[i].ops] {
			if len(r.UUID) == 0 {
				return fmt.Errorf("an insert returned no uuid")
			}
		}
		inserted += txns[i].ops
		return nil
	})
	took = time.Since(start)
	serverCPU, clientCPU = cpuSeconds(pid)-cpu0, cpuSeconds("self")-self0
	if err != nil {
		b.Fatalf("raw floor (%s): %v", z.Name, err)
	}
	want := 0
	for _, t := range txns {
		want += t.ops
	}
	if inserted != want {
		b.Fatalf("raw floor (%s): %d rows inserted, want %d", z.Name, inserted, want)
	}
	return took, serverCPU, clientCPU
}

// nbRows counts the rows of every table the zone controller writes in z's
// NB, with one raw "select" transaction.
func nbRows(b *testing.B, z *ovntest.Zone) map[string]int {
	b.Helper()
	ops := []any{"OVN_Northbound"}
	for _, t := range zone.NBTableNames {
		ops = append(ops, map[string]any{"op": "select", "table": t, "where": []any{}, "columns": []string{"_uuid"}})
	}
	params, err := json.Marshal(ops)
	if err != nil {
		b.Fatal(err)
	}
	counts := map[string]int{}
	err = rawTransact(z.NB, []rawTxn{{params: params, ops: len(zone.NBTableNames)}}, 1, nil, func(_ int, res []*rawResult) error {
		for i, t := range zone.NBTableNames {
			counts[t] = len(res[i].Rows)
		}
		return nil
	})
	if err != nil {
		b.Fatalf("counting rows in %s: %v", z.Name, err)
	}
	return counts
}

// sameRows fails b unless zone z's NB holds as many rows in each table as
// want (the controller's).
func sameRows(b *testing.B, what string, z *ovntest.Zone, want map[string]int) {
	b.Helper()
	got := nbRows(b, z)
	var diff bytes.Buffer
	for _, t := range zone.NBTableNames {
		if got[t] != want[t] {
			fmt.Fprintf(&diff, " %s: %d, controller %d;", t, got[t], want[t])
		}
	}
	if diff.Len() > 0 {
		b.Fatalf("%s wrote other rows than the controller:%s", what, diff.String())
	}
}

func totalRows(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// translatedWithin bounds the wait for northd in the until-translated
// timings (OVN_UDN_BENCH_CAUGHTUP, default 10 minutes).
var translatedWithin = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("OVN_UDN_BENCH_CAUGHTUP")); err == nil {
		return d
	}
	return 10 * time.Minute
}()
