// Package dnsresolve keeps host names resolved for the rules that name
// them (EgressFirewall dnsName rules): each name's A and AAAA addresses,
// asked of one DNS server, refreshed when their records' TTL runs out.
//
// Contract:
//   - Lookup never waits for the server: the first time a user asks for a
//     name it is Pending, and Run resolves it and tells Changed (a slow or
//     unreachable server holds no caller); after that Lookup answers from
//     the cache; Release drops a user's other names, and a name with no
//     user left is forgotten;
//   - a name is asked again when its shortest TTL runs out, never sooner
//     than MinTTL; a name that failed is asked again after MinTTL, doubling
//     up to MaxRetry while it keeps failing;
//   - a refresh that fails keeps the addresses the name last had (a DNS
//     outage does not turn an Allow rule off); one that changes them, or
//     the kind of its error, calls Changed with the name's users; errors
//     are worded without addresses or ports that change between asks;
//   - answers are asked with EDNS0, and again over TCP when truncated;
//   - Run is the one goroutine that refreshes; Lookup and Release are safe
//     from any goroutine.
package dnsresolve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// Defaults.
const (
	// DefaultMinTTL is the shortest time a name is kept (ovn-kubernetes'
	// floor), and the first wait after a failure.
	DefaultMinTTL = 5 * time.Second
	// DefaultMaxRetry is the longest wait between asks of a failing name.
	DefaultMaxRetry = 2 * time.Minute
	// DefaultTimeout bounds one exchange with the server.
	DefaultTimeout = 2 * time.Second
)

// Resolver resolves and refreshes names. Set its fields before the first
// Lookup.
type Resolver struct {
	// Server is the DNS server, host:port.
	Server string
	// MinTTL, MaxRetry and Timeout default to the Default* values.
	MinTTL, MaxRetry, Timeout time.Duration
	// Changed is told the users of names whose addresses (or error)
	// changed on a refresh. It runs on Run's goroutine and must not block.
	Changed func(users []string)
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
	wake    chan struct{}
}

type entry struct {
	addrs    []netip.Addr
	err      error
	next     time.Time
	failures int
	users    map[string]bool
	// pending: never asked yet.
	pending bool
}

// parallel bounds the names Run asks at once.
const parallel = 8

// ServerFromResolvConf is the first nameserver of a resolv.conf file, as
// host:port.
func ServerFromResolvConf(path string) (string, error) {
	c, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	if len(c.Servers) == 0 {
		return "", fmt.Errorf("%s names no nameserver", path)
	}
	return net.JoinHostPort(c.Servers[0], c.Port), nil
}

// Result is what a name stands for now.
type Result struct {
	Addrs []netip.Addr
	// Err is why the name has no address (nil when it has some).
	Err error
	// Pending: the name is not asked yet (Run will, and tell Changed).
	Pending bool
}

