package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A reach matrix is the NetworkPolicy end-to-end tests' way of measuring
// connectivity, after the upstream Kubernetes ones: every pod probes every
// other pod on a few protocols and ports, all at once, from ONE process per
// source pod (`ovn-udn sandbox probe-many`), so a round over a couple of
// dozen pods costs as many process starts and about one probe timeout.

// ReachProbe is one kind of probe every source sends to every target.
type ReachProbe struct {
	// Protocol is "tcp" or "udp".
	Protocol string
	// Port is the destination port.
	Port int
}

// String is "tcp/80" or "udp/80".
func (p ReachProbe) String() string { return fmt.Sprintf("%s/%d", p.Protocol, p.Port) }

// ReachListens are where ReachServers' servers listen in each pod: TCP and
// UDP, ports 80 and 81, both address families.
var ReachListens = []string{"tcp:[::]:80", "tcp:[::]:81", "udp:[::]:80", "udp:[::]:81"}

// ServeAll runs, until ctx ends, a server on each of listens: "tcp:ADDR"
// answers every connection with reply and a newline, "udp:ADDR" answers
// every datagram with reply, "sink:ADDR" counts what each connection sends
// (ServeSink), "dscp:ADDR" answers every datagram with the DSCP it came
// with (ServeDSCP); a bare "ADDR" is TCP (Serve's form). It runs
// inside a pod's network namespace, so an answer names the pod reached.
func ServeAll(ctx context.Context, listens []string, reply string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(listens))
	for _, l := range listens {
		proto, addr := "tcp", l
		if p, a, ok := strings.Cut(l, ":"); ok && (p == "tcp" || p == "udp" || p == "sink" || p == "dscp") {
			proto, addr = p, a
		}
		go func() {
			var err error
			switch proto {
			case "udp":
				// The answer leaves from the address the pod's routes
				// pick towards the sender: on the pod's own network, the
				// address probed.
				err = serveUDP(ctx, addr, func(_ string, from net.Addr) string { return answer(reply, from) })
			case "sink":
				err = ServeSink(ctx, addr)
			case "dscp":
				err = ServeDSCP(ctx, addr)
			default:
				err = Serve(ctx, addr, reply)
			}
			if err != nil {
				cancel() // one server failing ends them all
				err = fmt.Errorf("%s: %w", l, err)
			}
			errs <- err
		}()
	}
	var all []error
	for range listens {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// ReachTarget is one probe of probe-many: what its standard input lists.
type ReachTarget struct {
	Address  string `json:"address"`
	Protocol string `json:"protocol"`
	Port     int    `json:"port"`
}

// ReachAnswer is a probed ReachTarget: the server's answer (its pod's name),
// or why none came.
type ReachAnswer struct {
	ReachTarget
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}

// probePace spaces the starts of ProbeMany's probes: a burst of a hundred
// first packets at once overflows a userspace datapath's queues.
const probePace = 2 * time.Millisecond

// ProbeMany probes every target, starting one every probePace, each waiting
// at most timeout for an answer, and returns the answers in the targets'
// order. TCP connects and reads a line; UDP sends a datagram and waits for
// the answer. Both try again twice within the timeout (a new connection, a
// new datagram): a first packet may be lost to address resolution or a busy
// datapath, and the kernel would retransmit a SYN only after a second.
func ProbeMany(ctx context.Context, targets []ReachTarget, timeout time.Duration) []ReachAnswer {
	out := make([]ReachAnswer, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Duration(i) * probePace):
			case <-ctx.Done():
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			addr := net.JoinHostPort(tg.Address, fmt.Sprint(tg.Port))
			var answer string
			var err error
			switch tg.Protocol {
			case "tcp":
				answer, err = probeTCP(ctx, addr, timeout/3)
			case "udp":
				answer, err = probeUDP(ctx, addr, timeout/3)
			default:
				err = fmt.Errorf("protocol %q: want tcp or udp", tg.Protocol)
			}
			out[i] = ReachAnswer{ReachTarget: tg, Answer: answer}
			if err != nil {
				out[i].Error = err.Error()
			}
		}()
	}
	wg.Wait()
	return out
}

