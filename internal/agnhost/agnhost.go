// Package agnhost is a small stand-in for the Kubernetes e2e image agnhost:
// the servers Services and NetworkPolicy are tested with, run by the node
// agent as a pod's workload in the sandbox (no container runtime there).
// serve-hostname answers every request with the pod's name; netexec serves
// HTTP (/, /hostname, /echo?msg=, /clientip) and a UDP echo ("hostname" and
// "echo <msg>" commands), as agnhost does.
package agnhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Hostname is the name servers answer with: $HOSTNAME (the node agent sets
// it to the pod's name), else the host's.
func Hostname() string {
	if h := os.Getenv("HOSTNAME"); h != "" {
		return h
	}
	h, _ := os.Hostname()
	return h
}

// ServeHostname answers with the hostname on port: over HTTP by default, on
// raw TCP connections with tcp, as UDP datagrams with udp (both may be set).
func ServeHostname(ctx context.Context, port int, tcp, udp bool) error {
	name := Hostname()
	var servers []func() error
	switch {
	case !tcp && !udp:
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) })
		servers = append(servers, httpServer(ctx, port, mux))
	default:
		if tcp {
			servers = append(servers, func() error { return ServeTCP(ctx, fmt.Sprintf(":%d", port), func(c net.Conn) { fmt.Fprint(c, name) }) })
		}
		if udp {
			servers = append(servers, udpServer(ctx, port, func(string) string { return name }))
		}
	}
	return run(servers)
}

// NetExec serves HTTP on httpPort and, when udpPort is not 0, a UDP echo.
func NetExec(ctx context.Context, httpPort, udpPort int) error {
	name := Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "NOW: "+time.Now().UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("/hostname", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, name) })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.Query().Get("msg")) })
	mux.HandleFunc("/clientip", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.RemoteAddr) })
	servers := []func() error{httpServer(ctx, httpPort, mux)}
	if udpPort != 0 {
		servers = append(servers, udpServer(ctx, udpPort, func(req string) string {
			cmd, arg, _ := strings.Cut(strings.TrimSpace(req), " ")
			switch cmd {
			case "hostname":
				return name
			case "echo":
				return arg
			}
			return ""
		}))
	}
	return run(servers)
}

// run runs servers until the first fails (or ctx ends: they return nil).
func run(servers []func() error) error {
	errs := make(chan error, len(servers))
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- s() }()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func httpServer(ctx context.Context, port int, h http.Handler) func() error {
	return func() error {
		srv := &http.Server{Addr: fmt.Sprintf(":%d", port), Handler: h, ReadHeaderTimeout: 10 * time.Second}
		stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
		defer stop()
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// ServeTCP calls answer with every TCP connection to addr (then closes it),
// until ctx ends.
func ServeTCP(ctx context.Context, addr string, answer func(net.Conn)) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
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
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			answer(c)
		}()
	}
}

func udpServer(ctx context.Context, port int, answer func(string) string) func() error {
	return func() error { return ServeUDP(ctx, fmt.Sprintf(":%d", port), answer) }
}

// ServeUDP answers every datagram to addr with answer(its payload), unless
// that is empty, until ctx ends.
func ServeUDP(ctx context.Context, addr string, answer func(string) string) error {
	return ServeUDPFrom(ctx, addr, func(payload string, _ net.Addr) string { return answer(payload) })
}

// ServeUDPFrom is ServeUDP whose answer also sees the sender's address.
func ServeUDPFrom(ctx context.Context, addr string, answer func(payload string, from net.Addr) string) error {
	pc, err := (&net.ListenConfig{}).ListenPacket(ctx, "udp", addr)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = pc.Close() })
	defer stop()
	buf := make([]byte, 2048)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if reply := answer(string(buf[:n]), from); reply != "" {
			_, _ = pc.WriteTo([]byte(reply), from)
		}
	}
}

// Get fetches an HTTP URL's body (a client for tests and probes).
func Get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
