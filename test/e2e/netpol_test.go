package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/netpoleval"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// The NetworkPolicy probe matrix, after the upstream Kubernetes network
// policy end-to-end tests: four setups (the default network; two Layer3
// tenants with one subnet; the same with Layer2; a CUDN over two namespaces
// beside a default-network namespace), a server in every pod on TCP 80 and
// 81 and UDP 80, and per scenario a set of policies applied to every setup at
// once; every pod probes every other pod of its setup and the matrices must
// equal what internal/testing/netpoleval — written from the Kubernetes documentation,
// not from our enforcement — says. Probing within setups (a few hundred
// probes a round, not fourteen hundred) keeps the sandbox's userspace
// datapaths from dropping bursts; each setup still has pairs across networks.

// NetpolScenariosEnv limits the scenarios to those whose name matches this
// regular expression (for debugging).
const NetpolScenariosEnv = "OVN_UDN_NETPOL_SCENARIOS"

// npProbes are the matrix's cells: TCP 80, TCP 81, UDP 80.
var npProbes = []demo.ReachProbe{{Protocol: "tcp", Port: 80}, {Protocol: "tcp", Port: 81}, {Protocol: "udp", Port: 80}}

const (
	npProbeTimeout = 2 * time.Second  // a blocked probe costs this much a round (1 s timed out reached cells under load)
	npDeadline     = 60 * time.Second // how long a scenario may take to be enforced (longer on a loaded machine)
	npCUDN         = "np-cu"          // the CUDN of setup cu
	npCUDNLabel    = "np-cudn"        // its namespaces' label
)

// npNamespace is a namespace of a setup.
type npNamespace struct {
	role string // x, y or z: what scenarios call it
	// topology and subnet of the namespace's own primary UDN; cudn: the
	// namespace is one of the CUDN's; neither: the default network.
	topology v1.NetworkTopology
	subnet   string
	cudn     bool
	pods     []string // "<name>@<node>"
}

// npSetup is one of the four setups: namespaces np-<name>-<role>.
type npSetup struct {
	name string
	cidr string // the IPv4 subnet of x's network, for ipBlock
	nss  []npNamespace
	ips  map[string]string // pod ref -> its primary IPv4, once plumbed
}

func (s *npSetup) ns(role string) string { return "np-" + s.name + "-" + role }

// nsSel selects the setup's namespace of a role (by labels every setup's
// namespaces carry: setup=<name>, ns=<role>).
func (s *npSetup) nsSel(role string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"setup": s.name, "ns": role}}
}

// policy is a scenario's policy in the setup's namespace of a role.
func (s *npSetup) policy(role, name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns(role), Name: name}, Spec: spec}
}

// network is the evaluator's name of a namespace's network.
func (s *npSetup) network(n npNamespace) string {
	switch {
	case n.cudn:
		return "cudn/" + npCUDN
	case n.topology != "":
		return s.ns(n.role) + "/tenant"
	}
	return "default"
}

func npSetups() []*npSetup {
	return []*npSetup{
		{name: "def", cidr: "10.244.0.0/16", nss: []npNamespace{
			{role: "x", pods: []string{"a@node1", "b@node2"}},
			{role: "y", pods: []string{"a@node3", "b@node1"}},
			{role: "z", pods: []string{"a@node2", "b@node3"}},
		}},
		// Two tenants with the same subnet: y/a shares node1's slice with
		// x/a and x/b, so it likely has one of their addresses (a probe
		// counts only when the pod meant answers).
		{name: "l3", cidr: "10.140.0.0/16", nss: []npNamespace{
			{role: "x", topology: v1.Layer3, subnet: "10.140.0.0/16/24", pods: []string{"a@node1", "b@node1", "c@node2"}},
			{role: "y", topology: v1.Layer3, subnet: "10.140.0.0/16/24", pods: []string{"a@node1", "b@node3"}},
		}},
		{name: "l2", cidr: "10.150.0.0/24", nss: []npNamespace{
			{role: "x", topology: v1.Layer2, subnet: "10.150.0.0/24", pods: []string{"a@node1", "b@node2", "c@node3"}},
			{role: "y", topology: v1.Layer2, subnet: "10.150.0.0/24", pods: []string{"a@node1", "b@node2"}},
		}},
		// The CUDN is Layer3 (examples/ has a Layer2 one): one network whose
		// per-node switches serve two namespaces.
		{name: "cu", cidr: "10.160.0.0/16", nss: []npNamespace{
			{role: "x", cudn: true, pods: []string{"a@node1", "b@node2"}},
			{role: "y", cudn: true, pods: []string{"a@node3", "b@node1"}},
			{role: "z", pods: []string{"a@node2", "b@node3"}},
		}},
	}
}

