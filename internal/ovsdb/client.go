package ovsdb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/sbdb"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// ClientOptions configures Connect.
type ClientOptions struct {
	// Endpoint is the OVSDB remote, e.g. "tcp:127.0.0.1:6641".
	Endpoint string
	// Logger receives libovsdb's logs; the zero value discards them (libovsdb
	// is very chatty at its default verbosity).
	Logger logr.Logger
	// Log receives ovn-udn's own messages about the connection (why an own
	// monitor stopped); the zero value discards them.
	Log logr.Logger
	// Tables limits the monitor to these tables (all tables when empty). A
	// controller monitors only what it reads, which keeps its cache small.
	Tables []model.Model
	// NoMonitor connects without any monitor: a write-only connection (it
	// still has the schema, so operations are validated).
	NoMonitor bool
	// OwnMonitor monitors on a second connection whose updates ovn-udn
	// decodes itself (package wire) into the libovsdb client's cache, about
	// nine times faster than libovsdb's own decoding; the client's API
	// reads that cache as usual. A transaction's reply may then arrive
	// before the cache shows its rows: callers that need them wait for
	// the cache (ovsdbsync does). Endpoints other than one tcp: or unix:
	// remote are monitored by libovsdb.
	OwnMonitor bool
	// OwnTransact sends Transact's operations on a connection of its own,
	// encoded by package wire instead of encoding/json (which re-encodes
	// every nested value: a fifth of a zone controller's CPU when it
	// converges), without libovsdb's client-side validation (the server
	// validates). Endpoints other than one tcp: or unix: remote go
	// through libovsdb.
	OwnTransact bool
	// Views are tables the own monitor also keeps a View of: rows read
	// without a copy (see View; ovsdbsync reads the rows it contributes
	// to through it). Without OwnMonitor there is no view.
	Views []string
	// Unmonitored are columns the own monitor leaves out of every table it
	// monitors: the server then sends no update for a change to them alone.
	// Their fields stay unset in the rows read. Without OwnMonitor every
	// column is monitored.
	Unmonitored []string
	// Where limits the own monitor to the rows of a table that match every
	// condition given for it (monitor_cond's "where"): a table monitored
	// for a few of its rows costs the client those rows only. Monitored by
	// libovsdb, the whole table is.
	Where []Condition
	// Indexes are client indexes to maintain in the cache (see
	// ovsdbsync.Indexes).
	Indexes map[string][]model.ClientIndex
	// Reconnect keeps the client reconnecting (with backoff, for ever) after
	// the server goes away; the monitor and cache are rebuilt, then
	// OnReconnect is called (a controller resyncs everything: the database
	// may have come back different, even empty). While disconnected,
	// transactions fail at once, so callers retry with their own backoff.
	Reconnect   bool
	OnReconnect func()
}

// Condition is a monitor_cond condition on a table's column, its value in
// OVSDB's JSON notation (a map is ["map", [[key, value], ...]]).
type Condition struct {
	Table    model.Model
	Column   string
	Function string
	Value    any
}

// ConnectNB connects to an OVN Northbound database and monitors it.
func ConnectNB(ctx context.Context, opts ClientOptions) (client.Client, error) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	return connect(ctx, m, opts)
}

// ConnectSB connects to an OVN Southbound database and monitors it.
func ConnectSB(ctx context.Context, opts ClientOptions) (client.Client, error) {
	m, err := sbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	return connect(ctx, m, opts)
}

func connect(ctx context.Context, m model.ClientDBModel, opts ClientOptions) (client.Client, error) {
	if len(opts.Indexes) > 0 {
		m.SetIndexes(opts.Indexes)
	}
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = logr.Discard()
	}
	c, err := client.NewOVSDBClient(m, client.WithEndpoint(opts.Endpoint), client.WithLogger(&logger))
	if err != nil {
		return nil, fmt.Errorf("creating %s client for %s: %w", m.Name(), opts.Endpoint, err)
	}
	s := &supervised{Client: c, opts: opts, name: m.Name(), done: make(chan struct{})}
	if opts.OwnTransact {
		if s.tx, err = newTransactor(opts.Endpoint, m.Name()); err != nil && !errors.Is(err, errUnsupportedEndpoint) {
			return nil, err
		}
	}
	if err := s.connectAndMonitor(ctx); err != nil {
		c.Close()
		return nil, err
	}
	if opts.Reconnect {
		go s.supervise()
	}
	return s, nil
}

// supervised is a client that reconnects itself.
type supervised struct {
	client.Client
	opts ClientOptions
	name string
	once sync.Once
	done chan struct{}
	// reconnecting hides the cache from the moment the connection is lost
	// until the new monitor has filled it: libovsdb makes a fresh, empty
	// cache when it connects again, and a controller planning from it in
	// between would take the database for empty (re-inserting every row
	// it owns, forgetting what it contributed where).
	reconnecting atomic.Bool
	// mon is the own monitor (OwnMonitor), nil otherwise.
	mon atomic.Pointer[monitor]
	// tx sends transactions (OwnTransact), nil otherwise.
	tx *transactor
}

