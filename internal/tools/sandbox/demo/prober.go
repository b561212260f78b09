package demo

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// Prober is `sandbox probe-every` running in a network namespace: a TCP
// connection to one target every interval, each answer kept with the time
// its attempt began.
type Prober struct {
	cmd   *exec.Cmd
	lines chan ProbeLine
	mu    sync.Mutex
	all   []ProbeLine // every attempt that ended, in the order they ended
}

// ProbeLine is one attempt: when it began, and the server's answer or
// "error: ...".
type ProbeLine struct {
	Began  time.Time
	Answer string
}

// ParseProbeLine reads one line of ProbeEvery. Began is wall-clock time
// (no monotonic reading): comparisons with this process's times then use
// the wall clock, which both processes share.
func ParseProbeLine(s string) (ProbeLine, bool) {
	us, answer, ok := strings.Cut(s, " ")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil {
		return ProbeLine{}, false
	}
	return ProbeLine{Began: time.UnixMicro(n), Answer: answer}, true
}

// StartProber runs binary's probe-every in netns toward target (host:port)
// until Stop, for at most duration (which bounds a prober the caller never
// stopped). A caller that runs longer gets "the prober stopped" from
// WaitAnswers; Since, FirstSince and the gap readers just see no more
// attempts.
func StartProber(netns, binary, target string, interval, timeout, duration time.Duration) (*Prober, error) {
	cmd := sandbox.Command(context.Background(), netns, []string{binary, "sandbox", "probe-every", "--interval", interval.String(),
		"--timeout", timeout.String(), "--duration", duration.String(), target})
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &Prober{cmd: cmd, lines: make(chan ProbeLine, 1024)}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(p.lines)
		r := bufio.NewScanner(out)
		for r.Scan() {
			l, ok := ParseProbeLine(r.Text())
			if !ok {
				continue
			}
			p.mu.Lock()
			p.all = append(p.all, l)
			p.mu.Unlock()
			select {
			case p.lines <- l:
			default: // nobody waits: kept in all
			}
		}
	}()
	return p, nil
}

// WaitAnswers waits (at most timeout) for n attempts begun from now on to
// be answered by want, and returns when the last one arrived.
func (p *Prober) WaitAnswers(want string, n int, timeout time.Duration) (time.Time, error) {
	since := time.Now()
	deadline := time.After(timeout)
	for got := 0; ; {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return time.Time{}, fmt.Errorf("the prober stopped before %d answers from %s", n, want)
			}
			if l.Answer != want || l.Began.Before(since) {
				continue
			}
			if got++; got == n {
				return time.Now(), nil
			}
		case <-deadline:
			return time.Time{}, fmt.Errorf("no %d answers from %s within %s (last: %s)", n, want, timeout, p.last())
		}
	}
}

func (p *Prober) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.all) == 0 {
		return "none"
	}
	return p.all[len(p.all)-1].Answer
}

// Since returns the attempts begun at or after t that ended so far.
func (p *Prober) Since(t time.Time) []ProbeLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ProbeLine
	for _, l := range p.all {
		if !l.Began.Before(t) {
			out = append(out, l)
		}
	}
	return out
}

// FirstSince returns when the earliest attempt begun at or after t that
// want answered began (zero: none yet).
func (p *Prober) FirstSince(t time.Time, want string) time.Time {
	var first time.Time
	for _, l := range p.Since(t) {
		if l.Answer == want && (first.IsZero() || l.Began.Before(first)) {
			first = l.Began
		}
	}
	return first
}

// LongestGap is the longest time between the beginnings of two answered
// attempts begun between from and to: what a client probing every
// interval saw unanswered, plus one interval.
func (p *Prober) LongestGap(from, to time.Time) time.Duration {
	var answered []time.Time
	for _, l := range p.Since(from) {
		if !l.Began.After(to) && !strings.HasPrefix(l.Answer, "error") {
			answered = append(answered, l.Began)
		}
	}
	slices.SortFunc(answered, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	for i := 1; i < len(answered); i++ {
		gap = max(gap, answered[i].Sub(answered[i-1]))
	}
	return gap
}

// LongestSilence is the longest time within [from, to] with no attempt
// begun that ok accepts the answer of, counting the stretch from from to
// the first such attempt and from the last one to to: the whole window
// when none was answered. Unlike LongestGap, a path broken from some
// moment on, or for the whole window, shows as such.
func (p *Prober) LongestSilence(from, to time.Time, ok func(answer string) bool) time.Duration {
	var answered []time.Time
	for _, l := range p.Since(from) {
		if !l.Began.After(to) && ok(l.Answer) {
			answered = append(answered, l.Began)
		}
	}
	slices.SortFunc(answered, func(a, b time.Time) int { return a.Compare(b) })
	prev, gap := from, time.Duration(0)
	for _, a := range answered {
		gap = max(gap, a.Sub(prev))
		prev = a
	}
	return max(gap, to.Sub(prev))
}

// Stop ends the prober.
func (p *Prober) Stop() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}