// npPod is a setup's pod: labels pod=<name> and app=server (a) or client,
// named ports serve-80, serve-81, udp-80, and "web", which is 80 on pods a
// and 81 on the others (in a second container: a named port resolves on
// each pod).
func npPod(ns, name, node string) *corev1.Pod {
	app, web := "client", int32(81)
	if name == "a" {
		app, web = "server", 80
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"pod": name, "app": app}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{
			{Name: "app", Image: "registry.k8s.io/pause:3.10", Ports: []corev1.ContainerPort{
				{Name: "serve-80", ContainerPort: 80, Protocol: corev1.ProtocolTCP},
				{Name: "serve-81", ContainerPort: 81, Protocol: corev1.ProtocolTCP},
				{Name: "udp-80", ContainerPort: 80, Protocol: corev1.ProtocolUDP},
			}},
			{Name: "web", Image: "registry.k8s.io/pause:3.10", Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: web, Protocol: corev1.ProtocolTCP}}},
		}}}
}

// npScenario is a set of policies, written relative to a setup's namespaces
// so that it applies to every setup.
type npScenario struct {
	name     string
	policies func(s *npSetup) []*networkingv1.NetworkPolicy
}

func npSel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func npPort(proto corev1.Protocol, port *intstr.IntOrString, end *int32) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(proto), Port: port, EndPort: end}
}

var (
	npAll     = metav1.LabelSelector{}
	npIngress = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	npEgress  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	npBoth    = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	npTCP80   = npPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(80)), nil)
	npTCP81   = npPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(81)), nil)
)

// npFrom is an ingress rule allowing peers on ports (none: all of them).
func npFrom(peers []networkingv1.NetworkPolicyPeer, ports ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyIngressRule {
	return []networkingv1.NetworkPolicyIngressRule{{From: peers, Ports: ports}}
}

// npScenarios: consecutive ones expect different matrices where they can
// (the test checks, and waits for the policy-free matrix between two that
// do not, so that one scenario's leftovers cannot pass for the next).
var npScenarios = []npScenario{
	{"no policy", func(*npSetup) []*networkingv1.NetworkPolicy { return nil }},
	{"deny ingress in x", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "deny-ingress", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npIngress})}
	}},
	{"policy selecting no pods has no effect", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "selects-nothing", networkingv1.NetworkPolicySpec{PodSelector: *npSel("pod", "nobody"), PolicyTypes: npBoth})}
	}},
	{"deny egress in x", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "deny-egress", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npEgress})}
	}},
	{"deny ingress and egress in x", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "deny-all", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npBoth})}
	}},
	{"allow ingress from x's own pods only", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "same-namespace", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{PodSelector: &npAll}})})}
	}},
	{"allow to x/a from pods labelled app=client", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "a-from-clients", networkingv1.NetworkPolicySpec{PodSelector: *npSel("pod", "a"),
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{PodSelector: npSel("app", "client")}})})}
	}},
	// On a single-namespace UDN, y is another network: it adds nothing.
	{"allow ingress to x from namespace y", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "from-y", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: s.nsSel("y")}})})}
	}},
	{"namespaceSelector AND podSelector: from y's pod b", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "from-y-b", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: s.nsSel("y"), PodSelector: npSel("pod", "b")}})})}
	}},
	{"namespaceSelector OR podSelector: from y, or from x's pod b", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "from-y-or-b", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: s.nsSel("y")}, {PodSelector: npSel("pod", "b")}})})}
	}},
	{"ingress to x on TCP 80 only", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "tcp-80", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom(nil, npTCP80)})}
	}},
	{"named ports: web (80 on a, 81 on b and c) and udp-80", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "named", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom(nil, npPort(corev1.ProtocolTCP, ptr.To(intstr.FromString("web")), nil), npPort(corev1.ProtocolUDP, ptr.To(intstr.FromString("udp-80")), nil))})}
	}},
	{"endPort: TCP 81-90", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "range", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom(nil, npPort(corev1.ProtocolTCP, ptr.To(intstr.FromInt32(81)), ptr.To(int32(90))))})}
	}},
	{"UDP only", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "udp", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom(nil, npPort(corev1.ProtocolUDP, nil, nil))})}
	}},
	{"ipBlock: x's network except x/b", func(s *npSetup) []*networkingv1.NetworkPolicy {
		block := &networkingv1.IPBlock{CIDR: s.cidr, Except: []string{s.ips[s.ns("x")+"/b"] + "/32"}}
		return []*networkingv1.NetworkPolicy{s.policy("x", "ipblock", networkingv1.NetworkPolicySpec{PodSelector: npAll,
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{IPBlock: block}})})}
	}},
	{"egress from x only to namespace y on TCP 80", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "to-y-80", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npEgress,
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: s.nsSel("y")}}, Ports: []networkingv1.NetworkPolicyPort{npTCP80}}}})}
	}},
	{"egress named port web resolves on the destination", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "to-web", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npEgress,
			Egress: []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{npPort(corev1.ProtocolTCP, ptr.To(intstr.FromString("web")), nil)}}}})}
	}},
	{"two policies on x/a add up", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{
			s.policy("x", "a-80-from-b", networkingv1.NetworkPolicySpec{PodSelector: *npSel("pod", "a"),
				Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{PodSelector: npSel("pod", "b")}}, npTCP80)}),
			s.policy("x", "a-81-from-y", networkingv1.NetworkPolicySpec{PodSelector: *npSel("pod", "a"),
				Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{NamespaceSelector: s.nsSel("y")}}, npTCP81)}),
		}
	}},
	{"deny all and allow all in x add up to allow all", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{
			s.policy("x", "deny-all", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npBoth}),
			s.policy("x", "allow-all", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npBoth,
				Ingress: []networkingv1.NetworkPolicyIngressRule{{}}, Egress: []networkingv1.NetworkPolicyEgressRule{{}}}),
		}
	}},
	{"policyTypes Egress only: its ingress rules are ignored", func(s *npSetup) []*networkingv1.NetworkPolicy {
		return []*networkingv1.NetworkPolicy{s.policy("x", "egress-only", networkingv1.NetworkPolicySpec{PodSelector: npAll, PolicyTypes: npEgress,
			Ingress: npFrom([]networkingv1.NetworkPolicyPeer{{PodSelector: npSel("pod", "b")}}),
			Egress:  []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &npAll}}}}})}
	}},
}

