package sandbox

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// TestRecordedNetns: the pod namespaces a node's Open vSwitch database file
// records on pods' interfaces are read offline, and nothing else is taken
// for one (down deletes only those: another sandbox's are never touched).
func TestRecordedNetns(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	db := filepath.Join(t.TempDir(), "conf.db")
	if out, err := deps.OVNCommand("ovsdb-tool", "create", db, filepath.Join(deps.OVNRoot(), "usr/share/openvswitch/vswitch.ovsschema")).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool create: %v: %s", err, out)
	}
	// Interfaces are kept only while a port of a bridge of the root row
	// holds them.
	if out, err := deps.OVNCommand("ovsdb-tool", "transact", db, `["Open_vSwitch",
		{"op":"insert","table":"Interface","uuid-name":"i1","row":{"name":"ovn1","external_ids":["map",[["k8s.ovn.org/netns","cni-1111"],["iface-id","ns_a"]]]}},
		{"op":"insert","table":"Interface","uuid-name":"i2","row":{"name":"ovn2","external_ids":["map",[["k8s.ovn.org/netns","cni-2222"]]]}},
		{"op":"insert","table":"Interface","uuid-name":"i3","row":{"name":"br-int","external_ids":["map",[]]}},
		{"op":"insert","table":"Port","uuid-name":"p1","row":{"name":"ovn1","interfaces":["named-uuid","i1"]}},
		{"op":"insert","table":"Port","uuid-name":"p2","row":{"name":"ovn2","interfaces":["named-uuid","i2"]}},
		{"op":"insert","table":"Port","uuid-name":"p3","row":{"name":"br-int","interfaces":["named-uuid","i3"]}},
		{"op":"insert","table":"Bridge","uuid-name":"b","row":{"name":"br-int","ports":["set",[["named-uuid","p1"],["named-uuid","p2"],["named-uuid","p3"]]]}},
		{"op":"insert","table":"Open_vSwitch","row":{"bridges":["named-uuid","b"]}}]`).CombinedOutput(); err != nil {
		t.Fatalf("ovsdb-tool transact: %v: %s", err, out)
	}
	got := recordedNetns(db)
	slices.Sort(got) // the database's row order
	if d := cmp.Diff([]string{"cni-1111", "cni-2222"}, got); d != "" {
		t.Errorf("recorded namespaces (-want +got):\n%s", d)
	}
	if got := recordedNetns(filepath.Join(t.TempDir(), "none.db")); got != nil {
		t.Errorf("a missing database records %v", got)
	}
}
