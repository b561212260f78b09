package demo

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestServeDSCP: the server reports the DSCP a datagram was sent with.
func TestServeDSCP(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A free port: bind, note, release (the server binds it next).
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	done := make(chan error, 1)
	go func() { done <- ServeDSCP(ctx, addr) }()
	for _, want := range []int{0, 10, 46} {
		var got int
		deadline := time.Now().Add(5 * time.Second)
		for {
			d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
				return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_TOS, want<<2) })
			}}
			c, err := d.Dial("udp4", addr)
			if err != nil {
				t.Fatal(err)
			}
			_ = c.SetDeadline(time.Now().Add(200 * time.Millisecond))
			_, _ = c.Write([]byte("dscp?"))
			buf := make([]byte, 64)
			n, err := c.Read(buf)
			c.Close()
			if err == nil {
				if _, err := fmtSscan(string(buf[:n]), &got); err == nil {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no answer from the DSCP server: %v", err)
			}
		}
		if got != want {
			t.Errorf("sent with DSCP %d, the server saw %d", want, got)
		}
	}
	// ProbeDSCP sends with the default 0.
	if got, err := ProbeDSCP(addr, time.Second); err != nil || got != 0 {
		t.Errorf("ProbeDSCP = %d, %v; want 0", got, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("server: %v", err)
	}
}

func fmtSscan(s string, d *int) (int, error) { return fmt.Sscanf(s, "dscp %d", d) }
