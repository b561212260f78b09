package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
			}
		}
	}
}
