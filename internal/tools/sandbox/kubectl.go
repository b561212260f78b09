package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// Kubectl runs the kubectl make deps installed with the sandbox's
// administrator kubeconfig, and returns its exit code.
func Kubectl(dir string, args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	l, err := NewLayout(dir)
	if err != nil {
		return 0, err
	}
	if _, err := ReadState(l); err != nil {
		return 0, err
	}
	if err := deps.CheckControlPlane(); err != nil {
		return 0, err
	}
	cmd := exec.Command(deps.KubeBinary("kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+l.Kubeconfig())
	return runStreams(cmd, stdin, stdout, stderr)
}

// Env prints shell exports that put the installed kubectl first on PATH and
// point KUBECONFIG at the sandbox: eval "$(ovn-udn sandbox env)".
func Env(dir string, w io.Writer) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	if _, err := ReadState(l); err != nil {
		return err
	}
	kubectl := deps.KubeBinary("kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return fmt.Errorf("kubectl is not installed (%v): run make deps", err)
	}
	_, err = fmt.Fprintf(w, "export KUBECONFIG=%q\nexport PATH=%q:\"$PATH\"\n", l.Kubeconfig(), filepath.Dir(kubectl))
	return err
}
