// Package ovntest gives integration tests real OVN zones: NB and SB
// ovsdb-servers and ovn-northd from the installed OVN root, on loopback ports,
// with files in the test's temporary directory and every process stopped at
// the end of the test, failed or not. It also traces packets with ovn-trace.
package ovntest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/client"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
)

// Zone is a running zone bound to a test.
type Zone struct {
	*ovnrun.Zone
	t testing.TB
}

// StartZone starts a zone named name for t. Several zones per test are fine.
func StartZone(t testing.TB, name string) *Zone {
	t.Helper()
	deps.Require(t, deps.CheckOVN)
	z, err := ovnrun.StartZone(ovnrun.ZoneOptions{Name: name, Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting zone %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zone %s logs:\n%s", name, z.Logs())
		}
		z.Stop()
	})
	return &Zone{Zone: z, t: t}
}

// StartNB starts a zone named name for t and stops its northd and SB
// server, leaving a fresh NB ovsdb-server with no client connected (a
// benchmark's floor without northd). Sync and MustSync fail on it.
func StartNB(t testing.TB, name string) *Zone {
	t.Helper()
	z := StartZone(t, name)
	for _, role := range []string{"northd", "sb"} {
		if p := z.Processes()[role]; p != nil {
			p.Stop(3 * time.Second)
		}
	}
	return z
}

// NBClient returns a libovsdb client monitoring the zone's whole NB, closed at
// the end of the test.
func (z *Zone) NBClient() client.Client {
	z.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB})
	if err != nil {
		z.t.Fatal(err)
	}
	z.t.Cleanup(c.Close)
	return c
}

// SBClient returns a libovsdb client monitoring the zone's whole SB, closed at
// the end of the test.
func (z *Zone) SBClient() client.Client {
	z.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectSB(ctx, ovsdb.ClientOptions{Endpoint: z.SB})
	if err != nil {
		z.t.Fatal(err)
	}
	z.t.Cleanup(c.Close)
	return c
}

// MustSync waits until northd has processed the NB, failing the test otherwise.
func (z *Zone) MustSync() {
	z.t.Helper()
	if err := z.Sync(20 * time.Second); err != nil {
		z.t.Fatalf("zone %s: %v\n%s", z.Name, err, z.Logs())
	}
}

// MustNBCtl runs ovn-nbctl and fails the test on error.
func (z *Zone) MustNBCtl(args ...string) string {
	z.t.Helper()
	out, err := z.NBCtl(args...)
	if err != nil {
		z.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// MustSBCtl runs ovn-sbctl and fails the test on error.
func (z *Zone) MustSBCtl(args ...string) string {
	z.t.Helper()
	out, err := z.SBCtl(args...)
	if err != nil {
		z.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

// Trace runs ovn-trace for pkt entering datapath in this zone. Extra flags such
// as "--ct=new" may follow.
func (z *Zone) Trace(datapath string, pkt ovntrace.Packet, flags ...string) ovntrace.Verdict {
	z.t.Helper()
	return z.TraceExpr(datapath, pkt.Expr(), flags...)
}

// TraceExpr is Trace with a raw microflow expression.
func (z *Zone) TraceExpr(datapath, expr string, flags ...string) ovntrace.Verdict {
	z.t.Helper()
	v, err := z.TryTraceExpr(datapath, expr, flags...)
	if err != nil {
		z.t.Fatal(err)
	}
	return v
}

// TryTrace is Trace that returns ovn-trace's error (a datapath or port
// northd has not written to the Southbound yet) instead of failing the
// test: for polls.
func (z *Zone) TryTrace(datapath string, pkt ovntrace.Packet, flags ...string) (ovntrace.Verdict, error) {
	return z.TryTraceExpr(datapath, pkt.Expr(), flags...)
}

// TryTraceExpr is TryTrace with a raw microflow expression.
func (z *Zone) TryTraceExpr(datapath, expr string, flags ...string) (ovntrace.Verdict, error) {
	v, err := ovntrace.Run(ovntrace.Options{SB: z.SB, Command: traceCommand, Extra: flags}, datapath, expr)
	if err != nil {
		return v, fmt.Errorf("zone %s: %w", z.Name, err)
	}
	return v, nil
}

// ExpectDelivered fails the test unless the traced packet is output to exactly
// the given ports; it returns the verdict for further checks.
func ExpectDelivered(t testing.TB, v ovntrace.Verdict, ports ...string) ovntrace.Verdict {
	t.Helper()
	got := v.Delivered()
	if strings.Join(got, ",") != strings.Join(slices.Sorted(slices.Values(ports)), ",") {
		t.Fatalf("%s: delivered to %v, want %v\n%s", v.Expr, got, ports, v.Trace)
	}
	return v
}

// ExpectDropped fails the test unless the traced packet is output nowhere.
func ExpectDropped(t testing.TB, v ovntrace.Verdict) {
	t.Helper()
	if !v.Dropped() {
		t.Fatalf("%s: delivered to %v, want dropped\n%s", v.Expr, v.Delivered(), v.Trace)
	}
}

func traceCommand(args ...string) *exec.Cmd { return deps.OVNCommand("ovn-trace", args...) }
