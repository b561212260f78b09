package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// DecodeTableUpdates2 decodes a <table-updates2> object (RFC 7047 as
// extended by ovsdb-server(7): the result of monitor_cond and the last
// parameter of update2 and update3) into exactly what encoding/json makes
// of it with libovsdb's types: every number a float64, every ["uuid", s] a
// UUID, every ["set", [...]] an OvsSet and every ["map", [...]] an OvsMap,
// row-update members matched as encoding/json matches struct fields.
func DecodeTableUpdates2(b []byte) (ovsdb.TableUpdates2, error) {
	return Decoding{}.TableUpdates2(b)
}

// Decoding is how a <table-updates2> decodes. The zero value decodes as
// encoding/json does with libovsdb's types.
type Decoding struct {
	// Strings: a set of one or more strings (not UUIDs) decodes as a
	// StringSet and a map of one or more strings to strings as a
	// StringMap, without an interface{} per element (what a cache builds
	// its models of; Generic turns them into libovsdb's types).
	Strings bool
}

// TableUpdates2 decodes a <table-updates2> as DecodeTableUpdates2 does,
// sets and maps of strings as d says.
func (d Decoding) TableUpdates2(b []byte) (ovsdb.TableUpdates2, error) {
	p := newParser(b)
	p.strings = d.Strings
	var out ovsdb.TableUpdates2
	if err := p.tableUpdates(&out); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return out, nil
}

// parser reads one JSON text from b, position i.
type parser struct {
	b []byte
	i int
	// names interns short strings that repeat across rows: column names,
	// and map keys and values (external_ids, options: a network's rows
	// repeat its name and owner). The cache keeps what is decoded, so
	// sharing them saves its memory too.
	names map[string]string
	// values counts the map values interned, which have a budget of
	// their own (maxInternValues) so that they never crowd the names out.
	values int
	// strings: decode sets and maps of strings natively (Decoding).
	strings bool
}

const (
	maxInterned    = 64   // longest string interned
	maxInternNames = 8192 // most strings interned per parse
	// maxInternValues of them may be map values.
	maxInternValues = maxInternNames / 2
)

// newParser starts a parse of b, its interning map sized to b (most
// notifications are a row or two: a map for hundreds of names would be most
// of their cost).
func newParser(b []byte) *parser {
	return &parser{b: b, names: make(map[string]string, min(256, 8+len(b)/256))}
}

var errEnd = errors.New("unexpected end of JSON input")

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

func (p *parser) expect(c byte) error {
	if p.peek() != c {
		if p.i >= len(p.b) {
			return errEnd
		}
		return p.errorf("want %q, found %q", c, p.b[p.i])
	}
	p.i++
	return nil
}

// end checks that nothing but white space follows.
func (p *parser) end() error {
	if p.ws(); p.i < len(p.b) {
		return p.errorf("data after the top-level value")
	}
	return nil
}

// literal reads null, true or false.
func (p *parser) literal(word string) bool {
	if len(p.b)-p.i >= len(word) && string(p.b[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// null reads null if it is next.
func (p *parser) null() bool {
	return p.peek() == 'n' && p.literal("null")
}

// object reads an object, calling member for each member after its colon.
func (p *parser) object(member func(name string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.peek() == '}' {
		p.i++
		return nil
	}
	for {
		name, err := p.str(true)
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		case 0:
			return errEnd
		default:
			return p.errorf("want ',' or '}' after an object member")
		}
	}
}

// array reads an array, calling elem for each element.
func (p *parser) array(elem func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if p.peek() == ']' {
		p.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return nil
		case 0:
			return errEnd
		default:
			return p.errorf("want ',' or ']' after an array element")
		}
	}
}

// str reads a string. Strings of plain ASCII are sliced from the input;
// any other (escapes, other UTF-8, invalid bytes) is left to encoding/json,
// so that it comes out byte for byte as there.
func (p *parser) str(intern bool) (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			raw := p.b[start:p.i]
			p.i++
			if intern && len(raw) <= maxInterned {
				if s, ok := p.names[string(raw)]; ok {
					return s, nil
				}
				s := string(raw)
				if len(p.names) < maxInternNames {
					p.names[s] = s
				}
				return s, nil
			}
			return string(raw), nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return p.slowStr(start - 1)
		}
		p.i++
	}
	return "", errEnd
}

