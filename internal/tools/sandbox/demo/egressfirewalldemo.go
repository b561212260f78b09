package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/dnsresolve/dnsserve"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// Reached and Blocked are what a firewall check sees of a connection.
const (
	Reached = "reached"
	Blocked = "blocked"
)

// EgressFirewallPods are the pods the firewall and QoS checks send from:
// l3-blue/a and l2-blue/a, whose namespaces get the objects, and the
// examples' same-subnet neighbours (Neighbours), which get none.
var EgressFirewallPods = []string{"l3-blue/a", "l3-red/a", "l2-blue/a", "l2-red/a"}

// Neighbours are the examples' pods of l3-blue's and l2-blue's
// same-subnet tenants.
var Neighbours = []string{"l3-red/a", "l2-red/a"}

// EgressFirewalls are the demo's objects: l3-blue may reach the outside
// server's address on its echo port only; l2-blue the outside name
// (sandbox.ExternalDNSName) only. Their same-subnet neighbours l3-red and
// l2-red have none.
func EgressFirewalls() []*v1.EgressFirewall {
	deny := v1.EgressFirewallRule{Type: v1.EgressFirewallRuleDeny, To: v1.EgressFirewallDestination{CIDRSelector: "0.0.0.0/0"}}
	port := []v1.EgressFirewallPort{{Protocol: "TCP", Port: sandbox.ExternalPort}}
	return []*v1.EgressFirewall{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "l3-blue", Name: "default"}, Spec: v1.EgressFirewallSpec{Egress: []v1.EgressFirewallRule{
			{Type: v1.EgressFirewallRuleAllow, To: v1.EgressFirewallDestination{CIDRSelector: sandbox.ExternalServerIP + "/32"}, Ports: port}, deny}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "l2-blue", Name: "default"}, Spec: v1.EgressFirewallSpec{Egress: []v1.EgressFirewallRule{
			{Type: v1.EgressFirewallRuleAllow, To: v1.EgressFirewallDestination{DNSName: sandbox.ExternalDNSName}}, deny}}},
	}
}

// Connects tries a TCP connection from a pod to addr: Reached when the
// connection is made (answered or not: the outside's sink port answers
// nothing), Blocked when it is not within timeout.
func Connects(ctx context.Context, dir, binary, pod, addr string, timeout time.Duration) string {
	_, err := run(ctx, dir, pod, binary, "sandbox", "probe", "--timeout", timeout.String(), addr)
	if err == nil || strings.Contains(err.Error(), "reading the answer") {
		return Reached
	}
	return Blocked
}

// firewallFlow is one connection the demo judges.
type firewallFlow struct {
	name, from, addr, want string
}

