// Package dnsserve is a small authoritative DNS server for the sandbox's
// outside world and for tests: it answers A and AAAA questions from a
// records file read again on every question, so a test changes a name's
// addresses or TTL by rewriting the file.
//
// The file has one record per line, "name ttl address" ("outside.test. 5
// 198.51.100.10"); blank lines and lines starting with # are skipped. A
// name with no line gets NXDOMAIN; a name with lines of the other family
// only gets an empty answer.
package dnsserve

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// Record is one line of the file.
type Record struct {
	Name string
	TTL  uint32
	Addr netip.Addr
}

// Format is the file's text for records.
func Format(records []Record) string {
	var b strings.Builder
	for _, r := range records {
		fmt.Fprintf(&b, "%s %d %s\n", dns.Fqdn(strings.ToLower(r.Name)), r.TTL, r.Addr)
	}
	return b.String()
}

// Parse reads the file's text.
func Parse(text string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want \"name ttl address\", got %q", n, line)
		}
		ttl, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("line %d: ttl: %w", n, err)
		}
		a, err := netip.ParseAddr(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, Record{Name: dns.Fqdn(strings.ToLower(f[0])), TTL: uint32(ttl), Addr: a})
	}
	return out, sc.Err()
}

// Server answers from the records file at Path.
type Server struct {
	Path string
}

// ServeDNS implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	text, err := os.ReadFile(s.Path)
	records, perr := Parse(string(text))
	if err != nil || perr != nil || len(q.Question) != 1 {
		m.Rcode = dns.RcodeServerFailure
		_ = w.WriteMsg(m)
		return
	}
	question := q.Question[0]
	name := strings.ToLower(question.Name)
	known := false
	for _, r := range records {
		if r.Name != name {
			continue
		}
		known = true
		hdr := dns.RR_Header{Name: question.Name, Class: dns.ClassINET, Ttl: r.TTL}
		switch {
		case question.Qtype == dns.TypeA && r.Addr.Is4():
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.IP(r.Addr.AsSlice())})
		case question.Qtype == dns.TypeAAAA && r.Addr.Is6():
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: net.IP(r.Addr.AsSlice())})
		}
	}
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// ListenAndServe serves UDP and TCP on addr until ctx ends; ready, when
// set, is told the bound address once both listen (addr may have port 0:
// UDP picks it, TCP takes the same, and another pick is tried while that
// port is taken for TCP).
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(bound string)) error {
	pc, ln, err := listenBoth(addr)
	if err != nil {
		return err
	}
	bound := pc.LocalAddr().String()
	if ready != nil {
		ready(bound)
	}
	return s.Serve(ctx, pc, ln)
}

// listenBoth opens UDP and TCP on one port of addr.
func listenBoth(addr string) (net.PacketConn, net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	tries := 1
	if port == "0" {
		tries = 20
	}
	for i := 0; ; i++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		if i+1 >= tries {
			return nil, nil, err
		}
	}
}

// Serve answers on sockets already open (in another network namespace, say)
// until ctx ends, and closes them.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	udp := &dns.Server{PacketConn: pc, Handler: s}
	tcp := &dns.Server{Listener: ln, Handler: s}
	errs := make(chan error, 2)
	go func() { errs <- udp.ActivateAndServe() }()
	go func() { errs <- tcp.ActivateAndServe() }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	_ = udp.Shutdown()
	_ = tcp.Shutdown()
	return err
}