// probeTCP connects and reads the answer, opening another connection every
// resend while none answered; the first answer wins. A refused connection
// ends it at once.
func probeTCP(ctx context.Context, addr string, resend time.Duration) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the other attempts
	type result struct {
		answer string
		err    error
	}
	results := make(chan result, 3)
	attempt := func() {
		a, err := tcpAnswer(ctx, addr)
		results <- result{a, err}
	}
	go attempt()
	tick := time.NewTicker(resend)
	defer tick.Stop()
	started := 1
	var last error
	for {
		select {
		case r := <-results:
			if r.err == nil {
				return r.answer, nil
			}
			if last = r.err; errors.Is(r.err, syscall.ECONNREFUSED) {
				return "", r.err
			}
		case <-tick.C:
			if started < 3 {
				started++
				go attempt()
			}
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return "", last
		}
	}
}

// tcpAnswer connects once and reads a line.
func tcpAnswer(ctx context.Context, addr string) (string, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	var line []byte
	buf := make([]byte, 256)
	for !bytes.Contains(line, []byte("\n")) {
		n, err := c.Read(buf)
		line = append(line, buf[:n]...)
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				break
			}
			return "", err
		}
	}
	return strings.TrimSpace(string(line)), nil
}

// probeUDP sends a datagram every resend until an answer comes or ctx ends.
// The socket is connected: only an answer from the address probed counts.
func probeUDP(ctx context.Context, addr string, resend time.Duration) (string, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "udp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	buf := make([]byte, 1500)
	for {
		if _, err := c.Write([]byte("hostname")); err != nil {
			return "", err
		}
		wait := time.Now().Add(resend)
		if wait.After(deadline) {
			wait = deadline
		}
		_ = c.SetReadDeadline(wait)
		n, err := c.Read(buf)
		if err == nil {
			return strings.TrimSpace(string(buf[:n])), nil
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !time.Now().Before(deadline) {
			return "", err
		}
	}
}

// ReachPod is a pod taking part in a reach matrix.
type ReachPod struct {
	// Ref is "<namespace>/<name>"; the pod's server answers with it.
	Ref string
	// Node is the pod's node, Netns its network namespace.
	Node, Netns string
	// Address is the pod's IPv4 address on its primary network (its primary
	// user-defined network, else the default network).
	Address string
}

// ReachPods looks the pods up: node, network namespace (they must be
// plumbed) and primary IPv4 address.
func ReachPods(ctx context.Context, dir string, c client.Client, refs []string) ([]ReachPod, error) {
	out := make([]ReachPod, 0, len(refs))
	for _, ref := range refs {
		p, err := lookupPod(ctx, dir, c, ref)
		if err != nil {
			return nil, err
		}
		a, ok := address(p.nets, OnPrimary, 4)
		if !ok {
			return nil, fmt.Errorf("pod %s has no IPv4 address on its primary network: %s", ref, p.nets)
		}
		out = append(out, ReachPod{Ref: ref, Node: p.node, Netns: p.netns, Address: a.String()})
	}
	return out, nil
}

// ReachServers starts in each pod's network namespace one server process
// listening on ReachListens and answering with the pod's Ref; stop ends them.
func ReachServers(binary string, pods []ReachPod) (stop func(), err error) {
	netns := make([]string, len(pods))
	for i, p := range pods {
		netns[i] = p.Netns
	}
	return startInPods(netns, func(i int) []string {
		argv := []string{binary, "sandbox", "serve", "--reply", pods[i].Ref}
		for _, l := range ReachListens {
			argv = append(argv, "--listen", l)
		}
		return argv
	})
}

// startInPods starts argv(i) in network namespace netns[i], for each i, in
// the background; stop kills them and waits for them.
func startInPods(netns []string, argv func(i int) []string) (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	for i, n := range netns {
		cmd := sandbox.Command(context.Background(), n, argv(i))
		if err := cmd.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("starting %v in %s: %w", argv(i), n, err)
		}
		cmds = append(cmds, cmd)
	}
	return stop, nil
}

// Reachability is a reach matrix: for each source pod, target pod and
// probe, whether the target answered. A pod does not probe itself.
type Reachability struct {
	// Pods are the rows and the columns, as ReachPod.Ref; Probes the cells.
	Pods   []string
	Probes []ReachProbe
	// Nodes, when set, are the pods' nodes (shown when printed).
	Nodes   []string
	reached []bool
	// notes is what a measured probe that did not reach got, one cell per
	// reached cell: a slice, not a map, so that Reach's goroutines may
	// write distinct cells at once.
	notes []string
}

// NewReachability returns a matrix of pods and probes with nothing reached.
func NewReachability(pods []string, probes []ReachProbe) *Reachability {
	n := len(pods) * len(pods) * len(probes)
	return &Reachability{Pods: pods, Probes: probes, reached: make([]bool, n), notes: make([]string, n)}
}

