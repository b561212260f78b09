package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/internal/topology"
)

// Formats are the output formats Write knows.
var Formats = []string{"yaml", "json", "nbctl"}

// Write prints a result: everything as YAML or JSON, or only the Northbound
// rows as an OVN operator reads `ovn-nbctl show` ("nbctl"), zone by zone and
// network by network.
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
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats, ", "))
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
			b.WriteString(topology.Describe(withServices(n, z.Services)))
		}
		for _, s := range z.Services {
			if s.NotRendered != "" {
				fmt.Fprintf(&b, "## service %s\n(not rendered: %s)\n", s.Service, s.NotRendered)
			}
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
