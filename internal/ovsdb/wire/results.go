package wire

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// DecodeResults decodes a transact reply's result into the operation
// results encoding/json makes of it with libovsdb's types. The members
// ovsdb-server writes (count, uuid, rows, error, details) in their usual
// shapes take one pass; anything else is decoded by encoding/json.
func DecodeResults(b []byte) ([]ovsdb.OperationResult, error) {
	if out, ok := fastResults(b); ok {
		return out, nil
	}
	var out []ovsdb.OperationResult
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// fastResults decodes the usual shapes; ok is false for anything else.
func fastResults(b []byte) (out []ovsdb.OperationResult, ok bool) {
	p := newParser(b)
	if p.null() {
		return nil, p.end() == nil
	}
	out = []ovsdb.OperationResult{}
	err := p.array(func() error {
		var r ovsdb.OperationResult
		if !p.null() {
			if err := p.object(func(name string) error { return p.result(name, &r) }); err != nil {
				return err
			}
		}
		out = append(out, r)
		return nil
	})
	if err != nil || p.end() != nil {
		return nil, false
	}
	return out, true
}

// errSlow sends a result to encoding/json: a shape the fast path does
// not decode.
var errSlow = errors.New("not a usual operation result")

// result reads one member of an operation result.
func (p *parser) result(name string, r *ovsdb.OperationResult) error {
	switch name {
	case "count":
		start := p.i
		p.ws()
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(string(p.b[start:p.i]))
		if err != nil || (p.i-start > 1 && p.b[start] == '0') {
			return errSlow
		}
		r.Count = n
	case "error", "details":
		if p.peek() != '"' {
			return errSlow
		}
		s, err := p.str(false)
		if err != nil {
			return err
		}
		if name == "error" {
			r.Error = s
		} else {
			r.Details = s
		}
	case "uuid":
		if p.peek() != '[' {
			return errSlow
		}
		u, ok, err := p.uuidPair()
		if err != nil || !ok || u.GoUUID == "" {
			return errSlow
		}
		r.UUID = u
	case "rows":
		if p.peek() != '[' {
			return errSlow
		}
		r.Rows = []ovsdb.Row{}
		return p.array(func() error {
			row, err := p.row()
			if err != nil || row == nil {
				return errSlow
			}
			r.Rows = append(r.Rows, *row)
			return nil
		})
	default:
		return errSlow
	}
	return nil
}
