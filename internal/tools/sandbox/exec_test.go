package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

func TestWithOVNPath(t *testing.T) {
	ovn := deps.OVNBinDir()
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"appended after the host's", []string{"HOME=/root", "PATH=/usr/bin:/bin"}, []string{"HOME=/root", "PATH=/usr/bin:/bin:" + ovn}},
		{"empty PATH", []string{"PATH="}, []string{"PATH=" + ovn}},
		{"no PATH", []string{"HOME=/root"}, []string{"HOME=/root", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:" + ovn}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, WithOVNPath(tc.in)); d != "" {
				t.Errorf("WithOVNPath (-want +got):\n%s", d)
			}
		})
	}
}

// TestExecFindsOVNTools: a host shell run as `sandbox exec` runs its
// commands (the host has no netcat) finds OVN's nc, and the host's own sh
// first.
func TestExecFindsOVNTools(t *testing.T) {
	if os.Getenv("OVN_UDN_SKIP_REAL") != "" || deps.CheckOVN() != nil {
		t.Skip("needs the OVN root (make deps)")
	}
	cmd := exec.Command("sh", "-c", "command -v nc; command -v sh")
	cmd.Env = WithOVNPath([]string{"PATH=/usr/bin:/bin"})
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 || lines[0] != deps.OVNProgram("nc") || strings.HasPrefix(lines[1], deps.OVNBinDir()) {
		t.Errorf("found %q, want OVN's nc and the host's sh", lines)
	}
}