// slowStr decodes the string token starting at its opening quote.
func (p *parser) slowStr(open int) (string, error) {
	p.i = open + 1
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '\\':
			p.i += 2
			continue
		case '"':
			p.i++
			var s string
			if err := json.Unmarshal(p.b[open:p.i], &s); err != nil {
				return "", fmt.Errorf("offset %d: %w", open, err)
			}
			return s, nil
		}
		p.i++
	}
	return "", errEnd
}

// number reads a JSON number as a float64, as encoding/json does into an
// interface{}.
func (p *parser) number() (float64, error) {
	start := p.i
	if err := p.scanNumber(); err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
	if err != nil {
		return 0, fmt.Errorf("offset %d: number %s: %w", start, p.b[start:p.i], err)
	}
	return f, nil
}

// scanNumber reads past a JSON number, checking its syntax only (as
// encoding/json does for a value it skips: an exponent out of float64's
// range is no error there).
func (p *parser) scanNumber() error {
	b := p.b
	i := p.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return p.errorf("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return p.errorf("invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return p.errorf("invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	p.i = i
	return nil
}

// value reads any JSON value as encoding/json does into an interface{}.
func (p *parser) value() (any, error) {
	switch c := p.peek(); {
	case c == '"':
		return p.str(false)
	case c == '{':
		m := map[string]any{}
		err := p.object(func(name string) error {
			v, err := p.value()
			m[name] = v
			return err
		})
		return m, err
	case c == '[':
		s := []any{}
		err := p.array(func() error {
			v, err := p.value()
			s = append(s, v)
			return err
		})
		return s, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't' && p.literal("true"):
		return true, nil
	case c == 'f' && p.literal("false"):
		return false, nil
	case c == 'n' && p.literal("null"):
		return nil, nil
	case c == 0:
		return nil, errEnd
	default:
		return nil, p.errorf("invalid character %q looking for a value", c)
	}
}

// atom reads a set or map element on the fast path: a string, number or
// boolean, or a ["uuid", s] / ["named-uuid", s] pair. ok is false for
// anything else (the datum is then decoded the slow way).
func (p *parser) atom(intern bool) (v any, ok bool, err error) {
	switch c := p.peek(); {
	case c == '"':
		s, err := p.str(intern)
		return s, true, err
	case c == '-' || (c >= '0' && c <= '9'):
		f, err := p.number()
		if errors.Is(err, strconv.ErrRange) {
			return nil, false, nil // for libovsdb's decoding (slowDatum)
		}
		return f, true, err
	case c == 't' && p.literal("true"):
		return true, true, nil
	case c == 'f' && p.literal("false"):
		return false, true, nil
	case c == '[':
		u, ok, err := p.uuidPair()
		return u, ok, err
	}
	return nil, false, nil
}

// uuidPair reads ["uuid", s] or ["named-uuid", s]; ok is false, and the
// position undefined, if the array is anything else.
func (p *parser) uuidPair() (ovsdb.UUID, bool, error) {
	p.i++ // '['
	if p.peek() != '"' {
		return ovsdb.UUID{}, false, nil
	}
	tag, err := p.str(false)
	if err != nil || (tag != "uuid" && tag != "named-uuid") {
		return ovsdb.UUID{}, false, err
	}
	if p.peek() != ',' {
		return ovsdb.UUID{}, false, nil
	}
	p.i++
	if p.peek() != '"' {
		return ovsdb.UUID{}, false, nil
	}
	s, err := p.str(false)
	if err != nil || p.peek() != ']' {
		return ovsdb.UUID{}, false, err
	}
	p.i++
	return ovsdb.UUID{GoUUID: s}, true, nil
}

// datum reads a column's value: an atom, a uuid, a set or a map.
func (p *parser) datum() (any, error) {
	if c := p.peek(); c == '-' || (c >= '0' && c <= '9') {
		f, err := p.number()
		if errors.Is(err, strconv.ErrRange) {
			// encoding/json leaves a number out of float64's range nil
			// (its error, libovsdb's Row drops).
			return nil, nil
		}
		return f, err
	}
	if p.peek() != '[' {
		return p.value()
	}
	start := p.i
	v, ok, err := p.fastDatum()
	if err != nil {
		return nil, err
	}
	if ok {
		return v, nil
	}
	// Not the usual shape: decode it as libovsdb does.
	p.i = start
	if err := p.skip(); err != nil {
		return nil, err
	}
	return slowDatum(p.b[start:p.i])
}

// fastDatum reads an array datum of the usual shapes.
func (p *parser) fastDatum() (v any, ok bool, err error) {
	open := p.i
	p.i++ // '['
	if p.peek() != '"' {
		return nil, false, nil
	}
	tag, err := p.str(false)
	if err != nil {
		return nil, false, err
	}
	switch tag {
	case "uuid", "named-uuid":
		p.i = open
		u, ok, err := p.uuidPair()
		return u, ok, err
	case "set":
		if p.expect(',') != nil || p.peek() != '[' {
			return nil, false, nil
		}
		var set []any
		var strs StringSet // while every element is a string (p.strings)
		p.i++
		for n := 0; p.peek() != ']'; n++ {
			if n > 0 {
				if p.peek() != ',' {
					return nil, false, nil
				}
				p.i++
			}
			if p.strings && set == nil && p.peek() == '"' {
				s, err := p.str(false)
				if err != nil {
					return nil, false, err
				}
				strs = append(strs, s)
				continue
			}
			if set == nil {
				set = make([]any, 0, len(strs)+4)
				for _, s := range strs {
					set = append(set, s)
				}
			}
			v, ok, err := p.atom(false)
			if err != nil || !ok {
				return nil, false, err
			}
			set = append(set, v)
		}
		p.i++
		if p.peek() != ']' {
			return nil, false, nil
		}
		p.i++
		if set == nil && len(strs) > 0 {
			return strs, true, nil
		}
		if set == nil {
			set = []any{}
		}
		return ovsdb.OvsSet{GoSet: set}, true, nil
	case "map":
		if p.expect(',') != nil || p.peek() != '[' {
			return nil, false, nil
		}
		var m map[any]any
		var strs StringMap // while every key and value is a string (p.strings)
		if !p.strings {
			m = make(map[any]any, 4)
		}
		p.i++
		first := true
		for p.peek() != ']' {
			if !first {
				if p.peek() != ',' {
					return nil, false, nil
				}
				p.i++
			}
			first = false
			if p.peek() != '[' {
				return nil, false, nil
			}
			p.i++
			if m == nil {
				ks, vs, ok, err := p.stringPair()
				if err != nil {
					return nil, false, err
				}
				if ok {
					if strs == nil {
						strs = make(StringMap, 4)
					}
					strs[ks] = vs
					continue
				}
				m = make(map[any]any, len(strs)+4)
				for k, v := range strs {
					m[k] = v
				}
			}
			k, ok, err := p.atom(true)
			if err != nil || !ok || p.peek() != ',' {
				return nil, false, err
			}
			p.i++
			v, ok, err := p.atom(false)
			if err != nil || !ok || p.peek() != ']' {
				return nil, false, err
			}
			p.i++
			m[k] = v
		}
		p.i++
		if p.peek() != ']' {
			return nil, false, nil
		}
		p.i++
		if m == nil && len(strs) > 0 {
			return strs, true, nil
		}
		if m == nil {
			m = map[any]any{}
		}
		return ovsdb.OvsMap{GoMap: m}, true, nil
	}
	return nil, false, nil
}

// stringPair reads the rest of a map pair `"key","value"]` of two strings
// (after its '['); ok false, and the position back at the pair's key, if
// it is anything else.
func (p *parser) stringPair() (k, v string, ok bool, err error) {
	start := p.i
	if p.peek() != '"' {
		return "", "", false, nil
	}
	if k, err = p.str(true); err != nil {
		return "", "", false, err
	}
	if p.peek() != ',' {
		p.i = start
		return "", "", false, nil
	}
	p.i++
	if p.peek() != '"' {
		p.i = start
		return "", "", false, nil
	}
	before := len(p.names)
	if v, err = p.str(p.values < maxInternValues); err != nil {
		return "", "", false, err
	}
	p.values += len(p.names) - before
	if p.peek() != ']' {
		p.i = start
		return "", "", false, nil
	}
	p.i++
	return k, v, true, nil
}

// Generic is a value as the zero Decoding makes it: a StringSet as an
// OvsSet, a StringMap as an OvsMap, anything else as it is.
func Generic(v any) any {
	switch v := v.(type) {
	case StringSet:
		set := make([]any, len(v))
		for i, e := range v {
			set[i] = e
		}
		return ovsdb.OvsSet{GoSet: set}
	case StringMap:
		m := make(map[any]any, len(v))
		for k, e := range v {
			m[k] = e
		}
		return ovsdb.OvsMap{GoMap: m}
	}
	return v
}

// GenericUpdates makes every StringSet and StringMap in the rows of u
// generic (Generic), in place.
func GenericUpdates(u ovsdb.TableUpdates2) {
	for _, rows := range u {
		for _, ru := range rows {
			if ru == nil {
				continue
			}
			for _, r := range []*ovsdb.Row{ru.Initial, ru.Insert, ru.Modify, ru.Delete} {
				if r == nil {
					continue
				}
				for c, v := range *r {
					switch v.(type) {
					case StringSet, StringMap:
						(*r)[c] = Generic(v)
					}
				}
			}
		}
	}
}

// slowDatum decodes a datum of an unusual shape with libovsdb itself
// (which panics on some malformed ones: those are errors here).
func slowDatum(raw []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, datumError{fmt.Errorf("malformed datum %.64s", raw)}
		}
	}()
	doc := make([]byte, 0, len(raw)+6)
	doc = append(append(append(doc, `{"v":`...), raw...), '}')
	var row ovsdb.Row
	if err := json.Unmarshal(doc, &row); err != nil {
		return nil, datumError{err}
	}
	return row["v"], nil
}

