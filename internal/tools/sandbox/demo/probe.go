package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/netns"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// ProbePort is where Serve listens in every demo pod.
const ProbePort = 8080

// heldIdle is how long a held connection (see Serve, Hold) may stay idle.
const heldIdle = 2 * time.Minute

// Serve answers every TCP connection on listen with reply and a newline,
// then echoes every line the client sends until it closes (so a test can
// hold one connection across a disruption), until ctx ends. It runs inside a
// pod's network namespace, so a probe's answer names the pod that was really
// reached.
func Serve(ctx context.Context, listen, reply string) error {
	return serveTCP(ctx, listen, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(heldIdle))
		fmt.Fprintln(c, answer(reply, c.RemoteAddr()))
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			_ = c.SetDeadline(time.Now().Add(heldIdle))
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
}

// ServeSink reads every TCP connection on listen to its end and answers
// with the number of bytes it read, until ctx ends: the far end of Bulk.
func ServeSink(ctx context.Context, listen string) error {
	return serveTCP(ctx, listen, func(c net.Conn) {
		_ = c.SetDeadline(time.Now().Add(heldIdle))
		n, err := io.Copy(io.Discard, c)
		if err != nil {
			return
		}
		fmt.Fprintln(c, n)
	})
}

// Hold connects to addr over TCP, writes the server's first line to out,
// then sends every line of in and writes the server's echo of it to out,
// each within timeout. It returns when in ends or the connection fails:
// a test keeps one connection open across a disruption with it.
func Hold(addr string, in io.Reader, out io.Writer, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	readLine := func() error {
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("reading from %s: %w", addr, err)
		}
		_, err = io.WriteString(out, line)
		return err
	}
	if err := readLine(); err != nil {
		return err
	}
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
		if _, err := fmt.Fprintln(c, lines.Text()); err != nil {
			return fmt.Errorf("writing to %s: %w", addr, err)
		}
		if err := readLine(); err != nil {
			return err
		}
	}
	return lines.Err()
}

// BulkResult is what Bulk measured.
type BulkResult struct {
	// Bytes is how many bytes the far end counted.
	Bytes int64 `json:"bytes"`
	// Seconds is from connecting to the far end's count.
	Seconds float64 `json:"seconds"`
}

// Bulk sends n bytes to a ServeSink at addr over one TCP connection and
// returns how long it took until the sink confirmed them all.
func Bulk(addr string, n int64, timeout time.Duration) (BulkResult, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return BulkResult{}, err
	}
	defer c.Close()
	_ = c.SetDeadline(start.Add(timeout))
	buf := make([]byte, 64<<10)
	for left := n; left > 0; {
		chunk := buf
		if left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		w, err := c.Write(chunk)
		if err != nil {
			return BulkResult{}, fmt.Errorf("writing to %s: %w", addr, err)
		}
		left -= int64(w)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return BulkResult{}, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return BulkResult{}, fmt.Errorf("reading the count from %s: %w", addr, err)
	}
	got, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil || got != n {
		return BulkResult{}, fmt.Errorf("%s counted %q bytes, want %d", addr, strings.TrimSpace(line), n)
	}
	return BulkResult{Bytes: got, Seconds: time.Since(start).Seconds()}, nil
}

// answer is reply, or for ClientReply the client's address.
func answer(reply string, from net.Addr) string {
	if reply != sandbox.ClientReply {
		return reply
	}
	if h, _, err := net.SplitHostPort(from.String()); err == nil {
		return h
	}
	return from.String()
}

// Probe connects to addr over TCP and returns the line the server answers.
func Probe(addr string, timeout time.Duration) (string, error) {
	return ProbeFrom(addr, "", 0, timeout)
}

// ProbeFrom is Probe from a given source address ("": any) and port (0:
// any).
func ProbeFrom(addr, source string, localPort int, timeout time.Duration) (string, error) {
	d := net.Dialer{Timeout: timeout}
	if localPort > 0 || source != "" {
		local := &net.TCPAddr{Port: localPort}
		if source != "" {
			if local.IP = net.ParseIP(source); local.IP == nil {
				return "", fmt.Errorf("source %q is not an address", source)
			}
		}
		d.LocalAddr = local
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	// A server that answers and closes without a newline (agnhost
	// serve-hostname --tcp) still answered.
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", fmt.Errorf("reading the answer from %s: %w", addr, err)
	}
	return strings.TrimSpace(line), nil
}

// serveTCP calls answer with every TCP connection to addr (then closes it),
// until ctx ends.
func serveTCP(ctx context.Context, addr string, answer func(net.Conn)) error {
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

// serveUDP answers every datagram to addr with answer(its payload, its
// sender), unless that is empty, until ctx ends.
func serveUDP(ctx context.Context, addr string, answer func(payload string, from net.Addr) string) error {
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

// getTimeout bounds one Get.
const getTimeout = 2 * time.Second

// Get fetches an HTTP URL (addresses only: no resolver is asked) from
// inside pod from's network namespace ("<namespace>/<name>") and returns
// the body of a 200 answer, within getTimeout. The request's socket is
// made in the pod's namespace: no process is started.
func Get(ctx context.Context, dir, from, url string) (string, error) {
	c, err := sandbox.Client(dir)
	if err != nil {
		return "", &LookupError{err}
	}
	ns, err := sandbox.PodNetns(ctx, dir, c, from)
	if err != nil {
		return "", &LookupError{err}
	}
	return getIn(ctx, ns, url)
}

// LookupError is a Get that could not even start (the sandbox or the client
// pod not found): not an answer, nor its absence.
type LookupError struct{ Err error }

func (e *LookupError) Error() string { return e.Err.Error() }
func (e *LookupError) Unwrap() error { return e.Err }

// getIn is Get from network namespace ns.
func getIn(ctx context.Context, ns, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, getTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return netns.Dial(ctx, ns, network, addr)
	}}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// ProbeEvery starts a ProbeFrom of addr every interval until ctx ends,
// each with its own timeout, and writes a line as each one ends: when it
// began, as Unix microseconds, then the answer or "error: ..." (lines in
// the order attempts end). The start is wall-clock time, so that a reader
// in another process places attempts on its own clock without counting
// this process's start-up (ParseProbeLine).
func ProbeEvery(ctx context.Context, addr string, interval, timeout time.Duration, w io.Writer) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		began := time.Now()
		wg.Go(func() {
			a, err := ProbeFrom(addr, "", 0, timeout)
			if err != nil {
				a = "error: " + err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "%d %s\n", began.UnixMicro(), a)
		})
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
	}
}
