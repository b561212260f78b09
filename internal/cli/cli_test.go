package cli

import (
	"bytes"
	"strings"
	"testing"
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
