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
	return agnhost.ServeTCP(ctx, listen, func(c net.Conn) { fmt.Fprintln(c, reply) })
}

// Probe connects to addr over TCP and returns the line the server answers.
func Probe(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
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