func (r *Reachability) index(from, to, probe int) int {
	return (from*len(r.Pods)+to)*len(r.Probes) + probe
}

// Set records whether pod from reached pod to with probe (indexes into
// Pods and Probes). It may be called concurrently for distinct cells.
func (r *Reachability) Set(from, to, probe int, reached bool) {
	r.reached[r.index(from, to, probe)] = reached
}

// Note records what a probe that did not reach got instead (another pod's
// answer, an error). Like Set, it may be called concurrently for distinct
// cells.
func (r *Reachability) Note(from, to, probe int, note string) {
	r.notes[r.index(from, to, probe)] = note
}

// Reached reports whether pod from reached pod to with probe.
func (r *Reachability) Reached(from, to, probe int) bool {
	return r.reached[r.index(from, to, probe)]
}

// Mismatch is a cell in which two reach matrices differ.
type Mismatch struct {
	From, To  string
	Probe     ReachProbe
	Want, Got bool
	// Note is what the probe got when it did not reach (see Note).
	Note string
}

// String is "from -> to tcp/80: want reached, got blocked (note)".
func (m Mismatch) String() string {
	s := fmt.Sprintf("%s -> %s %s: want %s, got %s", m.From, m.To, m.Probe, verdictWord(m.Want), verdictWord(m.Got))
	if m.Note != "" {
		s += " (" + m.Note + ")"
	}
	return s
}

// Mismatches lists every cell in which got differs from r; the matrices must
// have the same pods and probes (else it is an error).
func (r *Reachability) Mismatches(got *Reachability) ([]Mismatch, error) {
	if fmt.Sprint(r.Pods, r.Probes) != fmt.Sprint(got.Pods, got.Probes) {
		return nil, fmt.Errorf("matrices of different pods or probes: %v %v and %v %v", r.Pods, r.Probes, got.Pods, got.Probes)
	}
	var out []Mismatch
	for i := range r.Pods {
		for j := range r.Pods {
			for k, p := range r.Probes {
				if w, g := r.Reached(i, j, k), got.Reached(i, j, k); i != j && w != g {
					out = append(out, Mismatch{From: r.Pods[i], To: r.Pods[j], Probe: p, Want: w, Got: g, Note: got.notes[got.index(i, j, k)]})
				}
			}
		}
	}
	return out, nil
}

func verdictWord(reached bool) string {
	if reached {
		return "reached"
	}
	return "blocked"
}

