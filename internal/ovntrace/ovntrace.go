// Package ovntrace runs ovn-trace against a Southbound database and turns its
// output into a verdict: where the packet was output, with which header fields
// rewritten on the way, or that it was dropped. ovn-trace exits 0 for drops and
// for unknown ports alike, so the output is what decides.
package ovntrace

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// Packet describes the packet to trace. Zero fields are left out of the
// microflow, except TTL which defaults to 64.
type Packet struct {
	InPort         string
	EthSrc, EthDst string
	// IPSrc and IPDst pick IPv4 or IPv6 by their form.
	IPSrc, IPDst string
	// Proto is "tcp", "udp", "icmp" (ICMPv4 or ICMPv6 echo by family) or "".
	Proto   string
	SrcPort int
	DstPort int
	TTL     int
}

// Expr returns the packet as an ovn-trace microflow expression.
func (p Packet) Expr() string {
	var terms []string
	add := func(format string, args ...any) { terms = append(terms, fmt.Sprintf(format, args...)) }
	if p.InPort != "" {
		add("inport == %q", p.InPort)
	}
	if p.EthSrc != "" {
		add("eth.src == %s", p.EthSrc)
	}
	if p.EthDst != "" {
		add("eth.dst == %s", p.EthDst)
	}
	v6 := strings.Contains(p.IPSrc+p.IPDst, ":")
	ipf := "ip4"
	if v6 {
		ipf = "ip6"
	}
	if p.IPSrc != "" {
		add("%s.src == %s", ipf, p.IPSrc)
	}
	if p.IPDst != "" {
		add("%s.dst == %s", ipf, p.IPDst)
	}
	if p.IPSrc != "" || p.IPDst != "" {
		ttl := p.TTL
		if ttl == 0 {
			ttl = 64
		}
		add("ip.ttl == %d", ttl)
	}
	switch p.Proto {
	case "tcp", "udp":
		add("%s", p.Proto)
		if p.SrcPort != 0 {
			add("%s.src == %d", p.Proto, p.SrcPort)
		}
		if p.DstPort != 0 {
			add("%s.dst == %d", p.Proto, p.DstPort)
		}
	case "icmp":
		if v6 {
			add("icmp6.type == 128 && icmp6.code == 0")
		} else {
			add("icmp4.type == 8 && icmp4.code == 0")
		}
	}
	return strings.Join(terms, " && ")
}

// Output is one packet ovn-trace says leaves the logical network through a port.
type Output struct {
	// Port is the logical port the packet is output to.
	Port string
	// Kind is "packet" for the traced packet itself, or the action that
	// generated a new one ("arp", "nd_ns", "icmp4", ...).
	Kind string
	// Fields are the header fields set on the way ("ip4.src" -> "169.254.0.5"),
	// including those of ct_snat/ct_dnat.
	Fields map[string]string
	// TTLDecrements is how many routers decremented the packet's TTL on
	// the way ("ip.ttl--;").
	TTLDecrements int
}

// Verdict is the parsed result of one trace.
type Verdict struct {
	Datapath string
	Expr     string
	Outputs  []Output
	// Trace is ovn-trace's whole output (detailed, summary and minimal), for
	// failure messages.
	Trace string
}

// Delivered returns the ports the traced packet itself is output to, sorted.
func (v Verdict) Delivered() []string {
	var ports []string
	for _, o := range v.Outputs {
		if o.Kind == "packet" {
			ports = append(ports, o.Port)
		}
	}
	sort.Strings(ports)
	return ports
}

// DeliveredTo returns the output of the traced packet to port, if any.
func (v Verdict) DeliveredTo(port string) (Output, bool) {
	for _, o := range v.Outputs {
		if o.Kind == "packet" && o.Port == port {
			return o, true
		}
	}
	return Output{}, false
}

// Dropped reports whether the traced packet was output nowhere. (Generated
// packets, such as an ARP request for a next hop, do not count as delivery.)
func (v Verdict) Dropped() bool { return len(v.Delivered()) == 0 }

// String summarises the verdict in one line.
func (v Verdict) String() string {
	if v.Dropped() {
		return fmt.Sprintf("%s: %s: dropped", v.Datapath, v.Expr)
	}
	return fmt.Sprintf("%s: %s: delivered to %s", v.Datapath, v.Expr, strings.Join(v.Delivered(), ","))
}

