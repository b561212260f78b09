package e2e

import (
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// recovery measures, for each kind of process the run kills, how long the
// system takes to serve again after a SIGKILL: a probe pod created on the
// victim's node right after the kill must be Ready and exchange real packets
// with a resident pod of its network on another node. It reports, per kind,
// the time until the process runs again (the supervisor's restart) and the
// time until the probe is served. OVN_UDN_CHAOS_RECOVERY=1 turns it on
// (make chaos does).
//
// Kills of one node's processes are a minute apart, so the supervisor's
// crash back-off (which resets after a minute) adds nothing: the figures
// are those of a single fault, not of a crash loop.
func (r *chaosRun) recovery() {
	r.t.Helper()
	ns := r.name("rec")
	tn := &chaosTenant{ns: ns, topology: "Layer2", subnet: "10.213.0.0/24", pods: map[string]bool{}}
	r.must(admin.Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{v1.PrimaryNetworkLabel: "", "chaos": "1"}}}), "create namespace "+ns)
	spec := v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(tn.subnet)}}
	r.must(admin.Create(r.ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"}, Spec: spec}), "create UDN in "+ns)
	r.tenants[ns] = tn
	r.waitFor("the recovery tenant's network", func() error {
		if !r.created(tn, "net") {
			return fmt.Errorf("UDN %s/net not created", ns)
		}
		return nil
	})
	// A resident pod on each node: the probe on node i talks to the one on
	// node i+1, so cross-node traffic is part of "served".
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("resident%d", i)
		r.must(admin.Create(r.ctx, podOn(ns, name, sandbox.NodeName(i), nil)), "create pod "+name)
		tn.pods[name] = true
	}
	r.waitFor("the resident pods Ready", r.podsReady)

	type sample struct{ back, served time.Duration }
	got := map[string][]sample{}
	lastHit := map[string]time.Time{} // node (or cluster-manager) -> last kill
	// The floor, measured the same way: a probe with nothing killed.
	const floor = "(nothing killed)"
	for i := 1; i <= 3; i++ {
		probe := r.name("probe")
		start := time.Now()
		r.must(admin.Create(r.ctx, podOn(ns, probe, sandbox.NodeName(i), nil)), "create pod "+probe)
		tn.pods[probe] = true
		r.waitFor("probe "+probe+" served", func() error {
			if err := r.podsReady(); err != nil {
				return err
			}
			return r.reaches(ns+"/"+probe, fmt.Sprintf("%s/resident%d", ns, i%3+1))
		})
		got[floor] = append(got[floor], sample{served: time.Since(start)})
		r.must(admin.Delete(r.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: probe}}), "delete pod "+probe)
		delete(tn.pods, probe)
	}
	for _, kind := range chaosKinds() {
		for i := 1; i <= 3; i++ {
			victim, node := kind+"/"+sandbox.NodeName(i), sandbox.NodeName(i)
			if kind == "cluster-manager" {
				if i > 1 {
					break
				}
				victim, node = kind, kind
			}
			if wait := time.Minute + 5*time.Second - time.Since(lastHit[node]); wait > 0 {
				time.Sleep(wait) // pacing, not synchronization: lets the supervisor's back-off reset
			}
			old := process(r.t, victim)
			if !old.Running {
				r.violation("recovery: %s is not running before its kill", victim)
			}
			if err := syscall.Kill(old.PID, syscall.SIGKILL); err != nil {
				r.violation("recovery: killing %s: %v", victim, err)
			}
			start := time.Now()
			lastHit[node] = start
			r.record("recovery: SIGKILL %s (pid %d)", victim, old.PID)
			probe := r.name("probe")
			probeNode := sandbox.NodeName(i)
			if kind == "cluster-manager" {
				probeNode = sandbox.NodeName(1)
			}
			r.must(admin.Create(r.ctx, podOn(ns, probe, probeNode, nil)), "create pod "+probe)
			tn.pods[probe] = true
			var s sample
			r.waitFor(victim+" running again", func() error {
				p := process(r.t, victim)
				if !p.Running || p.PID == old.PID {
					return fmt.Errorf("%s not restarted", victim)
				}
				if s.back == 0 {
					s.back = time.Since(start)
				}
				return nil
			})
			peer := fmt.Sprintf("resident%d", i%3+1)
			r.waitFor("probe "+probe+" served", func() error {
				if err := r.podsReady(); err != nil {
					return err
				}
				return r.reaches(ns+"/"+probe, ns+"/"+peer)
			})
			s.served = time.Since(start)
			got[kind] = append(got[kind], s)
			r.must(admin.Delete(r.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: probe}}), "delete pod "+probe)
			delete(tn.pods, probe)
		}
	}
	var lines []string
	for _, kind := range append([]string{floor}, chaosKinds()...) {
		ss := got[kind]
		var back, served []string
		for _, s := range ss {
			back = append(back, s.back.Round(100*time.Millisecond).String())
			served = append(served, s.served.Round(100*time.Millisecond).String())
		}
		lines = append(lines, fmt.Sprintf("%-16s restarted after %s; a new pod on its node served after %s", kind, strings.Join(back, ", "), strings.Join(served, ", ")))
	}
	slices.Sort(lines)
	r.t.Logf("chaos: recovery after a single SIGKILL (one sample per node):\n  %s", strings.Join(lines, "\n  "))
}

// reaches checks, with real packets, that pod a reaches pod b over TCP
// (one try; the caller polls).
func (r *chaosRun) reaches(a, b string) error {
	pods, err := demo.ReachPods(r.ctx, dir, admin, []string{a, b})
	if err != nil {
		return err
	}
	probes := []demo.ReachProbe{{Protocol: "tcp", Port: 80}}
	stop, err := demo.ReachServers(binary, pods)
	if err != nil {
		return err
	}
	defer stop()
	want := demo.NewReachability([]string{a, b}, probes)
	want.Set(0, 1, 0, true)
	want.Set(1, 0, 0, true)
	got, err := demo.Reach(r.ctx, binary, [][]demo.ReachPod{pods}, probes, time.Second)
	if err != nil {
		return err
	}
	m, err := want.Mismatches(got[0])
	if err != nil {
		return err
	}
	if len(m) > 0 {
		return fmt.Errorf("%s and %s: %v", a, b, m)
	}
	return nil
}
