package demo

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
)

// WriteMatrixHTML writes measured checks as an HTML page: a grid with a row
// per source pod and a column per target pod, each cell the checks between
// them, green where the packets got through, grey where they were blocked,
// and a red border on any cell whose result was not the expected one.
func WriteMatrixHTML(w io.Writer, title string, results []Result) error {
	type cell struct {
		lines         []string
		fail, reached bool
	}
	var rows, cols []string
	seen := map[string]bool{}
	add := func(list *[]string, s string) {
		if !seen[s] {
			seen[s] = true
			*list = append(*list, s)
		}
	}
	grid := map[[2]string]*cell{}
	for _, r := range results {
		from := r.From + "@" + r.FromNode
		to := r.Target
		if to == "" {
			to = strings.Join(r.To, ",")
		}
		to += "@" + r.TargetNode
		add(&rows, "row:"+from)
		add(&cols, "col:"+to)
		c := grid[[2]string{from, to}]
		if c == nil {
			c = &cell{}
			grid[[2]string{from, to}] = c
		}
		verdict := "blocked"
		if r.TCP {
			verdict, c.reached = "reached", true
		}
		if r.Err != nil {
			verdict = "error: " + r.Err.Error()
		}
		mark := "as expected"
		if !r.Pass() {
			mark, c.fail = "NOT AS EXPECTED", true
		}
		c.lines = append(c.lines, fmt.Sprintf("%s: %s %s (IPv%d, %s)", r.Name, verdict, r.Address, r.Family, mark))
	}
	trim := func(list []string) []string {
		out := make([]string, len(list))
		for i, s := range list {
			_, out[i], _ = strings.Cut(s, ":")
		}
		sort.Strings(out)
		return out
	}
	rowNames, colNames := trim(rows), trim(cols)
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>\n", html.EscapeString(title))
	b.WriteString(`<style>
body { font-family: sans-serif; font-size: 13px; }
table { border-collapse: collapse; }
th, td { border: 1px solid #ccc; padding: 4px 6px; vertical-align: top; }
td.reached { background: #c8efc8; }
td.blocked { background: #e4e4e4; }
td.fail { border: 3px solid #d00000; }
th.from { text-align: left; }
</style></head><body>
`)
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>Rows are sources, columns targets (pod@node); green: TCP got through, grey: blocked; a red border: not the expected result.</p>\n<table>\n<tr><th></th>", html.EscapeString(title))
	for _, c := range colNames {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c))
	}
	b.WriteString("</tr>\n")
	for _, r := range rowNames {
		fmt.Fprintf(&b, "<tr><th class=\"from\">%s</th>", html.EscapeString(r))
		for _, c := range colNames {
			x := grid[[2]string{r, c}]
			if x == nil {
				b.WriteString("<td></td>")
				continue
			}
			class := "blocked"
			if x.reached {
				class = "reached"
			}
			if x.fail {
				class += " fail"
			}
			var lines []string
			for _, l := range x.lines {
				lines = append(lines, html.EscapeString(l))
			}
			fmt.Fprintf(&b, "<td class=%q>%s</td>", class, strings.Join(lines, "<br>"))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
