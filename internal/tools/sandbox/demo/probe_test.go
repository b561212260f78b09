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
