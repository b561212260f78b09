package ovsdb_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestOwnMonitorCachesLikeLibovsdb: on one real Northbound, a client with
// the own monitor and one monitored by libovsdb hold the same rows after
// every step: a filled database at connection, then inserts, set and map
// mutations (the update2 diffs, which it applies itself to sets of strings
// and maps of strings), updates and deletes made by ovn-nbctl.
func TestOwnMonitorCachesLikeLibovsdb(t *testing.T) {
	z := ovntest.StartZone(t, "ownmonitor")
	z.MustNBCtl("ls-add", "sw0", "--", "set", "logical_switch", "sw0", "other_config:subnet=10.0.0.0/24", "external_ids:owner=a")
	for i := range 5 {
		z.MustNBCtl("lsp-add", "sw0", fmt.Sprintf("p%d", i), "--", "lsp-set-addresses", fmt.Sprintf("p%d", i),
			fmt.Sprintf("0a:58:0a:00:00:%02x 10.0.0.%d", i+2, i+2))
	}
	z.MustNBCtl("lr-add", "r0", "--", "lrp-add", "r0", "r0-sw0", "0a:58:0a:00:00:01", "10.0.0.1/24", "fd00::1/64")
	z.MustNBCtl("acl-add", "sw0", "to-lport", "1001", `ip4.src == 10.0.0.2 && tcp.dst == 80`, "allow-related")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The view holds most tables in place of the cache (every change of
	// every kind of column applied by the view alone); the cache keeps
	// the routes, NB_Global and the rest (changes of sets and maps of
	// strings applied here, the others by libovsdb).
	viewed := []string{"Logical_Switch", "Logical_Switch_Port", "Port_Group", "Logical_Router", "Logical_Router_Port",
		"ACL", "Gateway_Chassis", "Load_Balancer", "NAT"}
	connect := func(own bool) client.Client {
		c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, OwnMonitor: own, Views: viewed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	own, lib := connect(true), connect(false)
	same := func(step string) {
		t.Helper()
		var last string
		err := proc.WaitFor(10*time.Second, 10*time.Millisecond, func() (bool, error) {
			// Sets are unordered: libovsdb's own order of a set after a
			// diff varies from run to run.
			v := own.(interface {
				View(*cache.TableCache) *ovsdb.View
			}).View(own.Cache())
			if v == nil {
				last = "the own monitor keeps no view"
				return false, nil
			}
			cached := rows(t, own.Cache())
			for _, table := range viewed {
				if len(cached[table]) > 0 {
					last = fmt.Sprintf("the cache holds %d rows of %s, which the view holds", len(cached[table]), table)
					return false, nil
				}
			}
			all := rows(t, own.Cache())
			for _, table := range viewed {
				if vr := ovsdb.ViewRows(v, table); len(vr) > 0 {
					all[table] = vr
				}
			}
			libRows := rows(t, lib.Cache())
			last = cmp.Diff(libRows, all, cmpopts.SortSlices(func(a, b string) bool { return a < b }))
			if last != "" {
				last = "the caches differ (-libovsdb +own cache and view):\n" + last
				return false, nil
			}
			// The view's indexes by name agree with its rows.
			for _, table := range viewed {
				f, named := own.Cache().DatabaseModel().Types()[table].Elem().FieldByName("Name")
				if !named || f.Type.Kind() != reflect.String {
					continue // indexed by name only with a name that is a string
				}
				byName := map[string][]string{}
				for u, m := range all[table] {
					name := reflect.ValueOf(m).Elem().FieldByName("Name").String()
					byName[name] = append(byName[name], u)
					if uuids, ok := v.Named(table, name); !ok || !slices.Contains(uuids, u) {
						last = fmt.Sprintf("%s %q (%s) not found by name in the view: %v %v", table, name, u, uuids, ok)
						return false, nil
					}
				}
				if d := cmp.Diff(byName, ovsdb.ViewNames(v, table), cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); d != "" {
					last = fmt.Sprintf("the view's names of %s differ from the cache's (-cache +view):\n%s", table, d)
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: %s", step, last)
		}
	}
	same("connected")
	modified, inserted := ovsdb.ModifiedHere(), ovsdb.InsertedHere()
	if n := len(ovsdb.ViewRows(own.(interface {
		View(*cache.TableCache) *ovsdb.View
	}).View(own.Cache()), "Logical_Switch_Port")); n != 5 {
		t.Fatalf("the own monitor's view has %d switch ports, want 5", n)
	}
	for _, step := range [][]string{
		{"lsp-add", "sw0", "p9", "--", "lsp-set-addresses", "p9", "router"},
		{"set", "logical_switch", "sw0", "other_config:exclude_ips=10.0.0.3", "external_ids:owner=b"},
		{"remove", "logical_switch", "sw0", "other_config", "subnet"},
		{"lsp-set-addresses", "p1", "0a:58:0a:00:00:99 10.0.0.99", "dynamic"},
		{"lsp-set-port-security", "p2", "0a:58:0a:00:00:04 10.0.0.4"},
		{"lsp-set-options", "p3", "requested-chassis=node-a", "iface-id-ver=1"},
		{"lsp-set-enabled", "p4", "disabled"},
		{"lsp-del", "p0"},
		{"lrp-set-gateway-chassis", "r0-sw0", "chassis-1", "10"},
		{"lr-route-add", "r0", "0.0.0.0/0", "10.0.0.254"},
		{"acl-del", "sw0"},
		{"remove", "logical_switch", "sw0", "other_config", "exclude_ips"},
		{"lsp-set-addresses", "p3"},
		{"lsp-set-options", "p3"},
		{"lsp-del", "p9", "--", "lsp-del", "p1"},
		{"ls-add", "sw1", "--", "lsp-add", "sw1", "q0", "--", "lsp-set-type", "q0", "localnet"},
		{"lb-add", "lb0", "10.0.0.10:80", "10.0.0.2:8080,10.0.0.4:8080", "tcp"},
		{"lr-nat-add", "r0", "snat", "172.16.0.1", "10.0.0.0/24"},
		{"--", "--id=@g", "create", "port_group", "name=pg0", "ports=[]", "--", "set", "port_group", "pg0", "external_ids:k=v"},
		{"lsp-set-enabled", "p4", "enabled"},
		{"clear", "logical_switch_port", "p4", "enabled"},
		{"acl-add", "sw0", "from-lport", "1002", "ip4", "drop"},
		{"set", "logical_router_port", "r0-sw0", "peer=sw0-r0", "--", "set", "acl", ".", "name=acl0", "severity=info"},
		{"set", "logical_router_port", "r0-sw0", "peer=other", "--", "set", "acl", ".", "severity=alert"},
		{"clear", "logical_router_port", "r0-sw0", "peer", "--", "clear", "acl", ".", "severity"},
		{"set", "load_balancer", "lb0", "selection_fields=ip_src,tp_dst", "protocol=udp"},
		{"set", "load_balancer", "lb0", "selection_fields=ip_src"},
		{"set", "nat", ".", "external_port_range=\"1000-2000\"", "options:stateless=true"},
		{"set", "gateway_chassis", ".", "priority=20"},
		{"set", "logical_switch", "sw1", "name=sw1-renamed"},
		{"pg-set-ports", "pg0", "p2", "p3"},
		{"ls-del", "sw1-renamed"},
	} {
		z.MustNBCtl(step...)
		same(fmt.Sprint(step))
	}
	if n := ovsdb.ModifiedHere() - modified; n < 10 {
		t.Errorf("the own monitor modified %d rows itself, want at least the 10 steps' set and map changes", n)
	}
	if n := ovsdb.InsertedHere() - inserted; n < 8 {
		t.Errorf("the own monitor built %d inserted rows itself, want at least the 8 steps' new ports, routes, ACLs, load balancers and NATs", n)
	}
}

// rows lists every row of every table of a cache, by table and UUID.
func rows(t *testing.T, tc *cache.TableCache) map[string]map[string]model.Model {
	t.Helper()
	if tc == nil {
		return nil
	}
	out := map[string]map[string]model.Model{}
	var names []string
	for name := range tc.DatabaseModel().Types() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rc := tc.Table(name)
		if rc == nil || rc.Len() == 0 {
			continue
		}
		out[name] = map[string]model.Model{}
		for uuid, m := range rc.Rows() {
			if reflect.ValueOf(m).IsNil() {
				t.Fatalf("%s %s: nil row", name, uuid)
			}
			out[name][uuid] = m
		}
	}
	return out
}

// TestUnmonitoredColumns: columns left out of the own monitor stay unset
// in the rows it holds while the others follow every change.
func TestUnmonitoredColumns(t *testing.T) {
	z := ovntest.StartNB(t, "unmonitored")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, OwnMonitor: true,
		Views: []string{"Logical_Switch", "Logical_Switch_Port"}, Unmonitored: []string{"up", "tag"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	z.MustNBCtl("ls-add", "sw0", "--", "lsp-add", "sw0", "p0", "--", "set", "logical_switch_port", "p0", "up=true", "tag_request=7")
	z.MustNBCtl("lsp-set-addresses", "p0", "0a:58:0a:00:00:05 10.0.0.5")
	err = proc.WaitFor(10*time.Second, 10*time.Millisecond, func() (bool, error) {
		ports, err := ovsdb.List(ctx, c, func(*nbdb.LogicalSwitchPort) bool { return true })
		if err != nil || len(ports) != 1 {
			return false, err
		}
		p := ports[0]
		if p.Up != nil {
			return false, fmt.Errorf("the unmonitored up column is %v", *p.Up)
		}
		return p.TagRequest != nil && *p.TagRequest == 7 && slices.Equal(p.Addresses, []string{"0a:58:0a:00:00:05 10.0.0.5"}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestViewOnlyOfMonitoredTables: a view asked for a table the monitor does
// not follow leaves it to libovsdb (it would read as empty otherwise).
func TestViewOnlyOfMonitoredTables(t *testing.T) {
	z := ovntest.StartNB(t, "viewmonitored")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, OwnMonitor: true,
		Tables: []model.Model{&nbdb.LogicalSwitch{}}, Views: []string{"Logical_Switch", "Logical_Switch_Port"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v := c.(interface {
		View(*cache.TableCache) *ovsdb.View
	}).View(c.Cache())
	if !v.Follows("Logical_Switch") || v.Follows("Logical_Switch_Port") {
		t.Errorf("the view follows Logical_Switch %v (want true) and Logical_Switch_Port %v (want false: not monitored)",
			v.Follows("Logical_Switch"), v.Follows("Logical_Switch_Port"))
	}
}

// TestWhere: a monitor with a condition holds the rows that match it only,
// and follows rows into and out of it.
func TestWhere(t *testing.T) {
	z := ovntest.StartNB(t, "where")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, OwnMonitor: true, Tables: []model.Model{&nbdb.LogicalSwitchPort{}},
		Where: []ovsdb.Condition{{Table: &nbdb.LogicalSwitchPort{}, Column: "options", Function: "includes",
			Value: []any{"map", []any{[]any{"activation-strategy", "rarp"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	z.MustNBCtl("ls-add", "sw0", "--", "lsp-add", "sw0", "p0", "--", "lsp-add", "sw0", "p1",
		"--", "set", "logical_switch_port", "p1", "options:activation-strategy=rarp")
	held := func(want ...string) {
		t.Helper()
		var names []string
		err := proc.WaitFor(10*time.Second, 10*time.Millisecond, func() (bool, error) {
			ports, err := ovsdb.List(ctx, c, func(*nbdb.LogicalSwitchPort) bool { return true })
			if err != nil {
				return false, err
			}
			names = names[:0]
			for _, p := range ports {
				names = append(names, p.Name)
			}
			sort.Strings(names)
			return slices.Equal(names, want), nil
		})
		if err != nil {
			t.Fatalf("the monitor holds %v, want %v", names, want)
		}
	}
	held("p1")
	z.MustNBCtl("set", "logical_switch_port", "p0", "options:activation-strategy=rarp")
	held("p0", "p1")
	z.MustNBCtl("remove", "logical_switch_port", "p1", "options", "activation-strategy")
	held("p0")
}
