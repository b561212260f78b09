package agnhost

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitHTTP polls url until it answers want.
func waitHTTP(t *testing.T, url, want string) {
	t.Helper()
	var got string
	err := proc.WaitFor(10*time.Second, 20*time.Millisecond, func() (bool, error) {
		var err error
		got, err = Get(context.Background(), url)
		return err == nil && got == want, err
	})
	if err != nil {
		t.Fatalf("%s answered %q (%v), want %q", url, got, err, want)
	}
}

func TestNetExec(t *testing.T) {
	t.Setenv("HOSTNAME", "pod-a")
	ctx, cancel := context.WithCancel(context.Background())
	httpPort, udpPort := freePort(t), freePort(t)
	done := make(chan error, 1)
	go func() { done <- NetExec(ctx, httpPort, udpPort) }()
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	waitHTTP(t, base+"/hostname", "pod-a")
	waitHTTP(t, base+"/echo?msg=hi", "hi")
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", udpPort))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("echo hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("UDP echo: %q (%v)", buf[:n], err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestServeHostnameTCP(t *testing.T) {
	t.Setenv("HOSTNAME", "pod-b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	go func() { _ = ServeHostname(ctx, port, true, false) }()
	var got string
	err := proc.WaitFor(10*time.Second, 20*time.Millisecond, func() (bool, error) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return false, err
		}
		defer c.Close()
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		got = string(buf[:n])
		return got == "pod-b", nil
	})
	if err != nil || got != "pod-b" {
		t.Fatalf("got %q (%v)", got, err)
	}
}
