package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// Networks a check's target address is taken from.
const (
	// OnPrimary is the target's primary network: its primary user-defined
	// network, else the default network.
	OnPrimary = "primary"
	// OnDefault is the target's default-network address (which a pod with a
	// primary user-defined network keeps, isolated).
	OnDefault = "default"
)

// Check is one row of a connectivity matrix: whether From reaches an address
// of a target pod, by ping and by TCP.
type Check struct {
	// Name says what the row shows.
	Name string
	// From is the source pod, "<namespace>/<name>".
	From string
	// To are candidate targets. For an unreachable check, the first whose
	// address no other pod of From's namespace has is used (tenants may share
	// subnets, and reaching an address of one's own network proves nothing
	// about isolation).
	To []string
	// On is OnPrimary, OnDefault, or the attachment key of a secondary
	// network ("<namespace>/<nad>").
	On string
	// Family is 4 or 6.
	Family int
	// Reachable is the expected verdict.
	Reachable bool
}

// Result is a measured check.
type Result struct {
	Check
	// Target is the pod used and Address its address ("" when none fits).
	Target, Address      string
	FromNode, TargetNode string
	// Ping and TCP tell whether each reached the target; Answer is what the
	// TCP server answered.
	Ping, TCP bool
	Answer    string
	// Attempts is how many times the probes ran.
	Attempts int
	Err      error
}

// Pass reports whether the result is the expected one: both probes agree
// with the verdict, and a TCP answer came from the target itself.
func (r Result) Pass() bool {
	return r.Err == nil && r.Ping == r.Reachable && r.TCP == r.Reachable
}

// DemoAppClient is the pod the demo asks apps from (a default-network pod of
// examples/): names resolve through the cluster DNS, servers answer.
const DemoAppClient = "plain/a"

// DemoChecks is the matrix `make demo` measures over examples/.

