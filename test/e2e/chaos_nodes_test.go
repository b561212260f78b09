package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// Nodes leaving and joining the cluster (OVN_UDN_CHAOS_NODES=1; make chaos
// sets it). make test's short run does not: a node that leaves is drained
// of every pod, the other e2e tests' fixtures included.

// chaosNodes reports whether the run makes nodes leave and join.
func chaosNodes() bool { return os.Getenv("OVN_UDN_CHAOS_NODES") == "1" }

// leaveNode removes a node from the cluster as an administrator does:
// cordoned, drained of every pod (kubectl drain --force: bare pods deleted,
// Deployments' recreated elsewhere), then its Node deleted. Its processes
// keep running, as on a machine taken out to be re-imaged; joinNode
// registers it again. At most one node is away at a time.
func (r *chaosRun) leaveNode() bool {
	if r.absent != "" {
		return false
	}
	node := sandbox.NodeName(1 + r.rng.Intn(3))
	n := &corev1.Node{}
	r.must(admin.Get(r.ctx, client.ObjectKey{Name: node}, n), "read node "+node)
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = true
	r.must(admin.Patch(r.ctx, n, patch), "cordon node "+node)
	drained := r.drain(node)
	r.must(admin.Delete(r.ctx, n), "delete node "+node)
	r.waitFor("node "+node+" deleted", func() error {
		if err := admin.Get(r.ctx, client.ObjectKey{Name: node}, &corev1.Node{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s still exists (%v)", node, err)
		}
		return nil
	})
	// A pod the scheduler bound just before the cordon reached it.
	drained += r.drain(node)
	r.absent = node
	r.record("node %s leaves (%d pods drained)", node, drained)
	return true
}

// drain deletes every pod bound to node and forgets the run's among them.
func (r *chaosRun) drain(node string) int {
	var pods corev1.PodList
	r.must(admin.List(r.ctx, &pods, client.MatchingFields{"spec.nodeName": node}), "list pods on "+node)
	for i := range pods.Items {
		p := &pods.Items[i]
		r.must(admin.Delete(r.ctx, p), "drain pod "+p.Namespace+"/"+p.Name)
		if tn := r.tenants[p.Namespace]; tn != nil {
			delete(tn.pods, p.Name)
		}
	}
	return len(pods.Items)
}

// joinNode registers the node that left again, as an administrator does
// for a kubelet that keeps running: a Node with no annotations and no
// status. The kubelet reports it Ready, the node agent puts its
// annotations back, cluster-manager gives it an ID and its slices (perhaps
// not the ones it had), and every zone renders it.
func (r *chaosRun) joinNode() bool {
	if r.absent == "" {
		return false
	}
	node := r.absent
	r.must(admin.Create(r.ctx, sandbox.NodeObject(node)), "register node "+node)
	r.absent = ""
	r.record("node %s joins", node)
	return true
}

// present returns the nodes in the cluster.
func (r *chaosRun) present() []string {
	var out []string
	for i := 1; i <= 3; i++ {
		if n := sandbox.NodeName(i); n != r.absent {
			out = append(out, n)
		}
	}
	return out
}

// nodesReady: every node in the cluster is Ready and carries its chassis,
// zone, ID and slices.
func (r *chaosRun) nodesReady() error {
	for _, name := range r.present() {
		n := &corev1.Node{}
		if err := admin.Get(r.ctx, client.ObjectKey{Name: name}, n); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		if _, err := nodeinfo.Parse(name, n.Annotations); err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		if !ready {
			return fmt.Errorf("node %s is not Ready", name)
		}
	}
	return nil
}

// nodeForgotten: while a node is away, no zone holds a Northbound row of it
// (its own zone renders nothing, the others no route, port or chassis
// towards it) and no other zone's Southbound knows its chassis.
func (r *chaosRun) nodeForgotten() error {
	if r.absent == "" {
		return nil
	}
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return err
	}
	mark := regexp.MustCompile(`"k8s\.ovn\.org/node"="?` + regexp.QuoteMeta(r.absent) + `"?[,}]`)
	for _, n := range st.Nodes {
		out, err := deps.OVNCommand("ovsdb-client", "dump", n.NB, "OVN_Northbound").Output()
		if err != nil {
			return fmt.Errorf("dumping %s's NB: %w", n.Name, err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if mark.MatchString(line) {
				return fmt.Errorf("zone %s still has a row of node %s, which left: %s", n.Name, r.absent, strings.TrimSpace(line))
			}
		}
		if n.Name == r.absent {
			continue // its own ovn-controller's chassis
		}
		out, err = deps.OVNCommand("ovn-sbctl", "--db="+n.SB, "--bare", "--columns=_uuid", "find", "Chassis", "name="+r.absent).Output()
		if err != nil {
			return fmt.Errorf("%s's SB: %w", n.Name, err)
		}
		if strings.TrimSpace(string(out)) != "" {
			return fmt.Errorf("zone %s's Southbound still has the chassis of node %s, which left", n.Name, r.absent)
		}
	}
	return nil
}
