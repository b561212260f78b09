package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/explain"
)

func TestVersion(t *testing.T) {
	root := NewRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "ovn-udn ") {
		t.Fatalf("version printed %q", out.String())
	}
}

func TestPlannedCommandsSayNotImplemented(t *testing.T) {
	for _, p := range planned {
		root := NewRootCommand()
		root.SetArgs([]string{p.name})
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), "not implemented") {
			t.Errorf("%s: err = %v, want a not-implemented error", p.name, err)
		}
	}
}

// TestRenderExitStatus: render prints what it could render, reports the
// objects it left out on stderr, and exits 1 because of them.
func TestRenderExitStatus(t *testing.T) {
	dir := t.TempDir()
	input := `apiVersion: v1
kind: Namespace
metadata: {name: red, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: good, namespace: red}
spec: {topology: Layer2, role: Primary, subnets: [10.1.0.0/24]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: bad, namespace: red}
spec: {topology: Localnet, role: Primary, subnets: [10.2.0.0/24]}
`
	f := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(f, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json", "nbctl", "dot"} {
		root := NewRootCommand()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"render", "-f", f, "--nodes", "n1", "--render-everywhere", "-o", format}) // no pod uses the network
		err := root.Execute()
		if code, printed := ExitCode(err); err == nil || code != 1 || printed {
			t.Errorf("-o %s: err %v, want exit status 1", format, err)
		}
		if !strings.Contains(errOut.String(), "error: "+f+"#3: UserDefinedNetwork red/bad:") ||
			!strings.Contains(errOut.String(), "Localnet topology is not supported for a Primary network") {
			t.Errorf("-o %s: stderr does not report the bad network:\n%s", format, errOut.String())
		}
		want := map[string]string{"yaml": "name: red.good", "json": `"name": "red.good"`, "nbctl": "switch red.good_ovn_layer2_switch",
			"dot": `label="network red.good\nlayer2 primary\nsubnets 10.1.0.0/24";`}[format]
		if !strings.Contains(out.String(), want) {
			t.Errorf("-o %s: output lacks %q:\n%.2000s", format, want, out.String())
		}
	}
}

// TestRenderDualStackMTU: a valid dual-stack network with an MTU renders (issue
// 22: numbers read from YAML reached CEL as float64 and the MTU rule failed
// to evaluate), and its NAD carries the MTU.
func TestRenderDualStackMTU(t *testing.T) {
	input := `apiVersion: v1
kind: Namespace
metadata: {name: v6, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: v6}
spec: {topology: Layer2, role: Primary, mtu: 9000, subnets: ["10.5.0.0/24", "fd00:5::/64"]}
`
	f := filepath.Join(t.TempDir(), "v6.yaml")
	if err := os.WriteFile(f, []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	root := NewRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"render", "-f", f, "-o", "json"})
	if err := root.Execute(); err != nil {
		code, _ := ExitCode(err)
		t.Fatalf("exit status %d (%v); stderr:\n%s", code, err, errOut.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
	var res struct {
		NADs []struct {
			Namespace, Name string
			Config          json.RawMessage
		} `json:"networkAttachmentDefinitions"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("output is not JSON: %v\n%.2000s", err, out.String())
	}
	if len(res.NADs) != 1 || res.NADs[0].Namespace != "v6" || res.NADs[0].Name != "net" {
		t.Fatalf("NADs %+v, want v6/net", res.NADs)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, res.NADs[0].Config); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(compact.String(), `"mtu":9000`) || !strings.Contains(compact.String(), `"subnets":"10.5.0.0/24,fd00:5::/64"`) {
		t.Errorf("NAD config lacks the MTU or the subnets: %s", compact.String())
	}
}

func TestParseZoneFlags(t *testing.T) {
	got, err := parseZoneFlags([]string{"node1=tcp:10.0.0.1:6641,tcp:10.0.0.1:6642", "node2=unix:/a,unix:/b"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]explain.Zone{"node1": {NB: "tcp:10.0.0.1:6641", SB: "tcp:10.0.0.1:6642"}, "node2": {NB: "unix:/a", SB: "unix:/b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseZoneFlags = %v, want %v", got, want)
	}
	for _, bad := range [][]string{{"node1"}, {"node1=tcp:x"}, {"=a,b"}, {"node1=a,"}, {"n=a,b", "n=c,d"}} {
		if _, err := parseZoneFlags(bad); err == nil || !strings.Contains(err.Error(), "--zone") {
			t.Errorf("parseZoneFlags(%q) error %v, want one naming --zone", bad, err)
		}
	}
}
