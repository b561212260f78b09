package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// Message is one JSON-RPC 1.0 message of an OVSDB connection, its members
// taken apart; Params and Result are left as raw JSON (they alias the
// bytes given to ParseMessage) for the caller to decode by method.
type Message struct {
	// ID is the id member as encoding/json decodes it into an interface{}
	// (nil for a notification).
	ID any
	// Method is set on requests and notifications.
	Method string
	// Params and Result are the raw members, nil when absent.
	Params, Result []byte
	// Error is the error member (nil when absent or null).
	Error any
}

// ParseMessage takes a message apart.
func ParseMessage(b []byte) (Message, error) {
	var m Message
	p := newParser(b)
	err := p.object(func(name string) error {
		var err error
		switch name {
		case "id":
			m.ID, err = p.value()
		case "method":
			var v any
			if v, err = p.value(); err == nil {
				s, ok := v.(string)
				if !ok && v != nil {
					return p.errorf("method is not a string")
				}
				m.Method = s
			}
		case "error":
			m.Error, err = p.value()
		case "params":
			m.Params, err = p.raw()
		case "result":
			m.Result, err = p.raw()
		default:
			_, err = p.value()
		}
		return err
	})
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return Message{}, fmt.Errorf("ovsdb message: %w", err)
	}
	return m, nil
}

// raw checks the next value and returns its bytes.
func (p *parser) raw() ([]byte, error) {
	p.ws()
	start := p.i
	if err := p.skip(); err != nil {
		return nil, err
	}
	return p.b[start:p.i], nil
}

// skip checks and passes over the next value without building it.
func (p *parser) skip() error {
	switch c := p.peek(); {
	case c == '"':
		start := p.i
		p.i++
		for p.i < len(p.b) {
			switch c := p.b[p.i]; {
			case c == '"':
				p.i++
				return nil
			case c == '\\' || c < 0x20 || c >= 0x80:
				_, err := p.slowStr(start)
				return err
			}
			p.i++
		}
		return errEnd
	case c == '{':
		return p.object(func(string) error { return p.skip() })
	case c == '[':
		return p.array(p.skip)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.scanNumber()
	default:
		_, err := p.value()
		return err
	}
}

// DecodeUpdates decodes the params of an update2 ([monitor id,
// table-updates2]) or update3 ([monitor id, last transaction id,
// table-updates2]) notification.
func DecodeUpdates(method string, params []byte) (ovsdb.TableUpdates2, error) {
	return Decoding{}.Updates(method, params)
}

// Updates decodes an update2 or update3 notification's table updates as
// DecodeUpdates does, sets and maps of strings as d says.
func (d Decoding) Updates(method string, params []byte) (ovsdb.TableUpdates2, error) {
	p := newParser(params)
	p.strings = d.Strings
	var out ovsdb.TableUpdates2
	want := 2
	if method == "update3" {
		want = 3
	}
	n := 0
	err := p.array(func() error {
		n++
		if n == want {
			return p.tableUpdates(&out)
		}
		return p.skip()
	})
	if err == nil {
		err = p.end()
	}
	if err == nil && n != want {
		err = fmt.Errorf("%d params, want %d", n, want)
	}
	if err != nil {
		return nil, fmt.Errorf("ovsdb %s: %w", method, err)
	}
	return out, nil
}

// Reader splits an OVSDB connection's byte stream into messages: each is a
// JSON object, one after the other, with or without white space between.
type Reader struct {
	r   io.Reader
	buf []byte
	// start is where the next message begins in buf; scan how far it has
	// been scanned, with the scanner's state in depth, inString, escaped.
	start, scan       int
	depth             int
	inString, escaped bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r, buf: make([]byte, 0, minBuffer)} }

const (
	minBuffer = 64 << 10
	// keepBuffer is the largest buffer kept between messages: a
	// connection's initial monitor reply may take tens of MiB once.
	keepBuffer = 4 << 20
)

// ErrNotObject is returned when the stream holds something other than a
// JSON object at the top level.
var ErrNotObject = errors.New("ovsdb stream: a message is not a JSON object")

// Next returns the next message's bytes, valid until the next call.
func (r *Reader) Next() ([]byte, error) {
	for {
		if end, ok, err := r.find(); err != nil {
			return nil, err
		} else if ok {
			msg := r.buf[r.start:end]
			r.start, r.scan = end, end
			return msg, nil
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

// find scans from r.scan for the end of the message beginning at r.start.
func (r *Reader) find() (end int, ok bool, err error) {
	b := r.buf
	for i := r.scan; i < len(b); i++ {
		c := b[i]
		if r.inString {
			switch {
			case r.escaped:
				r.escaped = false
			case c == '\\':
				r.escaped = true
			case c == '"':
				r.inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			if r.depth == 0 {
				r.start = i + 1
			}
		case '"':
			r.inString = true
		case '{', '[':
			if r.depth == 0 && c != '{' {
				return 0, false, ErrNotObject
			}
			r.depth++
		case '}', ']':
			r.depth--
			if r.depth == 0 {
				r.scan = i + 1
				return i + 1, true, nil
			}
		default:
			if r.depth == 0 {
				return 0, false, ErrNotObject
			}
		}
	}
	r.scan = len(b)
	return 0, false, nil
}

// fill reads more of the stream, first moving the unfinished message to the
// front of the buffer (into a smaller one after a large message).
func (r *Reader) fill() error {
	rest := r.buf[r.start:]
	switch {
	case cap(r.buf) > keepBuffer && len(rest) < minBuffer/2:
		nb := make([]byte, len(rest), minBuffer)
		copy(nb, rest)
		r.buf = nb
	case r.start > 0:
		r.buf = r.buf[:copy(r.buf, rest)]
	}
	r.scan -= r.start
	r.start = 0
	if len(r.buf) == cap(r.buf) {
		nb := make([]byte, len(r.buf), 2*cap(r.buf))
		copy(nb, r.buf)
		r.buf = nb
	}
	n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
	r.buf = r.buf[:len(r.buf)+n]
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	if err == io.EOF && len(r.buf) > 0 {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// EchoReply is the reply to an echo request (RFC 7047 4.1.11: its params
// returned as the result, under its id): ovsdb-server's inactivity probe,
// which drops a connection that does not answer.
func EchoReply(req Message) ([]byte, error) {
	params := req.Params
	if params == nil {
		params = []byte("[]")
	}
	return json.Marshal(map[string]any{"id": req.ID, "result": json.RawMessage(params), "error": nil})
}
