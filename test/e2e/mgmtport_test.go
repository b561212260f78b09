package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/hostisolation"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestNodeReachesPods: through its management port (ovn-k8s-mp0, the node
// agent's), a node reaches the default-network address of every pod of the
// default network, on it or on other nodes. A pod whose namespace has a
// primary user-defined network is reached by no host process (ping here):
// from other nodes OVN drops it (the pod's default interface admits its
// own node's management address only), and on its own node the agent's
// nftables table lets only the kubelet's cgroup through
// (internal/node/hostisolation; the kubelet's probes of such pods pass in
// TestRealNodes).
func TestNodeReachesPods(t *testing.T) {
	ctx := context.Background()
	pods := map[string]bool{"plain/a": false, "plain/b": false, "l3-blue/c": true, "l2-blue/a": true} // ref -> isolated
	refs := make([]string, 0, len(pods))
	for ref := range pods {
		refs = append(refs, ref)
	}
	if err := demo.WaitPodsReady(ctx, dir, admin, refs, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	ping := func(node, ip string) error {
		var out bytes.Buffer
		code, err := sandbox.ExecNetns(ctx, dir, node, []string{"ping", "-c", "1", "-W", "1", ip}, nil, &out, &out)
		if err != nil || code != 0 {
			return fmt.Errorf("%v %s", err, strings.TrimSpace(out.String()))
		}
		return nil
	}
	for ref, isolated := range pods {
		p := &corev1.Pod{}
		ns, name, _ := strings.Cut(ref, "/")
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
			t.Fatal(err)
		}
		for _, node := range []string{"node1", "node2", "node3"} {
			if !isolated {
				eventually(t, func() error {
					if err := ping(node, p.Status.PodIP); err != nil {
						return fmt.Errorf("%s does not reach %s (%s on %s): %v", node, ref, p.Status.PodIP, p.Spec.NodeName, err)
					}
					return nil
				})
			} else {
				// The agent's table follows the pod's addresses within a
				// reconcile: wait for it, then it holds.
				eventually(t, func() error {
					if ping(node, p.Status.PodIP) == nil {
						return fmt.Errorf("a process of %s (not the kubelet) reaches the default interface of %s on %s, whose namespace has a primary network", node, ref, p.Spec.NodeName)
					}
					return nil
				})
				for range 3 {
					if ping(node, p.Status.PodIP) == nil {
						t.Errorf("a process of %s (not the kubelet) reached %s once blocked", node, ref)
					}
				}
				if node == p.Spec.NodeName {
					// The control: the same ping from the kubelet's cgroup
					// passes, so what blocks is the cgroup, not the path.
					if err := pingAsKubelet(ctx, node, p.Status.PodIP); err != nil {
						t.Errorf("from the kubelet's cgroup, %s does not reach %s: %v", node, ref, err)
					}
				}
			}
		}
	}
}

// pingAsKubelet pings ip from node's network namespace as a process of the
// node's kubelet's cgroup v2 group (the sandbox runs each kubelet in one).
func pingAsKubelet(ctx context.Context, node, ip string) error {
	l := sandbox.NewLayoutMust(dir)
	procs := filepath.Join(hostisolation.ResolveMount(), l.KubeletCgroup(node), "cgroup.procs")
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "nsenter", "--net=/run/netns/"+l.NodeNetns(node), "sh", "-c", `echo $$ > "$0" && exec "$@"`,
		procs, filepath.Join(deps.OVNBinDir(), "ping"), "-c", "1", "-W", "2", ip)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}
