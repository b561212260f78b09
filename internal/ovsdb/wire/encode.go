package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// AppendTransact appends a transact request (RFC 7047 4.1.3) of ops on
// database db, with the given id, encoded as libovsdb encodes operations
// (the same JSON values; object members in another order), without
// encoding/json's reflection and re-compaction of every nested value.
func AppendTransact(b []byte, id uint64, db string, ops []ovsdb.Operation) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":"transact","params":[`...)
	b = appendString(b, db)
	for i := range ops {
		b = append(b, ',')
		var err error
		if b, err = appendOperation(b, &ops[i]); err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i, ops[i].Op, ops[i].Table, err)
		}
	}
	return append(b, "]}"...), nil
}

// appendOperation encodes one operation with the members libovsdb's
// Operation.MarshalJSON writes: those set, and where always for a select.
func appendOperation(b []byte, op *ovsdb.Operation) ([]byte, error) {
	var err error
	b = append(b, `{"op":`...)
	b = appendString(b, op.Op)
	member := func(name string) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if op.Table != "" {
		member("table")
		b = appendString(b, op.Table)
	}
	if len(op.Row) > 0 {
		member("row")
		if b, err = appendRow(b, op.Row); err != nil {
			return nil, err
		}
	}
	if len(op.Rows) > 0 {
		member("rows")
		if b, err = appendList(b, op.Rows, appendRow); err != nil {
			return nil, err
		}
	}
	if len(op.Columns) > 0 {
		member("columns")
		b, _ = appendList(b, op.Columns, func(b []byte, c string) ([]byte, error) { return appendString(b, c), nil })
	}
	if len(op.Mutations) > 0 {
		member("mutations")
		if b, err = appendList(b, op.Mutations, func(b []byte, m ovsdb.Mutation) ([]byte, error) {
			return appendTriple(b, m.Column, string(m.Mutator), m.Value)
		}); err != nil {
			return nil, err
		}
	}
	if op.Timeout != nil {
		member("timeout")
		b = strconv.AppendInt(b, int64(*op.Timeout), 10)
	}
	if len(op.Where) > 0 || op.Op == ovsdb.OperationSelect {
		member("where")
		if b, err = appendList(b, op.Where, func(b []byte, c ovsdb.Condition) ([]byte, error) {
			return appendTriple(b, c.Column, string(c.Function), c.Value)
		}); err != nil {
			return nil, err
		}
	}
	if op.Until != "" {
		member("until")
		b = appendString(b, op.Until)
	}
	if op.Durable != nil {
		member("durable")
		b = strconv.AppendBool(b, *op.Durable)
	}
	if op.Comment != nil {
		member("comment")
		b = appendString(b, *op.Comment)
	}
	if op.Lock != nil {
		member("lock")
		b = appendString(b, *op.Lock)
	}
	if op.UUID != "" {
		member("uuid")
		b = appendString(b, op.UUID)
	}
	if op.UUIDName != "" {
		member("uuid-name")
		b = appendString(b, op.UUIDName)
	}
	return append(b, '}'), nil
}

// appendList encodes a JSON array of items.
func appendList[T any](b []byte, items []T, each func([]byte, T) ([]byte, error)) ([]byte, error) {
	b = append(b, '[')
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = each(b, item); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendTriple encodes a condition or a mutation: [column, function, value].
func appendTriple(b []byte, column, function string, value any) ([]byte, error) {
	b = append(b, '[')
	b = appendString(b, column)
	b = append(b, ',')
	b = appendString(b, function)
	b = append(b, ',')
	b, err := appendValue(b, value)
	return append(b, ']'), err
}

func appendRow(b []byte, r ovsdb.Row) ([]byte, error) {
	b = append(b, '{')
	first := true
	for k, v := range r {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, fmt.Errorf("column %s: %w", k, err)
		}
	}
	return append(b, '}'), nil
}

// appendValue encodes a datum in libovsdb's notation: an atom, a UUID, an
// OvsSet (a lone element stands for itself) or an OvsMap. Anything else
// is left to encoding/json.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return appendString(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("unsupported number %v", v)
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64), nil
	case ovsdb.UUID:
		tag := `["named-uuid",`
		if ovsdb.IsValidUUID(v.GoUUID) {
			tag = `["uuid",`
		}
		return append(appendString(append(b, tag...), v.GoUUID), ']'), nil
	case ovsdb.OvsSet:
		if len(v.GoSet) == 1 {
			return appendValue(b, v.GoSet[0])
		}
		b, err := appendList(append(b, `["set",`...), v.GoSet, appendValue)
		if err != nil {
			return nil, err
		}
		return append(b, ']'), nil
	case ovsdb.OvsMap:
		b = append(b, `["map",[`...)
		first := true
		for k, e := range v.GoMap {
			if !first {
				b = append(b, ',')
			}
			first = false
			var err error
			if b, err = appendValue(append(b, '['), k); err != nil {
				return nil, err
			}
			if b, err = appendValue(append(b, ','), e); err != nil {
				return nil, err
			}
			b = append(b, ']')
		}
		return append(b, "]]"...), nil
	case StringMap:
		return appendStringMap(b, v), nil
	case StringSet:
		return appendStringSet(b, v), nil
	case nil:
		return append(b, "null"...), nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

// appendString encodes s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json makes it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, `\u00`...)
				b = append(b, hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hex = "0123456789abcdef"
