package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
)

// Client returns an administrator's client of the sandbox in dir.
func Client(dir string) (client.Client, error) {
	_, c, err := openSandbox(dir)
	return c, err
}

// openSandbox reads a sandbox's state and returns it with an admin client.
func openSandbox(dir string) (*State, client.Client, error) {
	l, err := NewLayout(dir)
	if err != nil {
		return nil, nil, err
	}
	st, err := ReadState(l)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := restConfigFor(st.Kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	c, err := client.New(cfg, client.Options{Scheme: clustermanager.Scheme()})
	return st, c, err
}

// PodNetns returns the network namespace of a pod ("<namespace>/<name>") of
// the sandbox, once its node agent has plumbed it.
func PodNetns(ctx context.Context, dir string, c client.Client, ref string) (string, error) {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		return "", fmt.Errorf("pod %q: want <namespace>/<name>", ref)
	}
	l, err := NewLayout(dir)
	if err != nil {
		return "", err
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return "", err
	}
	if pod.Spec.NodeName == "" {
		return "", fmt.Errorf("pod %s has no node", ref)
	}
	// The runtime made the namespace: the node's Open vSwitch records it on
	// the pod's interfaces.
	st, err := ReadState(l)
	if err != nil {
		return "", err
	}
	for _, n := range st.Nodes {
		if n.Name != pod.Spec.NodeName {
			continue
		}
		h := cni.Host{OVSDB: n.OVSDB, Command: deps.OVNCommand}
		plugged, err := h.Ports()
		if err != nil {
			return "", fmt.Errorf("pod %s: reading %s's Open vSwitch: %w", ref, n.Name, err)
		}
		for _, p := range plugged[ns+"/"+name] {
			if _, err := os.Stat(filepath.Join("/run/netns", p.Netns)); p.Netns != "" && err == nil {
				return p.Netns, nil
			}
		}
	}
	return "", fmt.Errorf("pod %s is not plumbed yet (its node %s records no network namespace for it)", ref, pod.Spec.NodeName)
}

// Command returns a command running argv inside a pod's network namespace.
// Programs installed with OVN (ping, nc, ip, tcpdump, ...) are taken from
// there, others from $PATH; the command's PATH ends with OVN's programs,
// after the host's own, so that a host program the command runs (sh -c,
// timeout) finds them too.
func Command(ctx context.Context, netns string, argv []string) *exec.Cmd {
	prog := argv[0]
	if !strings.Contains(prog, "/") {
		if p := deps.OVNProgram(prog); fileExists(p) {
			prog = p
		}
	}
	args := append([]string{"netns", "exec", netns, prog}, argv[1:]...)
	cmd := exec.CommandContext(ctx, deps.OVNProgram("ip"), args...)
	cmd.Env = WithOVNPath(os.Environ())
	return cmd
}

// WithOVNPath returns env with OVN's program directory appended to its
// PATH (which it gets when it has none).
func WithOVNPath(env []string) []string {
	out := make([]string, 0, len(env)+1)
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			found = true
			if v == "" {
				kv = "PATH=" + deps.OVNBinDir()
			} else {
				kv = "PATH=" + v + string(os.PathListSeparator) + deps.OVNBinDir()
			}
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"+string(os.PathListSeparator)+deps.OVNBinDir())
	}
	return out
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Exec runs argv in a pod's network namespace with the given standard
// streams and returns its exit code.
func Exec(ctx context.Context, dir, ref string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(argv) == 0 {
		return 0, fmt.Errorf("no command given")
	}
	c, err := Client(dir)
	if err != nil {
		return 0, err
	}
	netns, err := PodNetns(ctx, dir, c, ref)
	if err != nil {
		return 0, err
	}
	ns, _, _ := strings.Cut(ref, "/")
	if err := writeResolvConf(ctx, c, netns, ns); err != nil {
		return 0, fmt.Errorf("pod %s's resolv.conf: %w", ref, err)
	}
	return runStreams(Command(ctx, netns, argv), stdin, stdout, stderr)
}

// ExecNetns runs argv in one of the sandbox's own network namespaces: the
// outside world (node "") or a node's (its host network), and returns its
// exit code.
func ExecNetns(ctx context.Context, dir, node string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(argv) == 0 {
		return 0, fmt.Errorf("no command given")
	}
	l, err := NewLayout(dir)
	if err != nil {
		return 0, err
	}
	netns := l.ExternalNetns()
	if node != "" {
		netns = l.NodeNetns(node)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", netns)); err != nil {
		return 0, fmt.Errorf("no network namespace %s: is the sandbox in %s up (and the node named right)?", netns, dir)
	}
	return runStreams(Command(ctx, netns, argv), stdin, stdout, stderr)
}

// runStreams runs cmd with the given standard streams and returns its exit
// code; an error only when it could not run.
func runStreams(cmd *exec.Cmd, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}
