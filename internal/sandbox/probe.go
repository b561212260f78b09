package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"time"
)

// ProbePort is where Serve listens in every demo pod.
const ProbePort = 8080

// Serve answers every TCP connection on listen with reply and a newline,
// until ctx ends. It runs inside a pod's network namespace, so a probe's
// answer names the pod that was really reached.
func Serve(ctx context.Context, listen, reply string) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); l.Close() }()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer c.Close()
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintln(c, reply)
		}()
	}
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
