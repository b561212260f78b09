// Package netns opens sockets inside a named network namespace
// (/run/netns/NAME, as `ip netns` makes them) from a process that itself
// stays where it is. A socket belongs to the namespace it was created in
// for its whole life, so only its creation runs on a thread moved into the
// namespace; reading, writing and accepting happen anywhere.
//
// Contract: the moved thread is locked to a goroutine of its own and moved
// back before it is released. If moving it back fails, the thread stays
// locked, so Go ends it with that goroutine instead of reusing it: no other
// goroutine ever runs in a namespace it did not ask for.
package netns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Dir is where named network namespaces live.
const Dir = "/run/netns"

// Listen announces on addr inside network namespace name.
func Listen(name, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := Do(name, func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// Dial connects to addr ("IP:port": a name would be resolved, and a
// dual-stack dial raced, on other threads, outside the namespace) from
// inside network namespace name.
func Dial(ctx context.Context, name, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return nil, fmt.Errorf("dialing %s in network namespace %s: want an IP address, not a name", addr, name)
	}
	var c net.Conn
	err = Do(name, func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Do runs fn on a thread inside network namespace name and returns its
// error. fn must not start goroutines that create sockets: they would run
// elsewhere.
func Do(name string, fn func() error) error {
	target, err := os.Open(filepath.Join(Dir, name))
	if err != nil {
		return fmt.Errorf("network namespace %s: %w", name, err)
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() { done <- doLocked(name, target, fn) }()
	return <-done
}

func doLocked(name string, target *os.File, fn func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering network namespace %s: %w", name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("leaving network namespace %s: %w", name, err) // thread stays locked: see the package comment
	}
	runtime.UnlockOSThread()
	return ferr
}
