package ovsdb

import (
	"reflect"

	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

// fields maps every table of a database model to its model's fields, so
// the own monitor builds and changes models without libovsdb's mapper
// (which looks each column up by name and converts each value through
// reflection: a tenth of a converging zone controller's CPU).
type fields map[string]*tableFields

// tableFields are one table's columns as fields of its model.
type tableFields struct {
	typ     reflect.Type // the model's struct type
	uuid    int          // index of the _uuid field
	columns map[string]field
}

// field is one column's field in a model.
type field struct {
	index int
	// key and value are the atomic types of the column's elements (value
	// only for maps): ovsdb.TypeUUID elements arrive as ovsdb.UUID.
	key, value string
	// typ is the field's type.
	typ reflect.Type
}

// newFields reads the fields of every table of dbModel.
func newFields(dbModel model.DatabaseModel) fields {
	out := fields{}
	for name, ptr := range dbModel.Types() {
		ts := dbModel.Schema.Table(name)
		if ts == nil || ptr.Kind() != reflect.Pointer || ptr.Elem().Kind() != reflect.Struct {
			continue
		}
		st := ptr.Elem()
		tf := &tableFields{typ: st, uuid: -1, columns: map[string]field{}}
		for i := range st.NumField() {
			column := st.Field(i).Tag.Get("ovsdb")
			if column == "_uuid" {
				tf.uuid = i
				continue
			}
			cs := ts.Column(column)
			if cs == nil {
				continue
			}
			f := field{index: i, key: cs.Type, typ: st.Field(i).Type}
			if cs.TypeObj != nil && cs.TypeObj.Key != nil {
				f.key = cs.TypeObj.Key.Type
			}
			if cs.TypeObj != nil && cs.TypeObj.Value != nil {
				f.value = cs.TypeObj.Value.Type
			}
			tf.columns[column] = f
		}
		if tf.uuid >= 0 {
			out[name] = tf
		}
	}
	return out
}

// newModel builds the model of a row of table from its <row> (as an
// update2 "initial" or "insert" carries it) as libovsdb's CreateModel
// would; ok false if a column is one newModel leaves to libovsdb (or is
// not of the type the schema says, for libovsdb to report).
func (f fields) newModel(table, uuid string, row ovsdb.Row) (m model.Model, ok bool) {
	tf := f[table]
	if tf == nil {
		return nil, false
	}
	v := reflect.New(tf.typ)
	s := v.Elem()
	s.Field(tf.uuid).SetString(uuid)
	for column, value := range row {
		fl, known := tf.columns[column]
		if !known || !fl.set(s.Field(fl.index), value) {
			return nil, false
		}
	}
	return v.Interface().(model.Model), true
}

// set sets a field from a column's value in OVSDB notation (as decoded by
// package wire or libovsdb), reporting whether it could.
func (fl field) set(dst reflect.Value, value any) bool {
	switch fl.typ.Kind() {
	case reflect.String, reflect.Int, reflect.Bool, reflect.Float64:
		return setAtom(dst, fl.key, value)
	case reflect.Pointer:
		if set, isSet := value.(wire.StringSet); isSet {
			if len(set) != 1 {
				return false
			}
			value = set[0]
		}
		if set, isSet := value.(ovsdb.OvsSet); isSet {
			switch len(set.GoSet) {
			case 0:
				return true // nil
			case 1:
				value = set.GoSet[0]
			default:
				return false
			}
		}
		p := reflect.New(fl.typ.Elem())
		if !setAtom(p.Elem(), fl.key, value) {
			return false
		}
		dst.Set(p)
		return true
	case reflect.Slice:
		if fl.typ.Elem().Kind() != reflect.String {
			return false
		}
		var out []string
		if set, isSet := value.(wire.StringSet); isSet {
			if fl.key != ovsdb.TypeString {
				return false
			}
			out = set // the model's own: the cache keeps a copy
		} else if set, isSet := value.(ovsdb.OvsSet); isSet {
			out = make([]string, 0, len(set.GoSet))
			for _, e := range set.GoSet {
				s, ok := stringAtom(fl.key, e)
				if !ok {
					return false
				}
				out = append(out, s)
			}
		} else {
			s, ok := stringAtom(fl.key, value)
			if !ok {
				return false
			}
			out = []string{s}
		}
		if fl.typ != stringSlice {
			sv := reflect.MakeSlice(fl.typ, len(out), len(out))
			for i, s := range out {
				sv.Index(i).SetString(s)
			}
			dst.Set(sv)
			return true
		}
		dst.Set(reflect.ValueOf(out))
		return true
	case reflect.Map:
		if fl.typ != stringMap {
			return false
		}
		if m, isMap := value.(wire.StringMap); isMap {
			if fl.key != ovsdb.TypeString || fl.value != ovsdb.TypeString {
				return false
			}
			dst.Set(reflect.ValueOf(map[string]string(m))) // the model's own: the cache keeps a copy
			return true
		}
		m, isMap := value.(ovsdb.OvsMap)
		if !isMap {
			return false
		}
		out := make(map[string]string, len(m.GoMap))
		for k, e := range m.GoMap {
			ks, ok1 := stringAtom(fl.key, k)
			es, ok2 := stringAtom(fl.value, e)
			if !ok1 || !ok2 {
				return false
			}
			out[ks] = es
		}
		dst.Set(reflect.ValueOf(out))
		return true
	}
	return false
}

var (
	stringSlice = reflect.TypeFor[[]string]()
	stringMap   = reflect.TypeFor[map[string]string]()
)

// setAtom sets a string, integer, boolean or real field from an atom.
func setAtom(dst reflect.Value, typ string, value any) bool {
	switch dst.Kind() {
	case reflect.String:
		s, ok := stringAtom(typ, value)
		if ok {
			dst.SetString(s)
		}
		return ok
	case reflect.Int:
		n, ok := value.(float64) // how JSON numbers decode
		if ok && typ == ovsdb.TypeInteger {
			dst.SetInt(int64(n))
			return true
		}
	case reflect.Bool:
		b, ok := value.(bool)
		if ok && typ == ovsdb.TypeBoolean {
			dst.SetBool(b)
			return true
		}
	case reflect.Float64:
		n, ok := value.(float64)
		if ok && typ == ovsdb.TypeReal {
			dst.SetFloat(n)
			return true
		}
	}
	return false
}

// stringAtom is a string or UUID atom of the given type as a string.
func stringAtom(typ string, value any) (string, bool) {
	switch typ {
	case ovsdb.TypeUUID:
		u, ok := value.(ovsdb.UUID)
		return u.GoUUID, ok
	case ovsdb.TypeString:
		s, ok := value.(string)
		return s, ok
	}
	return "", false
}
