package ovsdb

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/wire"
)

// nbModel is the Northbound database model with its schema.
func nbModel(t *testing.T) model.DatabaseModel {
	t.Helper()
	c, err := nbdb.FullDatabaseModel()
	if err != nil {
		t.Fatal(err)
	}
	m, errs := model.NewDatabaseModel(nbdb.Schema(), c)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return m
}

// TestNewModelLikeLibovsdb: a row of every column kind the own monitor
// builds itself becomes the model libovsdb's CreateModel makes of it, and
// a row it cannot build (a column of another kind, a value not of the
// schema's type) is left to libovsdb.
func TestNewModelLikeLibovsdb(t *testing.T) {
	dbModel := nbModel(t)
	f := newFields(dbModel)
	set := func(e ...any) ovsdb.OvsSet { return ovsdb.OvsSet{GoSet: e} }
	uuid := func(u string) ovsdb.UUID { return ovsdb.UUID{GoUUID: u} }
	const u1, u2 = "6a6c3ee9-8b53-4c3c-9a7e-000000000001", "6a6c3ee9-8b53-4c3c-9a7e-000000000002"
	for _, tc := range []struct {
		name   string
		table  string
		row    ovsdb.Row
		leftTo bool // left to libovsdb
	}{
		{name: "nothing set", table: "Logical_Switch", row: ovsdb.Row{}},
		{name: "strings, a map and a set of UUIDs", table: "Logical_Switch", row: ovsdb.Row{
			"name":         "sw0",
			"other_config": ovsdb.OvsMap{GoMap: map[any]any{"subnet": "10.0.0.0/24"}},
			"external_ids": ovsdb.OvsMap{GoMap: map[any]any{"k8s.ovn.org/network": "n1", "owner": "a"}},
			"ports":        set(uuid(u1), uuid(u2)),
		}},
		{name: "a lone UUID stands for a set of one", table: "Logical_Switch", row: ovsdb.Row{"ports": uuid(u1)}},
		{name: "empty set and empty map", table: "Logical_Switch", row: ovsdb.Row{
			"ports": set(), "other_config": ovsdb.OvsMap{GoMap: map[any]any{}},
		}},
		{name: "integers, enums, booleans and optional values", table: "ACL", row: ovsdb.Row{
			"priority": 1001.0, "action": "allow-related", "direction": "to-lport", "match": "ip4",
			"log": true, "severity": "info", "name": set(), "label": 7.0, "tier": 2.0,
		}},
		{name: "an optional value as a set of one", table: "ACL", row: ovsdb.Row{"severity": set("alert")}},
		{name: "strings in sets, optional booleans and strings", table: "Logical_Switch_Port", row: ovsdb.Row{
			"name": "p0", "addresses": set("0a:58:0a:00:00:02 10.0.0.2", "router"), "port_security": "0a:58:0a:00:00:02",
			"enabled": false, "dynamic_addresses": set(), "tag_request": 5.0, "options": ovsdb.OvsMap{GoMap: map[any]any{"requested-chassis": "n1"}},
		}},
		{name: "an optional enum and a set of enums", table: "Load_Balancer", row: ovsdb.Row{
			"name": "lb0", "protocol": "tcp", "selection_fields": set("ip_src", "tp_src"),
			"vips": ovsdb.OvsMap{GoMap: map[any]any{"10.0.0.10:80": "10.0.0.2:8080"}},
		}},
		{name: "an optional UUID", table: "Logical_Router_Static_Route", row: ovsdb.Row{
			"ip_prefix": "0.0.0.0/0", "nexthop": "10.0.0.254", "bfd": uuid(u1), "policy": "dst-ip",
		}},
		{name: "a router port", table: "Logical_Router_Port", row: ovsdb.Row{
			"name": "rp0", "networks": "10.0.0.1/24", "ipv6_ra_configs": ovsdb.OvsMap{GoMap: map[any]any{"a": "b"}}, "gateway_chassis": set(),
		}},
		{name: "a map of integers is libovsdb's", table: "QoS", row: ovsdb.Row{
			"bandwidth": ovsdb.OvsMap{GoMap: map[any]any{"rate": 100.0}},
		}, leftTo: true},
		{name: "a number for a string", table: "Logical_Switch", row: ovsdb.Row{"name": 1.0}, leftTo: true},
		{name: "a string for a UUID", table: "Logical_Switch", row: ovsdb.Row{"ports": set(u1)}, leftTo: true},
		{name: "two values for an optional one", table: "ACL", row: ovsdb.Row{"severity": set("info", "alert")}, leftTo: true},
		{name: "a column the model lacks", table: "Logical_Switch", row: ovsdb.Row{"no_such": "x"}, leftTo: true},
		{name: "a table the model lacks", table: "No_Such", row: ovsdb.Row{}, leftTo: true},
	} {
		got, ok := f.newModel(tc.table, u2, tc.row)
		if ok == tc.leftTo {
			t.Errorf("%s: built %v, want %v", tc.name, ok, !tc.leftTo)
			continue
		}
		if !ok {
			continue
		}
		want, err := model.CreateModel(dbModel, tc.table, &tc.row, u2)
		if err != nil {
			t.Fatalf("%s: libovsdb: %v", tc.name, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-libovsdb +own):\n%s", tc.name, d)
		}
		// The same row as the monitor decodes it: sets and maps of
		// strings as wire.StringSet and wire.StringMap.
		got, ok = f.newModel(tc.table, u2, nativeRow(tc.row))
		if d := cmp.Diff(want, got); !ok || d != "" {
			t.Errorf("%s, decoded natively: built %v (-libovsdb +own):\n%s", tc.name, ok, d)
		}
	}
}

// nativeRow is row as wire.Decoding{Strings: true} decodes it.
func nativeRow(row ovsdb.Row) ovsdb.Row {
	out := ovsdb.Row{}
	for c, v := range row {
		out[c] = v
		switch v := v.(type) {
		case ovsdb.OvsSet:
			var set wire.StringSet
			for _, e := range v.GoSet {
				if s, ok := e.(string); ok {
					set = append(set, s)
				}
			}
			if len(set) > 0 && len(set) == len(v.GoSet) {
				out[c] = set
			}
		case ovsdb.OvsMap:
			m := wire.StringMap{}
			for k, e := range v.GoMap {
				ks, ok1 := k.(string)
				es, ok2 := e.(string)
				if ok1 && ok2 {
					m[ks] = es
				}
			}
			if len(m) > 0 && len(m) == len(v.GoMap) {
				out[c] = m
			}
		}
	}
	return out
}