// Print writes the matrix: a row per source, a column per target (numbered
// as the rows), a cell per pair with one character per probe, "." reached
// and "X" blocked ("-" for a pod and itself). With mark, a cell that differs
// from mark's is followed by "*".
func (r *Reachability) Print(w io.Writer, mark *Reachability) error {
	var probes []string
	for _, p := range r.Probes {
		probes = append(probes, p.String())
	}
	fmt.Fprintf(w, "rows: from; columns: to; cells: %s (. reached, X blocked)", strings.Join(probes, " "))
	if mark != nil {
		fmt.Fprint(w, "; * differs")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 1, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for j := range r.Pods {
		fmt.Fprintf(tw, "\t%d", j+1)
	}
	fmt.Fprintln(tw)
	for i, from := range r.Pods {
		label := from
		if len(r.Nodes) == len(r.Pods) {
			label += "@" + r.Nodes[i]
		}
		fmt.Fprintf(tw, "%d\t%s", i+1, label)
		for j := range r.Pods {
			cell := strings.Repeat("-", len(r.Probes))
			if i != j {
				var b strings.Builder
				differs := false
				for k := range r.Probes {
					b.WriteByte("X."[boolIndex(r.Reached(i, j, k))])
					differs = differs || (mark != nil && mark.Reached(i, j, k) != r.Reached(i, j, k))
				}
				if differs {
					b.WriteByte('*')
				}
				cell = b.String()
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Reach measures one round of reach matrices, one per group of pods: every
// pod probes every other pod of its group at its Address with every probe,
// from one probe-many process per pod, all pods at once, each probe waiting
// at most timeout. A probe counts as reached only when the answer names the
// target pod.
func Reach(ctx context.Context, binary string, groups [][]ReachPod, probes []ReachProbe, timeout time.Duration) ([]*Reachability, error) {
	type cell struct{ group, from, to, probe int }
	var all []ReachPod
	var targets [][]ReachTarget
	var cells [][]cell // per pod of all, the cell of each of its targets
	rs := make([]*Reachability, len(groups))
	for g, pods := range groups {
		refs := make([]string, len(pods))
		nodes := make([]string, len(pods))
		for i, p := range pods {
			refs[i], nodes[i] = p.Ref, p.Node
		}
		rs[g] = NewReachability(refs, probes)
		rs[g].Nodes = nodes
		for i, src := range pods {
			var ts []ReachTarget
			var cs []cell
			for j, dst := range pods {
				for k, p := range probes {
					if i != j {
						ts = append(ts, ReachTarget{Address: dst.Address, Protocol: p.Protocol, Port: p.Port})
						cs = append(cs, cell{g, i, j, k})
					}
				}
			}
			all, targets, cells = append(all, src), append(targets, ts), append(cells, cs)
		}
	}
	err := probeAll(ctx, binary, all, targets, timeout, func(n int, answers []ReachAnswer) {
		for m, a := range answers {
			c := cells[n][m]
			r := rs[c.group]
			r.Set(c.from, c.to, c.probe, a.Answer == r.Pods[c.to])
			switch {
			case a.Answer != "" && a.Answer != r.Pods[c.to]:
				r.Note(c.from, c.to, c.probe, "answered by "+a.Answer)
			case a.Error != "":
				r.Note(c.from, c.to, c.probe, a.Error)
			}
		}
	})
	return rs, err
}

// ReachSelf has every pod probe its own Address with every probe and
// returns what did not answer with the pod's name: a blocked cell of a reach
// matrix proves something only if its target answers at that address.
func ReachSelf(ctx context.Context, binary string, pods []ReachPod, probes []ReachProbe, timeout time.Duration) ([]string, error) {
	targets := make([][]ReachTarget, len(pods))
	for i, p := range pods {
		for _, pr := range probes {
			targets[i] = append(targets[i], ReachTarget{Address: p.Address, Protocol: pr.Protocol, Port: pr.Port})
		}
	}
	missing := make([][]string, len(pods))
	err := probeAll(ctx, binary, pods, targets, timeout, func(i int, answers []ReachAnswer) {
		for _, a := range answers {
			if a.Answer != pods[i].Ref {
				missing[i] = append(missing[i], fmt.Sprintf("%s %s/%d at %s (answer %q, %s)", pods[i].Ref, a.Protocol, a.Port, a.Address, a.Answer, a.Error))
			}
		}
	})
	var out []string
	for _, m := range missing {
		out = append(out, m...)
	}
	return out, err
}

// probeAll runs probe-many in every pod at once, pod i probing targets[i],
// and hands each pod's answers to got (concurrently, each i once).
func probeAll(ctx context.Context, binary string, pods []ReachPod, targets [][]ReachTarget, timeout time.Duration, got func(i int, answers []ReachAnswer)) error {
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers, err := probeFrom(ctx, binary, p, targets[i], timeout)
			if err != nil {
				errs[i] = err
				return
			}
			got(i, answers)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// probeFrom runs probe-many in a pod's network namespace.
func probeFrom(ctx context.Context, binary string, src ReachPod, targets []ReachTarget, timeout time.Duration) ([]ReachAnswer, error) {
	answers, err := ProbeManyIn(ctx, binary, src.Netns, targets, timeout)
	if err != nil {
		return nil, fmt.Errorf("from %s: %w", src.Ref, err)
	}
	return answers, nil
}

// ProbeManyIn runs `ovn-udn sandbox probe-many` in a network namespace (a
// pod's, a node's, the outside world's) and returns one answer per target.
func ProbeManyIn(ctx context.Context, binary, netns string, targets []ReachTarget, timeout time.Duration) ([]ReachAnswer, error) {
	in, err := json.Marshal(targets)
	if err != nil {
		return nil, err
	}
	cmd := sandbox.Command(ctx, netns, []string{binary, "sandbox", "probe-many", "--timeout", timeout.String()})
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("probe-many in %s: %v: %s", netns, err, strings.TrimSpace(stderr.String()))
	}
	var answers []ReachAnswer
	if err := json.Unmarshal(stdout.Bytes(), &answers); err != nil || len(answers) != len(targets) {
		return nil, fmt.Errorf("probe-many in %s answered %q (%v), want %d answers", netns, stdout.String(), err, len(targets))
	}
	return answers, nil
}
