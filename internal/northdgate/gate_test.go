package northdgate_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/northdgate"
	"github.com/ovn-udn/ovn-udn/internal/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

func TestClassify(t *testing.T) {
	op := func(kind, table string) ovsdb.Operation { return ovsdb.Operation{Op: kind, Table: table} }
	tests := []struct {
		name string
		ops  []ovsdb.Operation
		want northdgate.Change
	}{
		{"ports and ACLs only", []ovsdb.Operation{op("insert", "Logical_Switch_Port"), op("delete", "ACL"), op("mutate", "Logical_Switch")}, northdgate.Change{}},
		{"a switch created", []ovsdb.Operation{op("insert", "Logical_Switch_Port"), op("insert", "Logical_Switch")}, northdgate.Change{Creates: true}},
		{"a router deleted", []ovsdb.Operation{op("delete", "Logical_Router"), op("update", "Logical_Switch")}, northdgate.Change{Deletes: true}},
		{"both", []ovsdb.Operation{op("delete", "Logical_Switch"), op("insert", "Logical_Router")}, northdgate.Change{Creates: true, Deletes: true}},
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

// TestGateKeepsNorthdAlive: while northd is busy (stopped here, as during a
// long run), one network's datapaths are deleted and another's created, at
// the same time. Written directly, ovn-northd 26.03.0/26.03.1 aborts
// (ods_assign_array_index); through the gate, northd sees them in separate
// runs, stays up and renders the new datapaths.
func TestGateKeepsNorthdAlive(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	out, err := deps.OVNCommand("ovn-northd", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
	affected := len(version) == 2 && (version[1] == "26.03.0" || version[1] == "26.03.1")
	// A network: a switch with a port and a router with a port.
	add := func(n string) []string {
		return []string{"--", "ls-add", "sw-" + n, "--", "lsp-add", "sw-" + n, "p-" + n,
			"--", "lr-add", "lr-" + n, "--", "lrp-add", "lr-" + n, "rp-" + n, "00:00:00:00:01:01", "10.1.0.1/24"}
	}
	del := func(n string) []string { return []string{"--", "ls-del", "sw-" + n, "--", "lr-del", "lr-" + n} }

	for _, gated := range []bool{false, true} {
		name := map[bool]string{false: "written directly", true: "through the gate"}[gated]
		t.Run(name, func(t *testing.T) {
			if !gated && !affected {
				t.Skipf("%s is not affected", strings.Join(version, " "))
			}
			z := ovntest.StartZone(t, "zone")
			northd := z.Processes()["northd"]
			z.MustNBCtl(append(add("base"), add("a")...)...)
			z.MustSync()
			nbCfg := func(col string) int {
				v, _ := strconv.Atoi(strings.TrimSpace(z.MustNBCtl("get", "NB_Global", ".", col)))
				return v
			}
			before := nbCfg("nb_cfg")
			if err := syscall.Kill(northd.PID(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			resumed := false
			resume := func() {
				if !resumed {
					resumed = true
					_ = syscall.Kill(northd.PID(), syscall.SIGCONT)
				}
			}
			defer resume()
			if !gated {
				z.MustNBCtl(del("a")...)
				z.MustNBCtl(add("b")...)
				resume()
			} else {
				g := &northdgate.Gate{NB: z.NBClient(), Timeout: 20 * time.Second}
				ctx := context.Background()
				var wg sync.WaitGroup
				errs := make([]error, 2)
				wg.Add(2)
				go func() {
					defer wg.Done()
					errs[0] = g.Do(ctx, northdgate.Change{Deletes: true}, func() error { z.MustNBCtl(del("a")...); return nil })
				}()
				go func() {
					defer wg.Done()
					errs[1] = g.Do(ctx, northdgate.Change{Creates: true}, func() error { z.MustNBCtl(add("b")...); return nil })
				}()
				// Whichever went first, the gate now waits for northd (a
				// barrier bumped nb_cfg): let it run again.
				if err := proc.WaitFor(10*time.Second, 5*time.Millisecond, func() (bool, error) { return nbCfg("nb_cfg") > before, nil }); err != nil {
					t.Fatalf("the gate did not wait for northd: %v", err)
				}
				resume()
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			var syncErr error
			select {
			case <-northd.Done():
			case <-time.After(time.Second):
				syncErr = z.Sync(10 * time.Second)
			}
			logs, _ := os.ReadFile(filepath.Join(z.Dir, "northd.log"))
			asserted := strings.Contains(string(logs), "ods_assign_array_index")
			if gated {
				if northd.Exited() || asserted || syncErr != nil {
					t.Fatalf("northd exited %v, asserted %v, sync %v", northd.Exited(), asserted, syncErr)
				}
				if out := z.MustSBCtl("--bare", "--columns=_uuid", "find", "Datapath_Binding", "external_ids:name=sw-b"); strings.TrimSpace(out) == "" {
					t.Fatal("no datapath for the new switch")
				}
				return
			}
			if !northd.Exited() || !asserted {
				t.Fatalf("written directly, northd survived (exited %v, asserted %v): the reproduction no longer holds", northd.Exited(), asserted)
			}
		})
	}
}
