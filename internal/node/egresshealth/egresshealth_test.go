package egresshealth

import (
	"net"
	"testing"
	"time"
)

// TestServe: every byte comes back, on as many connections as there are.
func TestServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { Serve(l); close(done) }()
	for range 2 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		for i := range 3 {
			if _, err := c.Write([]byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 1)
			if _, err := c.Read(b); err != nil || b[0] != byte(i) {
				t.Fatalf("probe %d: got %v, %v", i, b, err)
			}
		}
	}
	_ = l.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return once its listener closed")
	}
}
