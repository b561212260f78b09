package wire

// StringMap is a column's value in an operation, a map of strings encoded
// as OVSDB's <map> straight from the Go map: ovsdb.OvsMap boxes every key
// and value into an interface{} first, and libovsdb's NativeToOvs builds
// that through reflection. It encodes the same way through encoding/json
// (libovsdb's own transact) and AppendTransact.
type StringMap map[string]string

// MarshalJSON encodes m as ["map", [[key, value], ...]].
func (m StringMap) MarshalJSON() ([]byte, error) { return appendStringMap(nil, m), nil }

// StringSet is a column's value in an operation, a set of strings (not
// UUIDs) encoded as OVSDB's <set> straight from the Go slice, as a lone
// element when it has one (as libovsdb encodes an ovsdb.OvsSet).
type StringSet []string

// MarshalJSON encodes s as ["set", [element, ...]], or its one element.
func (s StringSet) MarshalJSON() ([]byte, error) { return appendStringSet(nil, s), nil }

func appendStringMap(b []byte, m StringMap) []byte {
	b = append(b, `["map",[`...)
	first := true
	for k, v := range m {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(append(b, '['), k)
		b = append(appendString(append(b, ','), v), ']')
	}
	return append(b, "]]"...)
}

func appendStringSet(b []byte, s StringSet) []byte {
	if len(s) == 1 {
		return appendString(b, s[0])
	}
	b = append(b, `["set",[`...)
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e)
	}
	return append(b, "]]"...)
}
