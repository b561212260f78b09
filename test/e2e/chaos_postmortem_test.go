package e2e

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// postMortem describes where a pod that never became Ready stands, for a
// violation's message (the sandbox is gone by the time anyone reads it):
// its annotations and conditions, its Events, its port in its node's zone
// Northbound, its OVS interface, and the log lines naming it.
func (r *chaosRun) postMortem(ns, name string) string {
	var b strings.Builder
	key := ns + "/" + name
	p := &corev1.Pod{}
	if err := admin.Get(r.ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		return fmt.Sprintf("pod %s: %v", key, err)
	}
	fmt.Fprintf(&b, "pod %s on %q, phase %s\n", key, p.Spec.NodeName, p.Status.Phase)
	for _, a := range []string{podnet.Annotation, podnet.PlacementAnnotation, podnet.RequestedPrimaryAnnotation} {
		fmt.Fprintf(&b, "  %s: %s\n", a, p.Annotations[a])
	}
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	var events corev1.EventList
	if err := admin.List(r.ctx, &events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name {
				fmt.Fprintf(&b, "  event %s %s: %s (x%d)\n", e.Type, e.Reason, e.Message, e.Count)
			}
		}
	}
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		return b.String()
	}
	for _, n := range st.Nodes {
		out, _ := deps.OVNCommand("ovn-nbctl", "--db="+n.NB, "--bare", "--columns=name,up,external_ids", "find", "Logical_Switch_Port",
			`external_ids:"k8s.ovn.org/pod"="`+key+`"`).Output()
		fmt.Fprintf(&b, "  zone %s NB ports: %s\n", n.Name, strings.Join(strings.Fields(string(out)), " "))
		if n.Name == p.Spec.NodeName {
			out, _ := deps.OVNCommand("ovs-vsctl", "--db="+n.OVSDB, "--bare", "--columns=name,external_ids", "find", "Interface",
				"external_ids:"+cni.PodKey+"=\""+key+"\"").Output()
			fmt.Fprintf(&b, "  node %s OVS interfaces: %s\n", n.Name, strings.Join(strings.Fields(string(out)), " "))
		}
	}
	for _, proc := range st.Processes {
		if !strings.HasSuffix(proc.Name, "/"+p.Spec.NodeName) && proc.Name != "cluster-manager" {
			continue
		}
		if lines := grepTail(proc.Log, key, 8); len(lines) > 0 {
			fmt.Fprintf(&b, "  %s (%d restarts), last lines naming the pod:\n    %s\n", proc.Name, proc.Restarts, strings.Join(lines, "\n    "))
		}
	}
	return b.String()
}

// grepTail returns the last n lines of file containing s (each cut to 400
// bytes).
func grepTail(file, s string, n int) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.Contains(line, s) {
			if len(line) > 400 {
				line = line[:400]
			}
			out = append(out, line)
			if len(out) > n {
				out = out[1:]
			}
		}
	}
	return out
}
