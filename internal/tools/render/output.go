package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/tools/render/dot"
)

// Formats are the output formats Write knows.
var Formats = []string{"yaml", "json", "nbctl", "dot", "svg"}

// Write prints a result: everything as YAML or JSON, or only the Northbound
// rows as an OVN operator reads `ovn-nbctl show` ("nbctl"), zone by zone and
// network by network, or drawn as a Graphviz graph ("dot"; "svg" runs
// Graphviz's dot command on it).
func Write(w io.Writer, res *Result, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case "yaml", "":
		b, err := yaml.Marshal(res)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "nbctl":
		return writeNBCtl(w, res)
	case "dot":
		_, err := io.WriteString(w, dot.Graph(dotZones(res)))
		return err
	case "svg":
		return writeSVG(w, res)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// dotZones are the result's zones as package dot draws them.
func dotZones(res *Result) []dot.Zone {
	out := make([]dot.Zone, 0, len(res.Zones))
	for _, z := range res.Zones {
		dz := dot.Zone{Name: z.Name}
		for _, n := range z.Networks {
			def := n.Definition
			def.Name = n.Network
			dz.Networks = append(dz.Networks, dot.Network{Definition: def, NotRendered: n.NotRendered, Rows: n.Models})
		}
		out = append(out, dz)
	}
	return out
}

// writeSVG pipes the DOT graph through Graphviz's dot command.
func writeSVG(w io.Writer, res *Result) error {
	path, err := exec.LookPath("dot")
	if err != nil {
		return errors.New("-o svg runs Graphviz's dot command, which is not on PATH: install graphviz, or use -o dot and run dot -Tsvg where Graphviz is installed")
	}
	cmd := exec.Command(path, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot.Graph(dotZones(res)))
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dot -Tsvg: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func writeNBCtl(w io.Writer, res *Result) error {
	var b strings.Builder
	for _, z := range res.Zones {
		fmt.Fprintf(&b, "# zone %s\n", z.Name)
		for _, n := range z.Networks {
			fmt.Fprintf(&b, "## network %s\n", n.Network)
			if n.NotRendered != "" {
				fmt.Fprintf(&b, "(not rendered: %s)\n", n.NotRendered)
				continue
			}
			if len(n.Models) == 0 {
				b.WriteString("(no rows: the zone's node does not use the network)\n")
				continue
			}
			b.WriteString(topology.Describe(withServices(n, z.Services)))
		}
		for _, s := range z.Services {
			if s.NotRendered != "" {
				fmt.Fprintf(&b, "## service %s\n(not rendered: %s)\n", s.Service, s.NotRendered)
			}
		}
		for _, c := range z.Connects {
			fmt.Fprintf(&b, "## connect %s\n", c.Connect)
			b.WriteString(describeConnect(c))
		}
		for _, l := range z.Links {
			fmt.Fprintf(&b, "## link between primary networks %s\n", strings.Replace(l.Link, "|", " and ", 1))
			b.WriteString(describeOwned(l.Models, l.Contributions, l.Problems))
		}
		for _, e := range z.EgressIPs {
			fmt.Fprintf(&b, "## EgressIPs of network %s\n", e.Network)
			b.WriteString(describeOwned(e.Models, e.Contributions, e.Problems))
		}
		for _, e := range z.EgressFirewalls {
			fmt.Fprintf(&b, "## EgressFirewall of namespace %s\n", e.Namespace)
			b.WriteString(describeOwned(withPortNames(e.Models), nil, e.Problems))
		}
		for _, e := range z.EgressQoSes {
			fmt.Fprintf(&b, "## EgressQoS of namespace %s\n", e.Namespace)
			b.WriteString(describeOwned(e.Models, e.Contributions, e.Problems))
		}
		if len(z.Policies) > 0 {
			b.WriteString("## network policies\n")
			b.WriteString(describePolicies(z.Policies))
			for _, p := range z.Policies {
				if p.NotRendered != "" {
					fmt.Fprintf(&b, "(%s not rendered: %s)\n", p.Owner, p.NotRendered)
				}
			}
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteProblems prints problems and warnings one per line, as "error:" and
// "warning:" lines.
func WriteProblems(w io.Writer, res *Result) {
	for _, p := range res.Problems {
		fmt.Fprintf(w, "error: %s\n", p)
	}
	for _, p := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", p)
	}
}
