package dnsresolve_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/dnsresolve"
	"github.com/ovn-udn/ovn-udn/internal/dnsresolve/dnsserve"
)

// server serves the records file it returns, on a loopback port.
func server(t *testing.T, records string) (addr, file string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "records")
	if err := os.WriteFile(file, []byte(records), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bound := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- (&dnsserve.Server{Path: file}).ListenAndServe(ctx, "127.0.0.1:0", func(a string) { bound <- a })
	}()
	select {
	case addr = <-bound:
		t.Cleanup(func() { cancel(); <-done })
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	return addr, file
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, a := range s {
		out = append(out, netip.MustParseAddr(a))
	}
	return out
}

// resolved polls Lookup until name is no longer pending.
func resolved(t *testing.T, r *dnsresolve.Resolver, name, user string) dnsresolve.Result {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if res := r.Lookup(context.Background(), name, user); !res.Pending {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still pending", name)
		}
	}
}

// TestLookup: a first Lookup never waits (Pending); Run asks, and tells
// the users; then both families, NXDOMAIN, wildcards; Release.
func TestLookup(t *testing.T) {
	addr, _ := server(t, "www.example.test. 30 198.51.100.10\nwww.example.test. 30 2001:db8::10\nwww.example.test. 60 198.51.100.11\nv6only.test. 30 2001:db8::20\n")
	told := make(chan []string, 16)
	r := &dnsresolve.Resolver{Server: addr, Changed: func(users []string) { told <- users }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if first := r.Lookup(ctx, "www.example.test", "ns1"); !first.Pending || first.Err != nil || len(first.Addrs) > 0 {
		t.Fatalf("a first Lookup before Run: %+v, want pending", first)
	}
	go func() { _ = r.Run(ctx) }()
	select {
	case users := <-told:
		if d := cmp.Diff([]string{"ns1"}, users); d != "" {
			t.Errorf("told (-want +got):\n%s", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the users of a name resolved for the first time were not told")
	}
	for _, tc := range []struct {
		name    string
		want    []netip.Addr
		wantErr string
	}{
		{"WWW.example.test", addrs("198.51.100.10", "198.51.100.11", "2001:db8::10"), ""},
		{"v6only.test.", addrs("2001:db8::20"), ""},
		{"missing.test", nil, addr + " answers NXDOMAIN"},
		{"*.example.test", nil, "wildcard"},
	} {
		got := resolved(t, r, tc.name, "ns1")
		if d := cmp.Diff(tc.want, got.Addrs, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
			t.Errorf("%s: addresses (-want +got):\n%s", tc.name, d)
		}
		if (tc.wantErr == "") != (got.Err == nil) || (got.Err != nil && !strings.Contains(got.Err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, got.Err, tc.wantErr)
		}
	}
	if d := cmp.Diff([]string{"*.example.test.", "missing.test.", "v6only.test.", "www.example.test."}, r.Names()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
	r.Lookup(ctx, "v6only.test", "ns2")
	r.Release("ns1", "www.example.test")
	if d := cmp.Diff([]string{"v6only.test.", "www.example.test."}, r.Names()); d != "" {
		t.Errorf("after release, names (-want +got):\n%s", d)
	}
}

// TestUnreachable: a server that does not answer is worded the same on
// every ask (no local port in it).
func TestUnreachable(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0") // bound, never read: no answer
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	r := &dnsresolve.Resolver{Server: pc.LocalAddr().String(), Timeout: 100 * time.Millisecond, MinTTL: 50 * time.Millisecond, MaxRetry: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	r.Lookup(ctx, "x.test", "ns1")
	first := resolved(t, r, "x.test", "ns1").Err
	if first == nil || first.Error() != pc.LocalAddr().String()+" did not answer" {
		t.Fatalf("error %v, want %q", first, pc.LocalAddr().String()+" did not answer")
	}
}

// TestRefresh changes a name's records behind the resolver: the change is
// seen once the TTL runs out and its users are told; a server that fails
// leaves the last addresses in place.
func TestRefresh(t *testing.T) {
	addr, file := server(t, "moving.test. 1 198.51.100.10\n")
	var mu sync.Mutex
	var told [][]string
	r := &dnsresolve.Resolver{Server: addr, MinTTL: 50 * time.Millisecond, MaxRetry: 100 * time.Millisecond,
		Changed: func(users []string) { mu.Lock(); told = append(told, users); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	if got := resolved(t, r, "moving.test", "ns-a"); got.Err != nil || len(got.Addrs) != 1 {
		t.Fatalf("first lookup: %+v", got)
	}
	r.Lookup(ctx, "moving.test", "ns-b")
	// The first resolution's word to its users, then none yet.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(told)
		told = nil
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first resolution was not told")
		}
	}
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	write("moving.test. 1 198.51.100.20\n")
	// The record's TTL is 1 s: the new address is asked for after it, not
	// after MinTTL.
	start := time.Now()
	waitFor("the new address", func() bool {
		a := r.Lookup(ctx, "moving.test", "ns-a").Addrs
		return len(a) == 1 && a[0] == netip.MustParseAddr("198.51.100.20")
	})
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the change was seen after %v, want about the record's TTL (1 s)", took)
	}
	waitFor("users told", func() bool { mu.Lock(); defer mu.Unlock(); return len(told) > 0 })
	mu.Lock()
	if d := cmp.Diff([]string{"ns-a", "ns-b"}, told[0]); d != "" {
		t.Errorf("users told (-want +got):\n%s", d)
	}
	n := len(told)
	mu.Unlock()
	write("not a record file")
	// The server fails from now on: over a window holding several failed
	// refreshes (50, 100, 100 ms apart), the addresses stay.
	deadline := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if a := r.Lookup(ctx, "moving.test", "ns-a"); a.Err != nil || len(a.Addrs) != 1 {
			t.Fatalf("a failing server took the addresses away: %+v", a)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if len(told) != n {
		t.Errorf("a failing refresh told the users again: %v", told[n:])
	}
	mu.Unlock()
}