// datumError is a well-formed JSON value libovsdb cannot make a datum of.
// libovsdb converts a row's values only after decoding all of them, so a
// column given again later replaces a bad value before it is converted.
type datumError struct{ error }

// row reads a <row> object, or null (a nil row).
func (p *parser) row() (*ovsdb.Row, error) {
	if p.null() {
		return nil, nil
	}
	if p.peek() != '{' {
		if _, err := p.value(); err != nil {
			return nil, err
		}
		return nil, p.errorf("a row is not an object")
	}
	r := make(ovsdb.Row, 8)
	var bad map[string]error // columns whose (last) value is no datum
	err := p.object(func(name string) error {
		v, err := p.datum()
		var de datumError
		switch {
		case errors.As(err, &de):
			if bad == nil {
				bad = map[string]error{}
			}
			bad[name] = err
		case err != nil:
			return err
		default:
			delete(bad, name)
		}
		r[name] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, err := range bad {
		return nil, err
	}
	return &r, nil
}

// rowUpdate reads a <row-update2>, or null.
func (p *parser) rowUpdate() (*ovsdb.RowUpdate2, error) {
	if p.null() {
		return nil, nil
	}
	u := &ovsdb.RowUpdate2{}
	err := p.object(func(name string) error {
		var field **ovsdb.Row
		switch name {
		case "initial":
			field = &u.Initial
		case "insert":
			field = &u.Insert
		case "modify":
			field = &u.Modify
		case "delete":
			field = &u.Delete
		default:
			field = foldField(u, name)
		}
		if field == nil {
			return p.skip() // as encoding/json skips a member it has no field for
		}
		r, err := p.row()
		*field = r
		return err
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// foldField matches a member name to a field the way encoding/json does
// when no field matches exactly: ignoring case.
func foldField(u *ovsdb.RowUpdate2, name string) **ovsdb.Row {
	switch {
	case strings.EqualFold(name, "initial"):
		return &u.Initial
	case strings.EqualFold(name, "insert"):
		return &u.Insert
	case strings.EqualFold(name, "modify"):
		return &u.Modify
	case strings.EqualFold(name, "delete"):
		return &u.Delete
	}
	return nil
}

// tableUpdates reads a <table-updates2>, or null (a nil map).
func (p *parser) tableUpdates(out *ovsdb.TableUpdates2) error {
	if p.null() {
		*out = nil
		return nil
	}
	if *out == nil {
		*out = ovsdb.TableUpdates2{}
	}
	return p.object(func(table string) error {
		if p.null() {
			(*out)[table] = nil
			return nil
		}
		// A repeated member replaces the earlier one, as encoding/json
		// decodes each map element afresh.
		tu := ovsdb.TableUpdate2{}
		(*out)[table] = tu
		return p.object(func(uuid string) error {
			u, err := p.rowUpdate()
			tu[uuid] = u
			return err
		})
	})
}
