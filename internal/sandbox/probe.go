package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/agnhost"
)

// ProbePort is where Serve listens in every demo pod.
const ProbePort = 8080

// Serve answers every TCP connection on listen with reply and a newline,
// until ctx ends. It runs inside a pod's network namespace, so a probe's
// answer names the pod that was really reached.
func Serve(ctx context.Context, listen, reply string) error {
	return agnhost.ServeTCP(ctx, listen, func(c net.Conn) { fmt.Fprintln(c, answer(reply, c.RemoteAddr())) })
}

// answer is reply, or for ClientReply the client's address.
func answer(reply string, from net.Addr) string {
	if reply != ClientReply {
		return reply
	}
	if h, _, err := net.SplitHostPort(from.String()); err == nil {
		return h
	}
	return from.String()
}

// Probe connects to addr over TCP and returns the line the server answers.
func Probe(addr string, timeout time.Duration) (string, error) { return ProbeFrom(addr, 0, timeout) }

// ProbeFrom is Probe from a given source port (0: any).
func ProbeFrom(addr string, localPort int, timeout time.Duration) (string, error) {
	d := net.Dialer{Timeout: timeout}
	if localPort > 0 {
		d.LocalAddr = &net.TCPAddr{Port: localPort}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the answer from %s: %w", addr, err)
	}
	return strings.TrimSpace(line), nil
}
