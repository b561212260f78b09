package demo

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// listenAddr returns a free loopback address.
func listenAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serving runs ServeAll on listens until the test ends and waits until
// the TCP address answers.
func serving(t *testing.T, addr string, listens ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = ServeAll(ctx, listens, sandbox.ClientReply) }()
	if err := proc.WaitFor(5*time.Second, 10*time.Millisecond, func() (bool, error) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
}

// A held connection gets the client's address first, then every line back;
// a plain probe still reads the first line only.
func TestServeHold(t *testing.T) {
	addr := listenAddr(t)
	serving(t, addr, "tcp:"+addr)
	var out bytes.Buffer
	if err := Hold(addr, strings.NewReader("one\ntwo\n"), &out, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "127.0.0.1\none\ntwo\n"; got != want {
		t.Fatalf("held connection printed %q, want %q", got, want)
	}
	if got, err := Probe(addr, 2*time.Second); err != nil || got != "127.0.0.1" {
		t.Fatalf("probe answered %q (%v)", got, err)
	}
}

// Bulk's bytes are all counted by the sink.
func TestBulk(t *testing.T) {
	addr := listenAddr(t)
	serving(t, addr, "sink:"+addr)
	r, err := Bulk(addr, 3<<20+7, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Bytes != 3<<20+7 || r.Seconds <= 0 {
		t.Fatalf("bulk: %+v", r)
	}
}

// TestProbeEveryLines checks the line format a Prober in another process
// reads: each attempt's wall-clock start, between the moments around the
// run here, and the server's answer; a closed port gives "error: ".
func TestProbeEveryLines(t *testing.T) {
	addr := listenAddr(t)
	serving(t, addr, addr)
	closed := listenAddr(t)
	for _, tc := range []struct {
		name, addr, prefix string
	}{
		{"answered", addr, "127.0.0.1"}, // ClientReply answers with the client address
		{"refused", closed, "error: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
			defer cancel()
			var out bytes.Buffer
			ProbeEvery(ctx, tc.addr, 50*time.Millisecond, time.Second, &out)
			after := time.Now()
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) < 2 {
				t.Fatalf("want at least 2 attempts in 120 ms at 50 ms, got %q", out.String())
			}
			for _, s := range lines {
				l, ok := ParseProbeLine(s)
				if !ok {
					t.Fatalf("line %q does not parse", s)
				}
				if l.Began.Before(before.Truncate(time.Microsecond)) || l.Began.After(after) {
					t.Errorf("line %q began at %s, outside the run [%s, %s]", s, l.Began, before, after)
				}
				if !strings.HasPrefix(l.Answer, tc.prefix) {
					t.Errorf("line %q: want an answer starting %q", s, tc.prefix)
				}
			}
		})
	}
}