// npPlan is a scenario ready to run: its policies and the matrices
// expected, one per setup.
type npPlan struct {
	npScenario
	objs []*networkingv1.NetworkPolicy
	want []*demo.Reachability
	why  map[string]string // the evaluator's reason per blocked cell
}

// TestNetworkPolicyMatrix: per scenario, every pod of each setup probes
// every other pod of its setup (TCP 80, TCP 81, UDP 80) and each setup's
// matrix must become the evaluator's within npDeadline.
// OVN_UDN_NETPOL_SCENARIOS (a regular expression) limits the scenarios.
func TestNetworkPolicyMatrix(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	only := regexp.MustCompile("")
	if v := os.Getenv(NetpolScenariosEnv); v != "" {
		var err error
		if only, err = regexp.Compile(v); err != nil {
			t.Fatalf("%s: %v", NetpolScenariosEnv, err)
		}
	}
	setups := npSetups()
	refs := npCreate(t, setups)
	t.Logf("%d pods of %d setups created (%s)", len(refs), len(setups), time.Since(start).Round(100*time.Millisecond))
	if err := demo.WaitPodsReady(ctx, dir, admin, refs, 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	pods, err := demo.ReachPods(ctx, dir, admin, refs)
	if err != nil {
		t.Fatal(err)
	}
	groups := make([][]demo.ReachPod, len(setups))
	for g, s := range setups {
		s.ips = map[string]string{}
		for _, p := range pods {
			if strings.HasPrefix(p.Ref, "np-"+s.name+"-") {
				s.ips[p.Ref] = p.Address
				groups[g] = append(groups[g], p)
			}
		}
	}
	reachServers(t, pods, npProbes, npProbeTimeout, npDeadline)
	t.Logf("pods ready, servers answering (%s)", time.Since(start).Round(100*time.Millisecond))

	plans := npPlans(t, setups, groups)
	baseline := plans[0].want // no policy
	var last []*demo.Reachability
	for _, p := range plans {
		if !only.MatchString(p.name) {
			continue
		}
		if last != nil && npSame(last, p.want) && !npSame(last, baseline) {
			// The previous scenario's leftovers would pass for this one.
			if ok, _, _ := npMeasureUntil(t, groups, baseline); !ok {
				t.Errorf("before %q: the policy-free matrix did not come back", p.name)
			}
		}
		t.Run(p.name, func(t *testing.T) { npRun(t, setups, groups, p) })
		last = p.want
	}
	t.Logf("scenarios done (%s)", time.Since(start).Round(100*time.Millisecond))
}

// npCreate creates the setups' namespaces, networks and pods, waiting for
// the networks before creating pods, and registers their deletion (waiting
// until they are gone); it returns the pods' refs.
func npCreate(t *testing.T, setups []*npSetup) []string {
	t.Helper()
	ctx := context.Background()
	var objs []client.Object // deleted at the end, namespaces with all they hold
	t.Cleanup(func() {
		start := time.Now()
		// Pods first: a namespace whose pods are already gone is finalized
		// at once, not after the namespace controller's grace estimate.
		var namespaces []string
		for _, o := range objs {
			if _, ok := o.(*corev1.Namespace); ok {
				namespaces = append(namespaces, o.GetName())
				if err := admin.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(o.GetName())); err != nil {
					t.Errorf("deleting the pods of %s: %v", o.GetName(), err)
				}
			}
		}
		eventually(t, func() error {
			for _, ns := range namespaces {
				var list corev1.PodList
				if err := admin.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) > 0 {
					return fmt.Errorf("%d pods of %s left (%v)", len(list.Items), ns, err)
				}
			}
			return nil
		})
		t.Logf("pods gone (%s)", time.Since(start).Round(100*time.Millisecond))
		for _, o := range objs {
			if err := admin.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", o, o.GetName(), err)
			}
		}
		eventually(t, func() error {
			for _, o := range objs {
				if err := admin.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s still exists (%v)", o, o.GetName(), err)
				}
			}
			return nil
		})
		t.Logf("namespaces and networks gone (%s)", time.Since(start).Round(100*time.Millisecond))
	})
	create := func(o client.Object) {
		t.Helper()
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cudn := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: npCUDN},
		Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: *npSel(npCUDNLabel, npCUDN),
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.160.0.0/16/24"}}}}
	networks := []client.Object{cudn}
	for _, s := range setups {
		for _, n := range s.nss {
			labels := map[string]string{"setup": s.name, "ns": n.role}
			if n.topology != "" || n.cudn {
				labels[v1.PrimaryNetworkLabel] = ""
			}
			if n.cudn {
				labels[npCUDNLabel] = npCUDN
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns(n.role), Labels: labels}}
			create(ns)
			objs = append(objs, ns)
			if n.topology != "" {
				udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "tenant"},
					Spec: v1.UserDefinedNetworkSpec{Topology: n.topology, Role: v1.Primary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(n.subnet)}}}
				create(udn)
				networks = append(networks, udn)
			}
		}
	}
	create(cudn)
	objs = append(objs, cudn)
	for _, n := range networks {
		cmtest.WaitNetworkCreated(t, admin, n)
	}
	var refs []string
	for _, s := range setups {
		for _, n := range s.nss {
			for _, p := range n.pods {
				name, node, _ := strings.Cut(p, "@")
				create(npPod(s.ns(n.role), name, node))
				refs = append(refs, s.ns(n.role)+"/"+name)
			}
		}
	}
	return refs
}