// Transact commits operations in one transaction.
func (s *supervised) Transact(ctx context.Context, ops ...ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	if s.tx != nil {
		return s.tx.transact(ctx, ops)
	}
	return s.Client.Transact(ctx, ops...)
}

// Cache returns the client's cache, or nil while it is being rebuilt after
// a reconnection (callers then treat the client as not connected).
func (s *supervised) Cache() *cache.TableCache {
	if s.reconnecting.Load() {
		return nil
	}
	return s.Client.Cache()
}

// Connected reports whether the client is connected with its cache filled.
func (s *supervised) Connected() bool { return !s.reconnecting.Load() && !s.lost() }

// lost reports whether the connection is gone. libovsdb (without its own
// reconnection) drops its connection and cache when the server closes it,
// but its Connected stays true, and it tells only a goroutine that happens
// to be waiting on DisconnectNotify at that instant: the missing cache is
// what says so reliably.
func (s *supervised) lost() bool {
	if m := s.mon.Load(); m != nil && m.stopped() {
		return true
	}
	return !s.Client.Connected() || s.Client.Cache() == nil
}

// View returns the own monitor's view of the cache tc, nil if there is
// none (no views asked for, no own monitor, or tc is not the cache the
// monitor fills: a reconnection replaced it).
func (s *supervised) View(tc *cache.TableCache) *View {
	m := s.mon.Load()
	if m == nil || m.view == nil || m.view.tc != tc || tc == nil {
		return nil
	}
	return m.view
}

// monitorDone is closed when the own monitor stops (nil without one).
func (s *supervised) monitorDone() <-chan struct{} {
	if m := s.mon.Load(); m != nil {
		return m.done
	}
	return nil
}

// dropMonitor stops the own monitor, and makes libovsdb let go of the
// cache it filled (it makes a fresh one on connecting again) if its own
// connection outlived the monitor's.
func (s *supervised) dropMonitor() {
	m := s.mon.Swap(nil)
	if m == nil {
		return
	}
	m.close()
	if s.Client.Cache() == nil {
		return
	}
	s.Client.Disconnect()
	_ = proc.WaitFor(5*time.Second, 10*time.Millisecond, func() (bool, error) { return s.Client.Cache() == nil, nil })
}

// Close stops reconnecting and closes the connection.
func (s *supervised) Close() {
	s.once.Do(func() { close(s.done) })
	if m := s.mon.Load(); m != nil {
		m.close()
	}
	if s.tx != nil {
		s.tx.close()
	}
	s.Client.Close()
}

func (s *supervised) connectAndMonitor(ctx context.Context) error {
	if err := s.Client.Connect(ctx); err != nil {
		return fmt.Errorf("connecting to %s at %s: %w", s.name, s.opts.Endpoint, err)
	}
	var err error
	if s.opts.NoMonitor {
		return nil
	}
	if s.opts.OwnMonitor {
		m, err := startMonitor(ctx, s.opts.Endpoint, s.Client.Cache(), s.opts.Tables, s.opts.Views, s.opts.Unmonitored, s.opts.Where)
		if err == nil {
			s.mon.Store(m)
			return nil
		}
		if !errors.Is(err, errUnsupportedEndpoint) {
			return fmt.Errorf("monitoring %s at %s: %w", s.name, s.opts.Endpoint, err)
		}
	}
	if len(s.opts.Tables) == 0 {
		_, err = s.Client.MonitorAll(ctx)
	} else {
		var tables []client.MonitorOption
		for _, t := range s.opts.Tables {
			tables = append(tables, client.WithTable(t))
		}
		_, err = s.Client.Monitor(ctx, s.Client.NewMonitor(tables...))
	}
	if err != nil {
		return fmt.Errorf("monitoring %s at %s: %w", s.name, s.opts.Endpoint, err)
	}
	return nil
}

// supervise reconnects after every disconnection (libovsdb reports one on its
// notification channel; a check every second catches a missed report), with
// exponential backoff from 100 ms to 5 s, until Close.
func (s *supervised) supervise() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-s.Client.DisconnectNotify():
		case <-s.monitorDone():
		case <-tick.C:
			if !s.lost() {
				continue
			}
		}
		s.reconnecting.Store(true)
		if m := s.mon.Load(); m != nil && m.stopped() && s.opts.Log.GetSink() != nil {
			s.opts.Log.Info("database monitor stopped, reconnecting", "endpoint", s.opts.Endpoint, "reason", m.err.Error())
		}
		s.dropMonitor()
		delay := 100 * time.Millisecond
		for {
			select {
			case <-s.done:
				return
			default:
			}
			// Long enough for a large database's initial monitor reply
			// (a million rows take tens of seconds to arrive and fill
			// the cache); an unreachable server fails at once anyway.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := s.connectAndMonitor(ctx)
			cancel()
			if err == nil {
				s.reconnecting.Store(false)
				break
			}
			if s.Client.Connected() {
				s.Client.Disconnect() // connected but not monitoring: start over
			}
			select {
			case <-s.done:
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, 5*time.Second)
		}
		if s.opts.OnReconnect != nil {
			s.opts.OnReconnect()
		}
	}
}