// Lookup returns name's addresses for user from the cache; a name no user
// asked for before is Pending until Run asks it.
func (r *Resolver) Lookup(_ context.Context, name, user string) Result {
	name = Canonical(name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[name]; ok {
		e.users[user] = true
		return Result{Addrs: slices.Clone(e.addrs), Err: e.err, Pending: e.pending}
	}
	if r.entries == nil {
		r.entries = map[string]*entry{}
	}
	r.entries[name] = &entry{users: map[string]bool{user: true}, pending: true}
	r.poke()
	return Result{Pending: true}
}

// Release forgets that user asks for any name but keep's.
func (r *Resolver) Release(user string, keep ...string) {
	kept := map[string]bool{}
	for _, k := range keep {
		kept[Canonical(k)] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, e := range r.entries {
		if e.users[user] && !kept[name] {
			delete(e.users, user)
			if len(e.users) == 0 {
				delete(r.entries, name)
			}
		}
	}
}

// Names are the names held now, sorted (for tests and status).
func (r *Resolver) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.entries))
	for n := range r.entries {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Run refreshes the names as their time comes, until ctx ends.
func (r *Resolver) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	wake := r.wake
	r.mu.Unlock()
	for {
		wait := r.refreshDue(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Start implements manager.Runnable.
func (r *Resolver) Start(ctx context.Context) error { return r.Run(ctx) }

// refreshDue asks again every name whose time has come, tells Changed of
// those that changed, and returns how long until the next is due.
func (r *Resolver) refreshDue(ctx context.Context) time.Duration {
	now := r.now()
	r.mu.Lock()
	var due []string
	for name, e := range r.entries {
		if !e.next.After(now) {
			due = append(due, name)
		}
	}
	r.mu.Unlock()
	var users []string
	var mu sync.Mutex
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, name := range due {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			addrs, minTTL, err := r.resolve(ctx, name)
			r.mu.Lock()
			defer r.mu.Unlock()
			e, ok := r.entries[name]
			if !ok {
				return
			}
			wasPending, before, beforeErr := e.pending, e.addrs, e.err
			r.record(e, addrs, minTTL, err)
			if wasPending || !slices.Equal(before, e.addrs) || errText(beforeErr) != errText(e.err) {
				mu.Lock()
				for u := range e.users {
					users = append(users, u)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(users) > 0 && r.Changed != nil {
		slices.Sort(users)
		r.Changed(slices.Compact(users))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := time.Hour
	now = r.now()
	for _, e := range r.entries {
		if d := e.next.Sub(now); d < wait {
			wait = d
		}
	}
	return max(wait, 0)
}

// record stores a resolution's outcome in e and when to ask again. A
// failure keeps the addresses e had.
func (r *Resolver) record(e *entry, addrs []netip.Addr, minTTL time.Duration, err error) {
	floor, ceiling := r.minTTL(), r.maxRetry()
	e.pending = false
	if err != nil {
		e.failures++
		wait := floor << min(e.failures-1, 16)
		e.next = r.now().Add(min(wait, ceiling))
		if len(e.addrs) == 0 {
			e.err = err
		}
		return
	}
	e.failures, e.err, e.addrs = 0, nil, addrs
	e.next = r.now().Add(max(minTTL, floor))
}

// resolve asks the server for name's A and AAAA records: their addresses,
// sorted, and their shortest TTL.
func (r *Resolver) resolve(ctx context.Context, name string) ([]netip.Addr, time.Duration, error) {
	if strings.HasPrefix(name, "*.") {
		return nil, 0, errors.New("a wildcard name has no address of its own")
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	c := &dns.Client{Timeout: timeout}
	var addrs []netip.Addr
	minTTL := time.Duration(-1)
	var errs []error
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		m := new(dns.Msg)
		m.SetQuestion(name, qtype)
		m.RecursionDesired = true
		m.SetEdns0(4096, false)
		in, err := r.exchange(ctx, c, m, timeout)
		if err == nil && in.Truncated {
			in, err = r.exchange(ctx, &dns.Client{Net: "tcp", Timeout: timeout}, m, timeout)
		}
		if err != nil {
			errs = append(errs, r.describe(err))
			continue
		}
		if in.Rcode != dns.RcodeSuccess {
			errs = append(errs, fmt.Errorf("%s answers %s", r.Server, dns.RcodeToString[in.Rcode]))
			continue
		}
		for _, rr := range in.Answer {
			var ip net.IP
			switch rr := rr.(type) {
			case *dns.A:
				ip = rr.A
			case *dns.AAAA:
				ip = rr.AAAA
			default:
				continue // CNAMEs on the way
			}
			a, ok := netip.AddrFromSlice(ip)
			if !ok {
				continue
			}
			addrs = append(addrs, a.Unmap())
			if ttl := time.Duration(rr.Header().Ttl) * time.Second; minTTL < 0 || ttl < minTTL {
				minTTL = ttl
			}
		}
	}
	if len(addrs) == 0 {
		if len(errs) == 2 && errs[0].Error() != errs[1].Error() {
			return nil, 0, errors.Join(errs...)
		}
		if len(errs) > 0 {
			return nil, 0, errs[0]
		}
		return nil, 0, errors.New("no A or AAAA record")
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	return slices.Compact(addrs), max(minTTL, 0), nil
}

func (r *Resolver) exchange(ctx context.Context, c *dns.Client, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	qctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	in, _, err := c.ExchangeContext(qctx, m, r.Server)
	return in, err
}

// describe words a failed exchange without the local address or port
// (they change on every ask, and the words end up in objects' status).
func (r *Resolver) describe(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s did not answer", r.Server)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s refused the question", r.Server)
	}
	return fmt.Errorf("%s could not be asked", r.Server)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (r *Resolver) poke() {
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Resolver) minTTL() time.Duration {
	if r.MinTTL > 0 {
		return r.MinTTL
	}
	return DefaultMinTTL
}

func (r *Resolver) maxRetry() time.Duration {
	if r.MaxRetry > 0 {
		return r.MaxRetry
	}
	return DefaultMaxRetry
}

// Canonical is a name as the cache keys it: lower case, fully qualified.
func Canonical(name string) string { return dns.Fqdn(strings.ToLower(name)) }