// npPlans builds every scenario's policies and expected matrices from the
// setups' namespaces (labels as stored) and pods (labels, ports, addresses).
func npPlans(t *testing.T, setups []*npSetup, groups [][]demo.ReachPod) []npPlan {
	t.Helper()
	ctx := context.Background()
	var namespaces []netpoleval.Namespace
	for _, s := range setups {
		for _, n := range s.nss {
			ns := &corev1.Namespace{}
			if err := admin.Get(ctx, client.ObjectKey{Name: s.ns(n.role)}, ns); err != nil {
				t.Fatal(err)
			}
			namespaces = append(namespaces, netpoleval.Namespace{Name: ns.Name, Labels: ns.Labels, Network: s.network(n)})
		}
	}
	evGroups := make([][]netpoleval.Pod, len(groups))
	for g, pods := range groups {
		for _, rp := range pods {
			ns, name, _ := strings.Cut(rp.Ref, "/")
			p := &corev1.Pod{}
			if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				t.Fatal(err)
			}
			ep := netpoleval.Pod{Namespace: ns, Name: name, Labels: p.Labels}
			for _, c := range p.Spec.Containers {
				ep.Ports = append(ep.Ports, c.Ports...)
			}
			var err error
			if ep.IP, err = netip.ParseAddr(rp.Address); err != nil {
				t.Fatal(err)
			}
			evGroups[g] = append(evGroups[g], ep)
		}
	}
	plans, err := npExpect(setups, namespaces, evGroups)
	if err != nil {
		t.Fatal(err)
	}
	return plans
}

