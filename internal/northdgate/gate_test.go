package northdgate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/model"
	libovsdb "github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/northdgate"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

func TestClassify(t *testing.T) {
	op := func(kind, table string) libovsdb.Operation { return libovsdb.Operation{Op: kind, Table: table} }
	tests := []struct {
		name string
		ops  []libovsdb.Operation
		want northdgate.Change
	}{
		{"ports and ACLs only", []libovsdb.Operation{op("insert", "Logical_Switch_Port"), op("delete", "ACL"), op("mutate", "Logical_Switch")}, northdgate.Change{}},
		{"a switch created", []libovsdb.Operation{op("insert", "Logical_Switch_Port"), op("insert", "Logical_Switch")}, northdgate.Change{Creates: true}},
		{"a router deleted", []libovsdb.Operation{op("delete", "Logical_Router"), op("update", "Logical_Switch")}, northdgate.Change{Deletes: true}},
		{"both", []libovsdb.Operation{op("delete", "Logical_Switch"), op("insert", "Logical_Router")}, northdgate.Change{Creates: true, Deletes: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, northdgate.Classify(tc.ops)); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
	g := &northdgate.Gate{}
	if err := g.Do(context.Background(), northdgate.Change{Creates: true, Deletes: true}, func() error { return nil }); err != northdgate.ErrMixed {
		t.Errorf("a mixed write: %v, want ErrMixed", err)
	}
}

// network is a network's rows as the zone writes them: a switch with a port
// and a router with a port (a datapath of each kind), named after name.
func network(name string) []model.Model {
	// IDs are names, as in internal/rows/topology: another name is another row.
	return []model.Model{
		&nbdb.LogicalSwitchPort{UUID: "lsp:p-" + name, Name: "p-" + name},
		&nbdb.LogicalSwitch{UUID: "ls:sw-" + name, Name: "sw-" + name, Ports: []string{"lsp:p-" + name}},
		&nbdb.LogicalRouterPort{UUID: "lrp:rp-" + name, Name: "rp-" + name, MAC: "0a:58:0a:01:00:01", Networks: []string{"10.1.0.1/24"}},
		&nbdb.LogicalRouter{UUID: "lr:lr-" + name, Name: "lr-" + name, Ports: []string{"lrp:rp-" + name}},
	}
}

var tables = []model.Model{&nbdb.LogicalSwitchPort{}, &nbdb.LogicalSwitch{}, &nbdb.LogicalRouterPort{}, &nbdb.LogicalRouter{}}

// syncer is a Syncer for the zone's NB, as the zone controller's.
func syncer(t testing.TB, z *ovntest.Zone) *ovsdbsync.Syncer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Indexes: ovsdbsync.Indexes(
		nbdb.LogicalSwitchPortTable, nbdb.LogicalSwitchTable, nbdb.LogicalRouterPortTable, nbdb.LogicalRouterTable)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := ovsdbsync.New(c, tables...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// northdAffected reports whether the installed ovn-northd has the
// ods_assign_array_index abort (26.03.0 and 26.03.1).
func northdAffected(t *testing.T) (bool, string) {
	deps.Require(t, deps.CheckOVN)
	out, err := deps.OVNCommand("ovn-northd", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
	return len(version) == 2 && (version[1] == "26.03.0" || version[1] == "26.03.1"), strings.Join(version, " ")
}

// TestGateKeepsNorthdAlive writes through our own path (ovsdbsync.Syncer, one
// transaction per owner) the two patterns that abort ovn-northd
// 26.03.0/26.03.1 (ods_assign_array_index) while northd is busy — stopped
// here, standing in for a long run:
//
//   - two networks: network a is deleted and network b created, both
//     between two northd runs (as the zone's parallel workers do);
//   - one network whose datapaths are replaced (a plan deleting and creating
//     datapaths in one transaction).
//
// Written directly, northd aborts. Through the gate, northd sees deletions and
// creations in separate runs: it stays up and renders the new datapaths. In
// the gated cases the gate itself holds the writes back: the test lets northd
// run again only once a barrier has bumped nb_cfg, i.e. once the gate waits
// for northd.
func TestGateKeepsNorthdAlive(t *testing.T) {
	affected, version := northdAffected(t)
	scenarios := []struct {
		name string
		// write makes the change with sync (the Syncer's or the gate's).
		write  func(sync func(owner string, rows []model.Model) error) error
		gone   string // a switch that must be gone afterwards
		wanted string // a switch that must have a datapath afterwards
	}{
		{"two networks", func(sync func(string, []model.Model) error) error {
			// Both commit while northd is stopped, so it sees them in one
			// run whatever their order; in this order the reproduction does
			// not depend on which of two parallel writers commits first.
			return errors.Join(sync("a", nil), sync("b", network("b")))
		}, "sw-a", "sw-b"},
		{"one network replaced", func(sync func(string, []model.Model) error) error {
			return sync("a", network("a2"))
		}, "sw-a", "sw-a2"},
	}
	for _, sc := range scenarios {
		for _, gated := range []bool{false, true} {
			name := sc.name + map[bool]string{false: ", written directly", true: ", through the gate"}[gated]
			t.Run(name, func(t *testing.T) {
				if !gated && !affected {
					t.Skipf("%s is not affected", version)
				}
				z := ovntest.StartZone(t, "zone")
				northd := z.Processes()["northd"]
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				s := syncer(t, z)
				var g *northdgate.Gate // nil: Sync writes directly
				if gated {
					g = &northdgate.Gate{NB: z.NBClient(), Timeout: 10 * time.Second}
				}
				write := func(owner string, rows []model.Model) error { _, err := g.Sync(ctx, s, owner, rows); return err }
				// The networks in place, as a running controller leaves them.
				for _, n := range []string{"base", "a"} {
					if err := write(n, network(n)); err != nil {
						t.Fatal(err)
					}
				}
				z.MustSync()
				nbCfg := func() int { // 0 on error (the waiter below runs outside the test's goroutine)
					out, _ := z.NBCtl("get", "NB_Global", ".", "nb_cfg")
					v, _ := strconv.Atoi(strings.TrimSpace(out))
					return v
				}
				before := nbCfg()
				if err := syscall.Kill(northd.PID(), syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				var resumeOnce sync.Once
				resume := func() { resumeOnce.Do(func() { _ = syscall.Kill(northd.PID(), syscall.SIGCONT) }) }
				defer resume()
				if gated {
					// The gate waits for northd around a deletion: once a
					// barrier has bumped nb_cfg, let northd run again.
					stop, waiter := make(chan struct{}), make(chan struct{})
					go func() {
						defer close(waiter)
						_ = proc.WaitFor(10*time.Second, 5*time.Millisecond, func() (bool, error) {
							select {
							case <-stop:
								return true, nil
							default:
							}
							return nbCfg() > before, nil
						})
						resume()
					}()
					defer func() { close(stop); <-waiter }()
				}
				if err := sc.write(write); err != nil {
					t.Fatal(err)
				}
				if gated && nbCfg() == before {
					t.Fatal("the gate did not wait for northd")
				}
				resume()

				logs := func() string {
					b, _ := os.ReadFile(filepath.Join(z.Dir, "northd.log"))
					return string(b)
				}
				if !gated {
					select {
					case <-northd.Done():
					case <-time.After(10 * time.Second):
					}
					if !northd.Exited() {
						// Whether northd sees the deletion and the creation in
						// one run depends on how it reads them after SIGCONT
						// (about 1 run in 4 under a loaded make test it does
						// not): this case only shows the bug exists; the gated
						// cases are the test of the gate.
						t.Skipf("written directly, northd survived this time (it read the two transactions in separate runs)")
					}
					if !strings.Contains(logs(), "ods_assign_array_index") {
						t.Fatalf("written directly, northd exited without the ods_assign_array_index abort:\n%s", logs())
					}
					return
				}
				// The gate's last barrier saw northd process the deletion; one
				// more barrier covers a creation committed after it.
				if err := z.Sync(10 * time.Second); err != nil || northd.Exited() || strings.Contains(logs(), "ods_assign_array_index") {
					t.Fatalf("northd exited %v, sync %v", northd.Exited(), err)
				}
				datapath := func(sw string) string {
					return z.MustSBCtl("--bare", "--columns=_uuid", "find", "Datapath_Binding", "external_ids:name="+sw)
				}
				if datapath(sc.wanted) == "" || datapath(sc.gone) != "" {
					t.Fatalf("datapaths: %s %q, %s %q", sc.wanted, datapath(sc.wanted), sc.gone, datapath(sc.gone))
				}
			})
		}
	}
}

// BenchmarkDelete is the cost of the gate: the time to delete a network
// (a switch and a router) with an idle northd, directly and through the gate
// (two northd round trips). Each deletion starts and ends with northd idle
// (outside the timing): a creation right after a direct deletion can abort
// northd 26.03.1.
func BenchmarkDelete(b *testing.B) {
	z := ovntest.StartZone(b, "bench")
	s := syncer(b, z)
	ctx := context.Background()
	if _, err := s.Sync(ctx, "base", network("base")); err != nil {
		b.Fatal(err)
	}
	for _, gated := range []bool{false, true} {
		var g *northdgate.Gate
		if gated {
			g = &northdgate.Gate{NB: z.NBClient()}
		}
		b.Run(map[bool]string{false: "direct", true: "gate"}[gated], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if _, err := g.Sync(ctx, s, "a", network("a")); err != nil {
					b.Fatal(err)
				}
				z.MustSync()
				b.StartTimer()
				if _, err := g.Sync(ctx, s, "a", nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				// Directly, creating right after deleting can abort northd.
				z.MustSync()
			}
		})
	}
}
