package demo

import (
	"context"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/netns"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// PathMTU sends 1500-byte UDP datagrams with DF set from the sandbox's
// outside world to target ("IP:port", a UDP node port) until the kernel
// there learns a smaller path MTU from an ICMP "fragmentation needed" (a
// gateway router's gateway_mtu), or timeout passes, and returns the path
// MTU it ends with. The outside's route cache is flushed first, so an
// earlier answer does not count.
func PathMTU(ctx context.Context, dir, target string, timeout time.Duration) (int, error) {
	l, err := sandbox.NewLayout(dir)
	if err != nil {
		return 0, err
	}
	ext := l.ExternalNetns()
	if out, err := deps.OVNCommand("ip", "-n", ext, "route", "flush", "cache").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("ip route flush cache: %v: %s", err, out)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := netns.Dial(ctx, ext, "udp4", target)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	raw, err := conn.(*net.UDPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	sockopt := func(set bool) (int, error) {
		var v int
		var serr error
		err := raw.Control(func(fd uintptr) {
			if set {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
				return
			}
			v, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU)
		})
		if err == nil {
			err = serr
		}
		return v, err
	}
	if _, err := sockopt(true); err != nil {
		return 0, err
	}
	payload := make([]byte, 1500-20-8)
	mtu, err := sockopt(false)
	for err == nil && ctx.Err() == nil && mtu >= 1500 {
		_, _ = conn.Write(payload) // EMSGSIZE once the smaller path MTU is known
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		mtu, err = sockopt(false)
	}
	return mtu, err
}
