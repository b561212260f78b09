package ovntrace

import (
	"regexp"
	"strconv"
	"strings"
)

// Hop is one logical datapath pipeline the packet went through, as the
// "# Detailed trace." section of ovn-trace prints it: a header
// `ingress(dp="...", inport="...")` or `egress(dp=..., inport=..., outport=...)`
// followed by the logical flows that matched.
type Hop struct {
	// Pipeline is "ingress" or "egress".
	Pipeline string
	Datapath string
	InPort   string
	// OutPort is set on egress pipelines.
	OutPort string
	Stages  []Stage
	// Output is the port the pipeline output the packet to, with its type
	// ("patch", "remote", "localnet", "" for a VIF...), when it did.
	Output *PortOutput
}

// PortOutput is where a pipeline sent the packet.
type PortOutput struct {
	Port, Type string
}

// Stage is one logical flow that matched.
type Stage struct {
	Table int
	// Name is the pipeline stage, e.g. "ls_out_acl_eval", "lr_in_policy".
	Name string
	// Match is the logical flow's match; Priority its priority.
	Match    string
	Priority int
	// UUID is the first 8 hex digits of the Southbound Logical_Flow row.
	UUID string
	// Actions are the action lines ovn-trace printed under the flow.
	Actions []string
}

// Drops reports whether the stage's actions drop the packet.
func (s Stage) Drops() bool {
	for _, a := range s.Actions {
		if a == "drop;" {
			return true
		}
	}
	return false
}

var (
	hopRe   = regexp.MustCompile(`^(ingress|egress)\(dp="([^"]*)", inport="([^"]*)"(?:, outport="([^"]*)")?\)$`)
	stageRe = regexp.MustCompile(`^(\d+)\. ([a-z_0-9]+) \([^)]*\): (.*), priority (\d+), uuid ([0-9a-f]+)$`)
	outRe   = regexp.MustCompile(`^/\* output to "([^"]*)", type "([^"]*)" \*/;?$`)
)

// ParseHops reads the "# Detailed trace." section of ovn-trace --all output
// (or a plain detailed output) into the pipelines the traced packet went
// through, in order. A multicast group's members (a flood to unknown
// destinations) are hops of the traced packet too; packets generated on the
// way (an ARP request for a next hop, an ICMP error), which ovn-trace prints
// indented under a header naming them, are left out.
func ParseHops(out string) []Hop {
	detailed := out
	if i := strings.Index(detailed, "# Detailed trace."); i >= 0 {
		detailed = detailed[i+len("# Detailed trace."):]
	}
	if i := strings.Index(detailed, "# Summary trace."); i >= 0 {
		detailed = detailed[:i]
	}
	lines := strings.Split(detailed, "\n")
	var hops []Hop
	var cur *Hop
	stageIndent := 0
	skipFrom := -1 // inside a generated packet's trace: lines indented at least this much
	for n, raw := range lines {
		line := strings.TrimSpace(raw)
		if line == "" || strings.Trim(line, "-") == "" {
			continue
		}
		in := indent(raw)
		if skipFrom >= 0 {
			if in >= skipFrom {
				continue
			}
			skipFrom = -1
		}
		// A generated packet's header is its name alone, underlined.
		if generated[line] && n+1 < len(lines) && strings.Trim(strings.TrimSpace(lines[n+1]), "-") == "" {
			skipFrom = in
			continue
		}
		if m := hopRe.FindStringSubmatch(line); m != nil {
			hops = append(hops, Hop{Pipeline: m[1], Datapath: m[2], InPort: m[3], OutPort: m[4]})
			cur = &hops[len(hops)-1]
			continue
		}
		if cur == nil {
			continue
		}
		if m := stageRe.FindStringSubmatch(line); m != nil {
			table, _ := strconv.Atoi(m[1])
			prio, _ := strconv.Atoi(m[4])
			cur.Stages = append(cur.Stages, Stage{Table: table, Name: m[2], Match: m[3], Priority: prio, UUID: m[5]})
			stageIndent = in
			continue
		}
		if len(cur.Stages) == 0 || in <= stageIndent {
			continue
		}
		if m := outRe.FindStringSubmatch(line); m != nil {
			cur.Output = &PortOutput{Port: m[1], Type: m[2]}
			continue
		}
		last := &cur.Stages[len(cur.Stages)-1]
		last.Actions = append(last.Actions, line)
	}
	return hops
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
