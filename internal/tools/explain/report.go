package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
)

// Write prints the report: the two ends, each zone's part of the path hop
// by hop (datapath, the port the packet entered by and the one it left by,
// and what decided on the way), then the outcome and why. verbose adds
// each zone's ovn-trace command input and whole output.
func (r *Report) Write(w io.Writer, verbose bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "from %s\n", r.From)
	what := r.Protocol
	if r.Port != 0 {
		what = fmt.Sprintf("%s port %d", r.Protocol, r.Port)
	}
	fmt.Fprintf(&b, "to   %s, %s\n", r.To, what)
	for _, seg := range r.Segments {
		fmt.Fprintf(&b, "\nzone of %s, entering %s at %s:\n", seg.Node, seg.Datapath, seg.Packet.InPort)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, l := range hopLines(seg) {
			fmt.Fprintln(tw, l)
		}
		tw.Flush()
		if verbose {
			fmt.Fprintf(&b, "  ovn-trace %s '%s'\n", seg.Datapath, seg.Packet.Expr())
			for _, l := range strings.Split(strings.TrimRight(seg.Verdict.Trace, "\n"), "\n") {
				fmt.Fprintf(&b, "  | %s\n", l)
			}
		}
	}
	b.WriteString("\n")
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	switch r.Outcome {
	case Delivered:
		fmt.Fprintf(&b, "DELIVERED to %s\n", strings.Join(r.Delivered, ", "))
	case Elsewhere:
		fmt.Fprintf(&b, "NOT DELIVERED to %s: the packet went to %s\n", r.To.Pod, strings.Join(r.Delivered, ", "))
		fmt.Fprintf(&b, "why: %s\n", r.Reason)
	case LoadBalanced:
		fmt.Fprintf(&b, "LOAD BALANCED to %s\nwhy the trace stops: %s\n", strings.ReplaceAll(r.Segments[len(r.Segments)-1].Backends, ",", ", "), r.Reason)
	case Dropped:
		fmt.Fprintf(&b, "DROPPED\nwhy: %s\n", r.Reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// hopLines renders a segment's hops, an ingress pipeline and the egress
// pipeline that follows it on the same datapath on one line, each with
// its notes indented below.
func hopLines(seg Segment) []string {
	var out []string
	for i := 0; i < len(seg.Hops); i++ {
		h := seg.Hops[i]
		notes := seg.Notes[i]
		line := fmt.Sprintf("  %s\t%s -> ", h.Datapath, h.InPort)
		end := h
		if h.Pipeline == "ingress" && i+1 < len(seg.Hops) && seg.Hops[i+1].Pipeline == "egress" && seg.Hops[i+1].Datapath == h.Datapath {
			i++
			end = seg.Hops[i]
			notes = append(append([]string(nil), notes...), seg.Notes[i]...)
		}
		line += outLabel(end)
		out = append(out, line)
		for _, n := range notes {
			out = append(out, "  \t    "+n)
		}
	}
	return out
}

// outLabel says where a pipeline sent the packet.
func outLabel(h ovntrace.Hop) string {
	switch {
	case h.Output != nil && h.Output.Type == "remote":
		return h.Output.Port + " (remote: on another node)"
	case h.Output != nil && h.Output.Type != "" && h.Output.Type != "patch" && h.Output.Type != "l3gateway":
		return fmt.Sprintf("%s (%s)", h.Output.Port, h.Output.Type)
	case h.Output != nil:
		return h.Output.Port
	}
	to := ""
	if h.OutPort != "" {
		to = h.OutPort + ": "
	}
	if s, ok := dropStage(h); ok {
		return fmt.Sprintf("%sdropped at %d. %s", to, s.Table, s.Name)
	}
	return to + "not output"
}
