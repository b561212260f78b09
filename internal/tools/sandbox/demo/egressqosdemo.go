package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// EgressQoSes are the demo's objects: l3-blue marks its traffic to the
// outside server's first address with DSCP 46 (expedited forwarding) and
// the rest with 10; l2-blue marks all of its traffic with 18. Their
// same-subnet neighbours have none.
func EgressQoSes() []*v1.EgressQoS {
	return []*v1.EgressQoS{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "l3-blue", Name: "default"}, Spec: v1.EgressQoSSpec{Egress: []v1.EgressQoSRule{
			{DSCP: 46, DstCIDR: ptr.To(sandbox.ExternalServerIP + "/32")}, {DSCP: 10}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "l2-blue", Name: "default"}, Spec: v1.EgressQoSSpec{Egress: []v1.EgressQoSRule{{DSCP: 18}}}},
	}
}

// DSCPSeen is the DSCP the outside server saw on a datagram from pod to
// ip ("dscp 46"), or the error.
func DSCPSeen(ctx context.Context, dir, binary, pod, ip string) string {
	out, err := run(ctx, dir, pod, binary, "sandbox", "probe", "--dscp", "--timeout", "500ms",
		net.JoinHostPort(ip, strconv.Itoa(sandbox.ExternalDSCPPort)))
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(out)
}

// EgressQoSChecks applies the demo's EgressQoSes and checks (neighbours as
// EgressFirewallChecks'), with the
// DSCP the outside server sees on the tenants' datagrams: each rule's
// mark, none on the same-subnet neighbours, the status, and no mark once
// the objects are deleted. It deletes the objects.
func EgressQoSChecks(ctx context.Context, dir, binary string, c client.Client, neighbours []string) ([]AppCheck, error) {
	ip1, ip2 := sandbox.ExternalServerIP, sandbox.ExternalServerIP2
	judge := func(name, pod, ip, want string) AppCheck {
		check := AppCheck{Name: name, From: pod, Target: fmt.Sprintf("%s:%d (udp)", ip, sandbox.ExternalDSCPPort), Want: want}
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			check.Got = DSCPSeen(ctx, dir, binary, pod, ip)
			return check.Got == want, nil
		})
		if check.Got == want {
			check.Err = nil
		}
		return check
	}
	checks := []AppCheck{judge("before any EgressQoS", "l3-blue/a", ip1, "dscp 0")}
	objs := EgressQoSes()
	created := time.Now()
	for _, q := range objs {
		if err := c.Create(ctx, q); err != nil {
			return nil, err
		}
		defer func() { _ = c.Delete(context.Background(), q) }()
	}
	first := judge("rule 0: to the first address", "l3-blue/a", ip1, "dscp 46")
	first.Name += fmt.Sprintf(" (seen %s after create)", time.Since(created).Round(10*time.Millisecond))
	checks = append(checks, first,
		judge("rule 1: elsewhere", "l3-blue/a", ip2, "dscp 10"),
		judge("its one rule", "l2-blue/a", ip1, "dscp 18"))
	for _, n := range neighbours {
		checks = append(checks, judge("same subnet, no EgressQoS", n, ip1, "dscp 0"))
	}
	for _, q := range objs {
		check := AppCheck{Name: "status", From: "zones, cluster-manager", Target: "EgressQoS " + q.Namespace + "/default", Want: v1.EgressQoSApplied}
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			var cur v1.EgressQoS
			if err := c.Get(ctx, client.ObjectKeyFromObject(q), &cur); err != nil {
				return false, err
			}
			check.Got = cur.Status.Status
			return check.Got == check.Want, nil
		})
		checks = append(checks, check)
	}
	for _, q := range objs {
		if err := c.Delete(ctx, q); err != nil {
			return nil, err
		}
	}
	checks = append(checks, judge("the EgressQoS deleted", "l3-blue/a", ip1, "dscp 0"), judge("the EgressQoS deleted", "l2-blue/a", ip1, "dscp 0"))
	return checks, nil
}

// EgressQoSDemo prints EgressQoSChecks, when the sandbox has the examples'
// tenants.
func EgressQoSDemo(ctx context.Context, dir, binary string, c client.Client, out io.Writer) error {
	for _, p := range EgressFirewallPods {
		ns, name, _ := strings.Cut(p, "/")
		var pod corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			return nil // other manifests than the examples
		}
	}
	checks, err := EgressQoSChecks(ctx, dir, binary, c, Neighbours)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nEgressQoS (ovn-kubernetes' shape: DSCP marks per namespace as OVN QoS rows on its networks' switches; the DSCP the outside server saw on each datagram; docs/egressqos.md):\n\n")
	return PrintAppChecks(out, checks)
}
