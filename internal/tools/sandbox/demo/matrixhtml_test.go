package demo

import (
	"errors"
	"strings"
	"testing"
)

func TestWriteMatrixHTML(t *testing.T) {
	results := []Result{
		{Check: Check{Name: "same network", From: "l3-blue/a", Family: 4, Reachable: true}, Target: "l3-blue/c", Address: "10.128.0.3",
			FromNode: "node1", TargetNode: "node2", Ping: true, TCP: true},
		{Check: Check{Name: "tenants <isolated>", From: "l3-blue/a", Family: 4}, Target: "l3-red/a", Address: "10.128.0.4",
			FromNode: "node1", TargetNode: "node3"},
		{Check: Check{Name: "should not pass", From: "l3-red/a", Family: 4}, Target: "l3-blue/c", Address: "10.128.0.3",
			FromNode: "node3", TargetNode: "node2", Ping: true, TCP: true},
		{Check: Check{Name: "broken", From: "l3-red/a", Family: 6, Reachable: true}, Target: "l3-red/b", FromNode: "node3", TargetNode: "node3", Err: errors.New("exec failed")},
	}
	var b strings.Builder
	if err := WriteMatrixHTML(&b, "demo <matrix>", results); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"<title>demo &lt;matrix&gt;</title>",
		`<tr><th></th><th>l3-blue/c@node2</th><th>l3-red/a@node3</th><th>l3-red/b@node3</th></tr>`,
		`<tr><th class="from">l3-blue/a@node1</th><td class="reached">same network: reached 10.128.0.3 (IPv4, as expected)</td><td class="blocked">tenants &lt;isolated&gt;: blocked 10.128.0.4 (IPv4, as expected)</td><td></td></tr>`,
		`<td class="reached fail">should not pass: reached 10.128.0.3 (IPv4, NOT AS EXPECTED)</td>`,
		`<td class="blocked fail">broken: error: exec failed  (IPv6, NOT AS EXPECTED)</td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %s\n%s", want, out)
		}
	}
}