// EgressFirewallChecks applies the demo's EgressFirewalls and checks (the
// neighbours: pods of tenants sharing l3-blue's or l2-blue's subnet),
// with connections from the tenants' pods to the outside server's two
// addresses:
//   - the status each object gets, and how long after its create its
//     rules were enforced (a denied connection blocked, an allowed one
//     reached);
//   - l3-blue reaches only its allowed address and port, and l3-red, on
//     its subnet, is not affected; likewise l2-blue through the DNS name,
//     and l2-red;
//   - once the name's record moves to the other address, l2-blue follows
//     it (within the record's TTL);
//   - once the objects are deleted, the tenants reach everything again.
//
// It restores the name's record and deletes the objects.
func EgressFirewallChecks(ctx context.Context, dir, binary string, c client.Client, neighbours []string) ([]AppCheck, error) {
	l := sandbox.NewLayoutMust(dir)
	records, err := os.ReadFile(l.ExternalDNSRecords())
	if err != nil {
		return nil, fmt.Errorf("the outside DNS records: %w", err)
	}
	defer func() { _ = os.WriteFile(l.ExternalDNSRecords(), records, 0o644) }()
	ip1, ip2 := sandbox.ExternalServerIP, sandbox.ExternalServerIP2
	echo := strconv.Itoa(sandbox.ExternalPort)
	sink := strconv.Itoa(sandbox.ExternalSinkPort)
	at := func(ip, port string) string { return net.JoinHostPort(ip, port) }
	const timeout = 400 * time.Millisecond
	judge := func(flows []firewallFlow, wait time.Duration) []AppCheck {
		out := make([]AppCheck, len(flows))
		for i, f := range flows {
			out[i] = AppCheck{Name: f.name, From: f.from, Target: f.addr, Want: f.want}
		}
		_ = proc.WaitFor(wait, 100*time.Millisecond, func() (bool, error) {
			all := true
			for i, f := range flows {
				if out[i].Got == f.want {
					continue // settled: not asked again
				}
				out[i].Got = Connects(ctx, dir, binary, f.from, f.addr, timeout)
				all = all && out[i].Got == f.want
			}
			return all, nil
		})
		return out
	}
	objs := EgressFirewalls()
	// A prober in l3-blue/a tries the address its firewall is about to
	// deny every 50 ms: the first attempt begun after the create that is
	// not answered times the enforcement.
	watch, err := blockedAfter(ctx, dir, c, binary, "l3-blue/a", at(ip2, echo))
	if err != nil {
		return nil, err
	}
	created := time.Now()
	for _, ef := range objs {
		if err := c.Create(ctx, ef); err != nil {
			watch(created)
			return nil, err
		}
		defer func() { _ = c.Delete(context.Background(), ef) }()
	}
	took := watch(created)
	var checks []AppCheck
	// Enforcement: the first blocked connection to a denied address, and
	// the allowed one still reached.
	enforced := judge([]firewallFlow{
		{"the allowed address and port", "l3-blue/a", at(ip1, echo), Reached},
		{"another address: denied", "l3-blue/a", at(ip2, echo), Blocked},
		{"the outside name's address", "l2-blue/a", at(ip1, echo), Reached},
		{"another address: denied", "l2-blue/a", at(ip2, echo), Blocked},
	}, 30*time.Second)
	checks = append(checks, enforced...)
	for _, ef := range objs {
		check := AppCheck{Name: "status, rules enforced " + took + " after create", From: "zones, cluster-manager",
			Target: "EgressFirewall " + ef.Namespace + "/default", Want: v1.EgressFirewallApplied}
		check.Err = proc.WaitFor(30*time.Second, 100*time.Millisecond, func() (bool, error) {
			var cur v1.EgressFirewall
			if err := c.Get(ctx, client.ObjectKeyFromObject(ef), &cur); err != nil {
				return false, err
			}
			check.Got = cur.Status.Status
			return check.Got == check.Want, nil
		})
		checks = append(checks, check)
	}
	flows := []firewallFlow{{"the allowed address, another port: denied", "l3-blue/a", at(ip1, sink), Blocked}}
	for _, n := range neighbours {
		flows = append(flows, firewallFlow{"same subnet, no firewall", n, at(ip2, echo), Reached})
	}
	checks = append(checks, judge(flows, 10*time.Second)...)
	// The name moves to the other address.
	moved := dnsserve.Format([]dnsserve.Record{{Name: sandbox.ExternalDNSName, TTL: 5, Addr: netip.MustParseAddr(ip2)}})
	if err := os.WriteFile(l.ExternalDNSRecords(), []byte(moved), 0o644); err != nil {
		return nil, err
	}
	start := time.Now()
	follow := judge([]firewallFlow{
		{"the name moved: its new address", "l2-blue/a", at(ip2, echo), Reached},
		{"the name moved: its old address", "l2-blue/a", at(ip1, echo), Blocked},
	}, 30*time.Second)
	for i := range follow {
		follow[i].Name += fmt.Sprintf(" (TTL 5 s; seen after %s)", time.Since(start).Round(100*time.Millisecond))
	}
	checks = append(checks, follow...)
	for _, ef := range objs {
		if err := c.Delete(ctx, ef); err != nil {
			return nil, err
		}
	}
	checks = append(checks, judge([]firewallFlow{
		{"the firewall deleted", "l3-blue/a", at(ip2, echo), Reached},
		{"the firewall deleted", "l2-blue/a", at(ip1, echo), Reached},
	}, 30*time.Second)...)
	return checks, nil
}

