package ovsdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

// monitor is a monitor_cond of some tables on a connection of its own, its
// updates decoded by package wire and applied to a libovsdb cache (that of
// a client connected without a monitor, whose API then reads them as if
// libovsdb had monitored). It stops at the first error: the connection
// lost, an update that does not decode or does not apply.
type monitor struct {
	conn net.Conn
	done chan struct{}
	once sync.Once
	err  error // why it stopped, set before done closes
	// fields builds and changes the cache's models.
	fields fields
	// view is the view of the tables asked for (nil if none).
	view *View
}

// stringsNative decodes sets and maps of strings without an interface{}
// per element: the fields of the models apply builds take them as they
// are.
var stringsNative = wire.Decoding{Strings: true}

// monitorID is the monitor's id on its connection (the json-value of
// monitor_cond, echoed in every update2).
const monitorID = "ovn-udn"

// errUnsupportedEndpoint: the own monitor dials plain TCP and Unix sockets
// (a zone's databases); anything else is monitored by libovsdb.
var errUnsupportedEndpoint = errors.New("not a tcp: or unix: endpoint")

// dialAddress splits an OVSDB remote into a network and an address.
func dialAddress(endpoint string) (network, address string, err error) {
	switch {
	case strings.Contains(endpoint, ","):
		return "", "", errUnsupportedEndpoint
	case strings.HasPrefix(endpoint, "tcp:"):
		return "tcp", strings.TrimPrefix(endpoint, "tcp:"), nil
	case strings.HasPrefix(endpoint, "unix:"):
		return "unix", strings.TrimPrefix(endpoint, "unix:"), nil
	}
	return "", "", errUnsupportedEndpoint
}

// monitorRequests are the monitor_cond requests for the given tables (all
// of the database model's when none), every column as libovsdb asks for
// but those unmonitored, and only the rows matching where.
func monitorRequests(dbModel model.DatabaseModel, tables []model.Model, unmonitored []string, where []Condition) (map[string]any, error) {
	var names []string
	if len(tables) == 0 {
		for name := range dbModel.Types() {
			names = append(names, name)
		}
	}
	for _, m := range tables {
		name := dbModel.FindTable(reflect.TypeOf(m))
		if name == "" {
			return nil, fmt.Errorf("%T is not a table of %s", m, dbModel.Schema.Name)
		}
		names = append(names, name)
	}
	requests := make(map[string]any, len(names))
	for _, name := range names {
		ts := dbModel.Schema.Table(name)
		if ts == nil {
			return nil, fmt.Errorf("the server has no table %s", name)
		}
		columns := make([]string, 0, len(ts.Columns))
		for c := range ts.Columns {
			if !slices.Contains(unmonitored, c) {
				columns = append(columns, c)
			}
		}
		requests[name] = map[string]any{"columns": columns}
	}
	for _, c := range where {
		name := dbModel.FindTable(reflect.TypeOf(c.Table))
		req, ok := requests[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a condition on %T, a table not monitored", c.Table)
		}
		conds, _ := req["where"].([]any)
		req["where"] = append(conds, []any{c.Column, c.Function, c.Value})
	}
	return requests, nil
}

// startMonitor dials endpoint, monitors tables of the database and fills tc
// from the server's reply before it returns; then it applies each update
// until it stops.
func startMonitor(ctx context.Context, endpoint string, tc *cache.TableCache, tables []model.Model, views, unmonitored []string, where []Condition) (*monitor, error) {
	network, address, err := dialAddress(endpoint)
	if err != nil {
		return nil, err
	}
	dbModel := tc.DatabaseModel()
	requests, err := monitorRequests(dbModel, tables, unmonitored, where)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	f := newFields(dbModel)
	// A view holds only tables the monitor follows: one of a table not
	// monitored would read as empty where libovsdb's cache would say so.
	var monitored []string
	for _, t := range views {
		if requests[t] != nil {
			monitored = append(monitored, t)
		}
	}
	m := &monitor{conn: conn, done: make(chan struct{}), fields: f, view: newView(tc, f, monitored)}
	stopOnCancel := context.AfterFunc(ctx, func() { conn.Close() })
	rd, err := m.initial(dbModel.Schema.Name, requests, tc)
	if !stopOnCancel() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, fmt.Errorf("monitoring %s: %w", dbModel.Schema.Name, err)
	}
	go m.run(rd, tc)
	return m, nil
}

// initial sends the monitor_cond request and applies its reply.
func (m *monitor) initial(db string, requests map[string]any, tc *cache.TableCache) (*wire.Reader, error) {
	req, err := json.Marshal(map[string]any{"id": 0, "method": "monitor_cond", "params": []any{db, monitorID, requests}})
	if err != nil {
		return nil, err
	}
	if _, err := m.conn.Write(req); err != nil {
		return nil, err
	}
	rd := wire.NewReader(m.conn)
	for {
		msg, err := m.next(rd)
		if err != nil {
			return nil, err
		}
		if msg.Method != "" || msg.ID != 0.0 {
			continue // an echo (answered) or nothing of ours
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("monitor_cond: %v", msg.Error)
		}
		updates, err := stringsNative.TableUpdates2(msg.Result)
		if err != nil {
			return nil, err
		}
		return rd, m.fields.apply(tc, updates, m.view)
	}
}

// next reads the next message, answering the server's echo requests (its
// inactivity probe) on the way.
func (m *monitor) next(rd *wire.Reader) (wire.Message, error) {
	b, err := rd.Next()
	if err != nil {
		return wire.Message{}, err
	}
	msg, err := wire.ParseMessage(b)
	if err != nil {
		return wire.Message{}, err
	}
	if msg.Method == "echo" {
		reply, err := wire.EchoReply(msg)
		if err == nil {
			_, err = m.conn.Write(reply)
		}
		return msg, err
	}
	return msg, nil
}

// run applies updates until the first error.
func (m *monitor) run(rd *wire.Reader, tc *cache.TableCache) {
	for {
		msg, err := m.next(rd)
		if err == nil && (msg.Method == "update2" || msg.Method == "update3") {
			u, derr := stringsNative.Updates(msg.Method, msg.Params)
			if err = derr; err == nil {
				err = m.fields.apply(tc, u, m.view)
			}
		}
		if err != nil {
			m.stop(err)
			return
		}
	}
}

// stop closes the connection and records why, once.
func (m *monitor) stop(err error) {
	m.once.Do(func() {
		m.err = err
		m.conn.Close()
		close(m.done)
	})
}

// close stops the monitor.
func (m *monitor) close() { m.stop(errors.New("closed")) }

// stopped reports whether the monitor has stopped.
func (m *monitor) stopped() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}
