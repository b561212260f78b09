package ovntest_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestNorthdDatapathIndexReuse reproduces issue 23 item 9: ovn-northd 26.03.0
// and 26.03.1 abort with
//
//	assertion !sparse_array_add_at(&datapaths->dps, od, od->sdp->index) failed in ods_assign_array_index()
//
// when one engine run sees a Logical_Switch deleted and another created,
// whether in one NB transaction or in two that northd reads together (it was
// busy, here: SIGSTOP'd). en_datapath_sync frees the deleted datapath's index
// and hands it to the new one; northd_handle_ls_changes then adds the new
// datapath at that index before it removes the deleted one (fixed upstream by
// ovn-org/ovn f49251b71, "northd: recompute on datapath index reuse", in
// v26.03.2). Separating the delete from the create by a northd sync
// (nb_cfg -> sb_cfg, what `ovn-nbctl --wait=sb` does) avoids it. See
// docs/northd-notes.md and hack/northd-index-reuse-repro.sh.
//
// It kills northd on purpose, so it runs only with OVN_UDN_NORTHD_REPRO=1.
func TestNorthdDatapathIndexReuse(t *testing.T) {
	if os.Getenv("OVN_UDN_NORTHD_REPRO") == "" {
		t.Skip("set OVN_UDN_NORTHD_REPRO=1 to run (crashes ovn-northd 26.03.0/26.03.1 on purpose)")
	}
	deps.Require(t, deps.CheckOVN)
	out, err := deps.OVNCommand("ovn-northd", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.Fields(strings.SplitN(string(out), "\n", 2)[0])
	affected := len(version) == 2 && (version[1] == "26.03.0" || version[1] == "26.03.1")
	t.Logf("%s (affected: %v)", strings.Join(version, " "), affected)

	// A network: a switch with a port and a router with a port.
	add := func(n string) []string {
		return []string{"--", "ls-add", "sw-" + n, "--", "lsp-add", "sw-" + n, "p-" + n,
			"--", "lr-add", "lr-" + n, "--", "lrp-add", "lr-" + n, "rp-" + n, "00:00:00:00:01:01", "10.1.0.1/24"}
	}
	del := func(n string) []string { return []string{"--", "ls-del", "sw-" + n, "--", "lr-del", "lr-" + n} }

	for _, tc := range []struct {
		name  string
		crash bool // on an affected northd
		run   func(z *ovntest.Zone, busy func(func()))
	}{
		{"delete and create in one transaction", true, func(z *ovntest.Zone, _ func(func())) {
			z.MustNBCtl(append(del("a"), add("b")...)...)
		}},
		{"delete, then create, northd busy", true, func(z *ovntest.Zone, busy func(func())) {
			busy(func() { z.MustNBCtl(del("a")...); z.MustNBCtl(add("b")...) })
		}},
		{"create, then delete, northd busy", true, func(z *ovntest.Zone, busy func(func())) {
			busy(func() { z.MustNBCtl(add("b")...); z.MustNBCtl(del("a")...) })
		}},
		{"delete, northd sync, then create, northd busy", false, func(z *ovntest.Zone, busy func(func())) {
			z.MustNBCtl(del("a")...)
			z.MustSync()
			busy(func() { z.MustNBCtl(add("b")...) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := ovntest.StartZone(t, "zone")
			northd := z.Processes()["northd"]
			// busy holds northd stopped while f writes, so it reads all of f's
			// transactions in one engine run (as when a long run is under way).
			busy := func(f func()) {
				if err := syscall.Kill(northd.PID(), syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				defer syscall.Kill(northd.PID(), syscall.SIGCONT)
				f()
			}
			z.MustNBCtl(append(add("base"), add("a")...)...)
			z.MustSync()
			tc.run(z, busy)
			// northd aborts within milliseconds; otherwise it must catch up.
			var syncErr error
			select {
			case <-northd.Done():
			case <-time.After(time.Second):
				syncErr = z.Sync(5 * time.Second)
			}
			logs, _ := os.ReadFile(filepath.Join(z.Dir, "northd.log"))
			outs, _ := os.ReadFile(filepath.Join(z.Dir, "northd.out"))
			asserted := strings.Contains(string(logs)+string(outs), "ods_assign_array_index")
			crashed := northd.Exited()
			t.Logf("northd exited: %v, ods_assign_array_index assertion: %v, sync: %v", crashed, asserted, syncErr)
			if want := tc.crash && affected; crashed != want || asserted != want {
				t.Errorf("northd crashed = %v (assertion logged %v), want %v", crashed, asserted, want)
			}
		})
	}
}