// blockedAfter starts `sandbox probe-every` (every 50 ms, 300 ms
// timeout) from pod to addr; the function it returns waits (up to 30 s)
// until attempts are blocked, stops the prober, and says how long after
// since the blocking began: the first blocked attempt after the last one
// answered ("never" when none was blocked). An attempt begun just before
// the rules arrived can end blocked too (its later packets meet them):
// the last answered one bounds the time from below.
func blockedAfter(ctx context.Context, dir string, c client.Client, binary, pod, addr string) (func(since time.Time) string, error) {
	netns, err := sandbox.PodNetns(ctx, dir, c, pod)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	cmd := sandbox.Command(pctx, netns, []string{binary, "sandbox", "probe-every", "--interval", "50ms", "--timeout", "300ms", "--duration", "1m", addr})
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	lines := make(chan string, 2048) // a minute of attempts: the reader never blocks
	go func() {
		defer close(lines)
		r := bufio.NewScanner(out)
		for r.Scan() {
			lines <- r.Text()
		}
	}()
	// The target answers before anything is created: a blocked attempt
	// then means the rules.
	answered := false
	for deadline := time.After(10 * time.Second); !answered; {
		select {
		case l, ok := <-lines:
			if !ok {
				cancel()
				return nil, fmt.Errorf("the prober in %s ended: %v", pod, cmd.Wait())
			}
			_, answer, _ := strings.Cut(l, " ")
			answered = !strings.HasPrefix(answer, "error: ")
		case <-deadline:
			cancel()
			_ = cmd.Wait()
			return nil, fmt.Errorf("%s does not reach %s before the firewall", pod, addr)
		}
	}
	return func(since time.Time) string {
		defer func() { cancel(); _ = cmd.Wait() }()
		var lastAnswered, firstBlocked time.Time
		blockedInRow := 0
		deadline := time.After(30 * time.Second)
		for blockedInRow < 10 { // half a second of attempts, all blocked
			select {
			case l, ok := <-lines:
				if !ok {
					return "never"
				}
				pl, ok := ParseProbeLine(l)
				began := pl.Began
				if !ok || began.Before(since) {
					continue
				}
				if !strings.HasPrefix(pl.Answer, "error: ") {
					if began.After(lastAnswered) {
						lastAnswered, firstBlocked, blockedInRow = began, time.Time{}, 0
					}
					continue
				}
				if began.After(lastAnswered) {
					blockedInRow++
					if firstBlocked.IsZero() || began.Before(firstBlocked) {
						firstBlocked = began
					}
				}
			case <-deadline:
				return "never"
			}
		}
		return firstBlocked.Sub(since).Round(10 * time.Millisecond).String()
	}, nil
}

// EgressFirewallDemo prints EgressFirewallChecks, when the sandbox has the
// examples' tenants.
func EgressFirewallDemo(ctx context.Context, dir, binary string, c client.Client, out io.Writer) error {
	for _, p := range EgressFirewallPods {
		ns, name, _ := strings.Cut(p, "/")
		var pod corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
			return nil // other manifests than the examples
		}
	}
	checks, err := EgressFirewallChecks(ctx, dir, binary, c, Neighbours)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nEgressFirewall (ovn-kubernetes' shape: ordered Allow/Deny rules per namespace, ACLs on the namespace's pods on its network; dnsName rules resolved by the zones at the outside world's DNS server and followed from the records' TTL; docs/egressfirewall.md):\n\n")
	return PrintAppChecks(out, checks)
}