// Options configures Run.
type Options struct {
	// SB is the Southbound remote, e.g. "tcp:127.0.0.1:6642".
	SB string
	// Command builds the ovn-trace command for the given arguments.
	Command func(args ...string) *exec.Cmd
	// CT is the --ct flag value ("new", "est,rpl", ...); empty for none.
	CT string
	// Extra are further ovn-trace flags (e.g. "--select-id=1").
	Extra []string
}

// Run traces expr entering datapath and parses the result.
func Run(opts Options, datapath, expr string) (Verdict, error) {
	args := []string{"--db=" + opts.SB, "--all"}
	if opts.CT != "" {
		args = append(args, "--ct="+opts.CT)
	}
	args = append(args, opts.Extra...)
	args = append(args, datapath, expr)
	cmd := opts.Command(args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Verdict{}, fmt.Errorf("ovn-trace %s %q: %v: %s", datapath, expr, err, strings.TrimSpace(stderr.String()))
	}
	v, err := Parse(stdout.String())
	if err != nil {
		return Verdict{}, fmt.Errorf("ovn-trace %s %q: %w\n%s", datapath, expr, err, stdout.String())
	}
	v.Datapath, v.Expr = datapath, expr
	return v, nil
}

var (
	outputRe = regexp.MustCompile(`^output\("([^"]+)"\);$`)
	setRe    = regexp.MustCompile(`^([a-z_][a-z0-9_.\[\]:]*) = ([^;]+);$`)
	blockRe  = regexp.MustCompile(`^([a-z_0-9]+)(\((.*)\))?( /\*.*\*/)? \{$`)
	pairRe   = regexp.MustCompile(`([a-z0-9_.]+)=([^,)]+)`)
)

// generated names the minimal-trace blocks that emit a new packet rather than
// carry the traced one.
var generated = map[string]bool{
	"arp": true, "nd_ns": true, "nd_na": true, "nd_na_router": true, "icmp4": true, "icmp6": true,
	"icmp4_error": true, "icmp6_error": true, "tcp_reset": true, "sctp_abort": true, "reject": true,
}

type scope struct {
	kind   string
	fields map[string]string
	ttlDec int
}

// Parse reads the "# Minimal trace." section of ovn-trace --all output (or a
// --minimal output) into a Verdict. A malformed block structure is an error.
func Parse(out string) (Verdict, error) {
	v := Verdict{Trace: out}
	minimal := out
	if i := strings.Index(out, "# Minimal trace."); i >= 0 {
		minimal = out[i+len("# Minimal trace."):]
	}
	stack := []scope{{kind: "packet", fields: map[string]string{}}}
	sc := bufio.NewScanner(strings.NewReader(minimal))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		top := &stack[len(stack)-1]
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "/*"):
		case line == "};" || line == "}":
			if len(stack) == 1 {
				return v, fmt.Errorf("unbalanced '}' in minimal trace")
			}
			stack = stack[:len(stack)-1]
		case outputRe.MatchString(line):
			port := outputRe.FindStringSubmatch(line)[1]
			v.Outputs = append(v.Outputs, Output{Port: port, Kind: top.kind, Fields: clone(top.fields), TTLDecrements: top.ttlDec})
		case blockRe.MatchString(line):
			m := blockRe.FindStringSubmatch(line)
			s := scope{kind: top.kind, fields: clone(top.fields), ttlDec: top.ttlDec}
			if generated[m[1]] {
				s.kind = m[1]
			}
			for _, p := range pairRe.FindAllStringSubmatch(m[3], -1) {
				if strings.Contains(p[1], ".") {
					s.fields[p[1]] = p[2]
				}
			}
			stack = append(stack, s)
		case line == "ip.ttl--;":
			top.ttlDec++
		case setRe.MatchString(line):
			m := setRe.FindStringSubmatch(line)
			top.fields[m[1]] = m[2]
		}
	}
	if len(stack) != 1 {
		return v, fmt.Errorf("unbalanced '{' in minimal trace")
	}
	return v, sc.Err()
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
