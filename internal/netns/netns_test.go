package netns_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/netns"
)

// TestListenAndDialInNamespace listens on 127.0.0.1 inside a fresh network
// namespace and dials it there: the same address on the test's own loopback
// is a different socket, so reaching the server proves both sockets were
// made inside.
func TestListenAndDialInNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a network namespace")
	}
	name := fmt.Sprintf("nstest-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	l, err := netns.Listen(name, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = io.WriteString(c, "inside\n")
			_ = c.Close()
		}
	}()
	addr := l.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := netns.Dial(ctx, name, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	if strings.TrimSpace(string(got)) != "inside" {
		t.Fatalf("answer %q, want inside", got)
	}
	// From the test's own namespace the port is not there.
	if c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s answered outside the namespace", addr)
	}
	if _, err := netns.Dial(ctx, name, "tcp", "localhost:80"); err == nil || !strings.Contains(err.Error(), "want an IP address") {
		t.Errorf("dialing a name: %v, want a refusal", err)
	}
	if err := netns.Do("no-such-namespace-here", func() error { return nil }); err == nil {
		t.Fatal("Do in a missing namespace succeeded")
	}
}
