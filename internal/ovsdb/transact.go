package ovsdb

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

// transactor sends transactions on a connection of its own, encoded by
// package wire, several at once (each reply matched by id). It dials on
// first use and again after losing the connection; a transaction in
// flight when the connection goes fails with client.ErrNotConnected (it
// may or may not have been committed, as with libovsdb).
type transactor struct {
	network, address, db string

	mu      sync.Mutex // guards everything below, and writes to conn
	conn    net.Conn
	nextID  uint64
	pending map[uint64]chan transactReply
	buf     []byte
	closed  bool
}

// writeTimeout bounds writing a request when the caller's context has no
// deadline.
const writeTimeout = time.Minute

type transactReply struct {
	results []ovsdb.OperationResult
	err     error
}

func newTransactor(endpoint, db string) (*transactor, error) {
	network, address, err := dialAddress(endpoint)
	if err != nil {
		return nil, err
	}
	return &transactor{network: network, address: address, db: db, pending: map[uint64]chan transactReply{}}, nil
}

// transact commits ops in one transaction and returns the server's results.
func (t *transactor) transact(ctx context.Context, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	reply := make(chan transactReply, 1)
	id, err := t.send(ctx, ops, reply)
	if err != nil {
		return nil, err
	}
	select {
	case r := <-reply:
		return r.results, r.err
	case <-ctx.Done():
		t.mu.Lock()
		delete(t.pending, id)
		t.mu.Unlock()
		return nil, ctx.Err()
	}
}

// send encodes and writes the request, dialling first if need be.
func (t *transactor) send(ctx context.Context, ops []ovsdb.Operation, reply chan transactReply) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return 0, client.ErrNotConnected
	}
	if t.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, t.network, t.address)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", client.ErrNotConnected, err)
		}
		t.conn = conn
		go t.read(conn)
	}
	t.nextID++
	id := t.nextID
	b, err := wire.AppendTransact(t.buf[:0], id, t.db, ops)
	if err != nil {
		return 0, err
	}
	if cap(b) <= 1<<20 {
		t.buf = b // keep a modest buffer for the next request
	}
	t.pending[id] = reply
	// A server that stops reading must not hold every sender for ever.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(writeTimeout)
	}
	_ = t.conn.SetWriteDeadline(deadline)
	if _, err := t.conn.Write(b); err != nil {
		delete(t.pending, id)
		t.dropLocked(t.conn)
		return 0, fmt.Errorf("%w: %v", client.ErrNotConnected, err)
	}
	return id, nil
}

// read delivers replies and answers echo requests until conn fails.
func (t *transactor) read(conn net.Conn) {
	rd := wire.NewReader(conn)
	for {
		b, err := rd.Next()
		var msg wire.Message
		if err == nil {
			msg, err = wire.ParseMessage(b)
		}
		if err != nil {
			t.mu.Lock()
			t.dropLocked(conn)
			t.mu.Unlock()
			return
		}
		switch {
		case msg.Method == "echo":
			out, _ := wire.EchoReply(msg)
			t.mu.Lock()
			_, err = conn.Write(out)
			t.mu.Unlock()
		case msg.Method == "":
			id, ok := msg.ID.(float64)
			if !ok {
				continue
			}
			var r transactReply
			if msg.Error != nil {
				r.err = fmt.Errorf("transact: %v", msg.Error)
			} else if r.results, r.err = wire.DecodeResults(msg.Result); r.err != nil {
				r.err = fmt.Errorf("transact reply: %w", r.err)
			}
			t.mu.Lock()
			ch := t.pending[uint64(id)]
			delete(t.pending, uint64(id))
			t.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
		if err != nil {
			t.mu.Lock()
			t.dropLocked(conn)
			t.mu.Unlock()
			return
		}
	}
}

// dropLocked closes conn, if it is still the current connection, and
// fails the transactions waiting on it.
func (t *transactor) dropLocked(conn net.Conn) {
	if t.conn != conn {
		return
	}
	conn.Close()
	t.conn = nil
	for id, ch := range t.pending {
		ch <- transactReply{err: client.ErrNotConnected}
		delete(t.pending, id)
	}
}

// close closes the connection for good.
func (t *transactor) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.conn != nil {
		t.dropLocked(t.conn)
	}
}