var DemoChecks = []Check{
	{Name: "default network, across nodes", From: "plain/a", To: []string{"plain/b"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "default network, across nodes, IPv6", From: "plain/a", To: []string{"plain/b"}, On: OnPrimary, Family: 6, Reachable: true},
	{Name: "Layer3 UDN, same node", From: "l3-blue/a", To: []string{"l3-blue/b"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer3 UDN, across nodes", From: "l3-blue/a", To: []string{"l3-blue/c"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer2 UDN, same node", From: "l2-blue/a", To: []string{"l2-blue/b"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "Layer2 UDN, across nodes", From: "l2-blue/a", To: []string{"l2-blue/c"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "CUDN, across namespaces and nodes", From: "shared-a/a", To: []string{"shared-b/b"}, On: OnPrimary, Family: 4, Reachable: true},
	{Name: "secondary Localnet, across nodes", From: "physical/a", To: []string{"physical/b"}, On: "physical/lan", Family: 4, Reachable: true},
	{Name: "Layer3 tenant to other tenant (same subnet)", From: "l3-blue/a", To: []string{"l3-red/a", "l3-red/b", "l3-red/c"}, On: OnPrimary, Family: 4},
	{Name: "Layer2 tenant to other tenant (same subnet)", From: "l2-blue/a", To: []string{"l2-red/a", "l2-red/b", "l2-red/c", "l2-red/d"}, On: OnPrimary, Family: 4},
	{Name: "CUDN to a tenant network", From: "shared-a/a", To: []string{"l2-blue/c"}, On: OnPrimary, Family: 4},
	{Name: "Layer3 UDN pod to default-network pod", From: "l3-blue/a", To: []string{"plain/b"}, On: OnPrimary, Family: 4},
	{Name: "Layer2 UDN pod to default-network pod", From: "l2-blue/a", To: []string{"plain/a"}, On: OnPrimary, Family: 4},
	{Name: "default-network pod to a UDN pod's eth0", From: "plain/a", To: []string{"l3-blue/c"}, On: OnDefault, Family: 4},
}

// podInfo is what the matrix needs of a pod.
type podInfo struct {
	node, netns string
	nets        podnet.Networks
}

// lookupPod reads a pod's node, network namespace (it must be plumbed) and
// attachments.
func lookupPod(ctx context.Context, dir string, c client.Client, ref string) (*podInfo, error) {
	ns, name, _ := strings.Cut(ref, "/")
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return nil, err
	}
	nets, err := podnet.Parse(pod.Annotations)
	if err != nil {
		return nil, fmt.Errorf("pod %s: %w", ref, err)
	}
	netns, err := sandbox.PodNetns(ctx, dir, c, ref)
	if err != nil {
		return nil, err
	}
	return &podInfo{node: pod.Spec.NodeName, netns: netns, nets: nets}, nil
}

// Matrix runs the checks (a few at a time) from inside the pods' network
// namespaces with real ping and TCP probes against Serve (see Servers), and
// returns the results in order.
func Matrix(ctx context.Context, dir, binary string, c client.Client, checks []Check) ([]Result, error) {
	pods := map[string]*podInfo{}
	get := func(ref string) (*podInfo, error) {
		if p, ok := pods[ref]; ok {
			return p, nil
		}
		p, err := lookupPod(ctx, dir, c, ref)
		if err != nil {
			return nil, err
		}
		pods[ref] = p
		return p, nil
	}
	results := make([]Result, len(checks))
	for i, ch := range checks {
		r := Result{Check: ch}
		r.Target, r.Address, r.FromNode, r.TargetNode, r.Err = resolve(ctx, c, ch, get)
		results[i] = r
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range results {
		r := &results[i]
		if r.Err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			src := pods[r.From]
			// A reachable target gets three tries a second apart: a busy
			// machine may lose a first probe, and the verdict is about
			// connectivity, not about the first packet.
			for r.Attempts = 1; ; r.Attempts++ {
				r.Ping = ping(ctx, src.netns, r.Address, r.Family)
				r.Answer, r.TCP = probe(ctx, binary, src.netns, r.Address, r.Target)
				if !r.Reachable || (r.Ping && r.TCP) || r.Attempts == 3 {
					break
				}
				time.Sleep(time.Second)
			}
			if !r.Reachable && !r.TCP {
				// A blocked probe proves isolation only if the target answers
				// at that address at all: ask from inside the target.
				if _, ok := probe(ctx, binary, pods[r.Target].netns, r.Address, r.Target); !ok {
					r.Err = fmt.Errorf("%s does not answer at %s even from inside itself: the check would prove nothing", r.Target, r.Address)
				}
			}
		}()
	}
	wg.Wait()
	return results, nil
}

// resolve picks a check's target pod and address.
func resolve(ctx context.Context, c client.Client, ch Check, get func(string) (*podInfo, error)) (target, addr, fromNode, toNode string, err error) {
	src, err := get(ch.From)
	if err != nil {
		return "", "", "", "", fmt.Errorf("source %s: %w", ch.From, err)
	}
	taken, err := namespaceAddresses(ctx, c, strings.Split(ch.From, "/")[0])
	if err != nil {
		return "", "", "", "", err
	}
	for _, ref := range ch.To {
		p, err := get(ref)
		if err != nil {
			return "", "", "", "", fmt.Errorf("target %s: %w", ref, err)
		}
		a, ok := address(p.nets, ch.On, ch.Family)
		if !ok {
			return "", "", "", "", fmt.Errorf("target %s has no IPv%d address on %s", ref, ch.Family, ch.On)
		}
		if owner, ok := taken[a]; ch.Reachable || !ok || owner == ref {
			return ref, a.String(), src.node, p.node, nil
		}
	}
	return "", "", src.node, "", fmt.Errorf("every target's address is also one of %s's namespace: the check would prove nothing", ch.From)
}

// address is a pod's address of a family on a network of its annotation.
func address(nets podnet.Networks, on string, family int) (netip.Addr, bool) {
	key := on
	switch on {
	case OnDefault:
		key = podnet.DefaultKey
	case OnPrimary:
		key = podnet.DefaultKey
		for k, a := range nets {
			if k != podnet.DefaultKey && a.Role == podnet.RolePrimary {
				key = k
			}
		}
	}
	ips, err := nets[key].Prefixes()
	if err != nil {
		return netip.Addr{}, false
	}
	for _, p := range ips {
		if (family == 6) == p.Addr().Is6() {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// namespaceAddresses returns every address the pods of a namespace have on
// any network, with the pod ("<namespace>/<name>") that has it.
func namespaceAddresses(ctx context.Context, c client.Client, ns string) (map[netip.Addr]string, error) {
	var list corev1.PodList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[netip.Addr]string{}
	for _, p := range list.Items {
		nets, _ := podnet.Parse(p.Annotations)
		for _, a := range nets {
			ips, _ := a.Prefixes()
			for _, ip := range ips {
				out[ip.Addr()] = p.Namespace + "/" + p.Name
			}
		}
	}
	return out, nil
}

// ping sends three echo requests (the first may be spent resolving the
// address) and reports whether any was answered.
func ping(ctx context.Context, netns, addr string, family int) bool {
	return sandbox.Command(ctx, netns, []string{"ping", fmt.Sprintf("-%d", family), "-c", "3", "-i", "0.2", "-W", "1", addr}).Run() == nil
}

// probe connects over TCP from a pod and reports the answer, and whether it
// came from the expected pod.
func probe(ctx context.Context, binary, netns, addr, target string) (string, bool) {
	hostPort := net.JoinHostPort(addr, fmt.Sprint(ProbePort))
	out, err := sandbox.Command(ctx, netns, []string{binary, "sandbox", "probe", "--timeout", "3s", hostPort}).Output()
	if err != nil {
		return "", false
	}
	answer := strings.TrimSpace(string(out))
	return answer, answer == target
}

// Servers starts a TCP server (Serve, answering "<namespace>/<name>") in each
// pod's network namespace; stop ends them.
func Servers(ctx context.Context, dir, binary string, c client.Client, refs []string) (stop func(), err error) {
	netns := make([]string, len(refs))
	for i, ref := range refs {
		if netns[i], err = sandbox.PodNetns(ctx, dir, c, ref); err != nil {
			return nil, err
		}
	}
	return startInPods(netns, func(i int) []string {
		return []string{binary, "sandbox", "serve", "--listen", fmt.Sprintf("[::]:%d", ProbePort), "--reply", refs[i]}
	})
}

// PrintMatrix writes the results as a table with each row's verdict, and
// returns an error naming the rows that were not as expected.
func PrintMatrix(out io.Writer, results []Result) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CHECK\tFROM\tTO\tADDRESS\tPING\tTCP\tEXPECTED\tRESULT")
	var bad []string
	verdict := func(ok bool) string {
		if ok {
			return "reached"
		}
		return "blocked"
	}
	for _, r := range results {
		res := "PASS"
		if r.Attempts > 1 {
			res = fmt.Sprintf("PASS (try %d)", r.Attempts)
		}
		if !r.Pass() {
			res = "FAIL"
			bad = append(bad, r.Name)
		}
		to := r.Target
		if to == "" {
			to = strings.Join(r.To, ",")
		}
		ping, tcp := verdict(r.Ping), verdict(r.TCP)
		if r.Err != nil {
			ping, tcp = "-", "-"
			res = "FAIL: " + r.Err.Error()
		} else if !r.TCP && r.Answer != "" {
			tcp = "answered by " + r.Answer
		}
		fmt.Fprintf(w, "%s\t%s@%s\t%s@%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.From, r.FromNode, to, r.TargetNode, r.Address, ping, tcp, verdict(r.Reachable), res)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d of %d checks were not as expected: %s", len(bad), len(results), strings.Join(bad, "; "))
	}
	return nil
}

// WaitPodsReady waits until the pods are Running and Ready and plumbed.
func WaitPodsReady(ctx context.Context, dir string, c client.Client, refs []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var waiting []string
		for _, ref := range refs {
			if _, err := sandbox.PodNetns(ctx, dir, c, ref); err != nil {
				waiting = append(waiting, ref)
				continue
			}
			ns, name, _ := strings.Cut(ref, "/")
			pod := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil || !kubeobj.PodReady(pod) {
				waiting = append(waiting, ref)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods not ready after %s: %s", timeout, strings.Join(waiting, ", "))
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), fmt.Errorf("pods not ready: %s", strings.Join(waiting, ", ")))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