// npExpect is the pure part of npPlans: each scenario's policies for every
// setup, and the evaluator's matrix of each setup's pods (groups[i] are
// setups[i]'s). The evaluator sees every namespace and every policy.
func npExpect(setups []*npSetup, namespaces []netpoleval.Namespace, groups [][]netpoleval.Pod) ([]npPlan, error) {
	var plans []npPlan
	for _, sc := range npScenarios {
		p := npPlan{npScenario: sc, why: map[string]string{}}
		var policies []networkingv1.NetworkPolicy
		for _, s := range setups {
			for _, o := range sc.policies(s) {
				p.objs = append(p.objs, o)
				policies = append(policies, *o.DeepCopy())
			}
		}
		ev, err := netpoleval.New(namespaces, policies)
		if err != nil {
			return nil, fmt.Errorf("scenario %q: %w", sc.name, err)
		}
		for _, pods := range groups {
			refs := make([]string, len(pods))
			for i, p := range pods {
				refs[i] = p.Ref()
			}
			want := demo.NewReachability(refs, npProbes)
			for i, from := range pods {
				for j, to := range pods {
					for k, pr := range npProbes {
						if i == j {
							continue
						}
						ok, why := ev.Allowed(from, to, netpoleval.Port{Protocol: corev1.Protocol(strings.ToUpper(pr.Protocol)), Port: int32(pr.Port)})
						want.Set(i, j, k, ok)
						if !ok {
							p.why[npCell(refs[i], refs[j], pr)] = why
						}
					}
				}
			}
			p.want = append(p.want, want)
		}
		plans = append(plans, p)
	}
	return plans, nil
}

func npCell(from, to string, p demo.ReachProbe) string {
	return from + " -> " + to + " " + p.String()
}

// npSame reports whether two lists of matrices are equal.
func npSame(a, b []*demo.Reachability) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if m, err := a[i].Mismatches(b[i]); err != nil || len(m) > 0 {
			return false
		}
	}
	return true
}

// npRun applies a scenario's policies, measures rounds until the matrices
// are the expected ones or npDeadline passes (then fails with both matrices
// of each setup that differs), and deletes the policies.
func npRun(t *testing.T, setups []*npSetup, groups [][]demo.ReachPod, p npPlan) {
	ctx := context.Background()
	start := time.Now()
	for _, o := range p.objs {
		if err := admin.Create(ctx, o.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, o := range p.objs {
			if err := admin.Delete(ctx, o.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting policy %s/%s: %v", o.Namespace, o.Name, err)
			}
		}
	}()
	ok, got, rounds := npMeasureUntil(t, groups, p.want)
	if ok {
		t.Logf("matrices as expected after %s (cells differing per round: %v)", time.Since(start).Round(100*time.Millisecond), rounds)
		return
	}
	var out, diffs bytes.Buffer
	fmt.Fprintf(&out, "scenario %q: the matrices are not the expected ones after %s (cells differing per round: %v)\n", p.name, npDeadline, rounds)
	n := 0
	for g, want := range p.want {
		mismatches, _ := want.Mismatches(got[g])
		if len(mismatches) == 0 {
			continue
		}
		fmt.Fprintf(&out, "\nsetup %s, expected:\n", setups[g].name)
		_ = want.Print(&out, nil)
		fmt.Fprintf(&out, "setup %s, measured:\n", setups[g].name)
		_ = got[g].Print(&out, want)
		for _, m := range mismatches {
			if n++; n <= 40 {
				fmt.Fprintf(&diffs, "  %s", m)
				if why := p.why[npCell(m.From, m.To, m.Probe)]; why != "" {
					fmt.Fprintf(&diffs, "; evaluator: %s", why)
				}
				fmt.Fprintln(&diffs)
			}
		}
	}
	fmt.Fprintf(&out, "\n%d cells differ:\n%s", n, diffs.String())
	if n > 40 {
		fmt.Fprintf(&out, "  ... and %d more\n", n-40)
	}
	t.Error(out.String())
}

// npMeasureUntil measures rounds until the matrices equal want or
// npDeadline passes; it returns whether they did, the last ones measured and
// how many cells differed in each round.
func npMeasureUntil(t *testing.T, groups [][]demo.ReachPod, want []*demo.Reachability) (bool, []*demo.Reachability, []int) {
	t.Helper()
	deadline := time.Now().Add(npDeadline)
	var rounds []int
	for {
		got, err := demo.Reach(context.Background(), binary, groups, npProbes, npProbeTimeout)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for g := range want {
			m, err := want[g].Mismatches(got[g])
			if err != nil {
				t.Fatal(err)
			}
			n += len(m)
		}
		rounds = append(rounds, n)
		if n == 0 || time.Now().After(deadline) {
			return n == 0, got, rounds
		}
	}
}
