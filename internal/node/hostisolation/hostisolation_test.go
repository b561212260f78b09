package hostisolation

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// TestResolve: nftables resolves a cgroup v2 path under /sys/fs/cgroup,
// so the kubelet's cgroup is given relative to it (the hybrid hierarchy's
// unified/ prefix) with its depth in the v2 hierarchy; a missing cgroup,
// no flag, or a hierarchy elsewhere is an error naming why.
func TestResolve(t *testing.T) {
	got, err := Resolve("/sys/fs/cgroup", "/")
	if err == nil {
		t.Errorf("the root as the kubelet's cgroup: %+v, want an error", got)
	}
	if _, err := Resolve("/sys/fs/cgroup", ""); err == nil || !strings.Contains(err.Error(), "--kubelet-cgroup") {
		t.Errorf("no flag: %v", err)
	}
	if _, err := Resolve("/mnt/cg2", "kubelet"); err == nil || !strings.Contains(err.Error(), "outside /sys/fs/cgroup") {
		t.Errorf("a hierarchy elsewhere: %v", err)
	}
	if _, err := Resolve("", "kubelet"); err == nil {
		t.Error("no hierarchy: no error")
	}
	// The machine's own hierarchy: a group made for the test.
	mount := ResolveMount()
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy mounted here")
	}
	dir, err := os.MkdirTemp(mount, "hostisolation-test-")
	if err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	defer os.Remove(dir)
	name := filepath.Base(dir)
	cg, err := Resolve(mount, "/"+name+"/")
	if err != nil {
		t.Fatal(err)
	}
	want := Cgroup{Path: strings.TrimPrefix(strings.TrimPrefix(mount, "/sys/fs/cgroup"), "/"), Level: 1}
	if want.Path != "" {
		want.Path += "/"
	}
	want.Path += name
	if diff := cmp.Diff(want, cg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := Resolve(mount, name+"-missing"); err == nil {
		t.Error("a cgroup that does not exist resolved")
	}
}

// TestTable: one atomic script, sets of both families, established
// connections and neighbour discovery first, then the confined pods'
// jumps, then the kubelet's cgroup, then the drop; a confined group's
// chain accepts its allowed addresses and drops the rest of Closed; new
// forwarded connections toward the pods dropped. The script loads in a
// real nft, in a network namespace of its own.
func TestTable(t *testing.T) {
	got := Table(testRules(Cgroup{Path: "unified/k", Level: 1}, Cgroup{Path: "unified/kubepods/pod1", Level: 2}))
	want := `table inet ovn_udn_host_isolation
delete table inet ovn_udn_host_isolation
table inet ovn_udn_host_isolation {
	set isolated4 {
		type ipv4_addr
		elements = { 10.244.0.4, 10.244.0.9 }
	}
	set isolated6 {
		type ipv6_addr
		elements = { fd00::9 }
	}
	set allowed0_4 {
		type ipv4_addr
		elements = { 10.96.0.1, 10.96.0.10 }
	}
	set allowed0_6 {
		type ipv6_addr
	}
	chain output {
		type filter hook output priority filter; policy accept;
		ct state established,related accept
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept
		socket cgroupv2 level 2 vmap { "unified/kubepods/pod1" comment "blue/host" : jump confined0 }
		ip daddr @isolated4 socket cgroupv2 level 1 "unified/k" accept
		ip daddr @isolated4 drop
		ip6 daddr @isolated6 socket cgroupv2 level 1 "unified/k" accept
		ip6 daddr @isolated6 drop
	}
	chain confined0 {
		comment "host-network pods confined to blue"
		ct original ip daddr @allowed0_4 accept
		ct original ip6 daddr @allowed0_6 accept
		ct original ip daddr { 10.244.0.0/16, 10.96.0.0/16 } drop
		ct original ip6 daddr { fd00:10:96::/112 } drop
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		ct state new ip daddr @isolated4 drop
		ct state new ip6 daddr @isolated6 drop
	}
}
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// testRules: kubelet reaches the isolated 10.244.0.4, .9 and fd00::9; pod
// is a host-network pod confined to network blue, whose services are
// 10.96.0.10 and the infrastructure 10.96.0.1.
func testRules(kubelet, pod Cgroup) Rules {
	return Rules{
		Kubelet:  kubelet,
		Isolated: []netip.Addr{netip.MustParseAddr("10.244.0.9"), netip.MustParseAddr("fd00::9"), netip.MustParseAddr("10.244.0.4")},
		Confined: []Confined{{Networks: "blue", Allowed: []netip.Addr{netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("10.96.0.1")},
			Pods: []ConfinedPod{{Name: "blue/host", Cgroup: pod}}}},
		Closed: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112"), netip.MustParsePrefix("10.244.0.0/16")},
	}
}

// TestTableEnforces loads Table into a real kernel, in a network namespace
// of the test's (newKernel), and sends a UDP datagram from processes of
// three cgroups, nested as a kubelet's pods are: the kubelet's, a confined
// host-network pod's and another. A datagram the table drops fails to
// send (EPERM); one it lets by leaves.
func TestTableEnforces(t *testing.T) {
	k := newKernel(t, "enforce")
	kubelet, kubeletProcs := k.group("kubelet")
	pod, podProcs := k.group("pod")
	_, otherProcs := k.group("other")
	k.load(Table(testRules(kubelet, pod)))
	send := func(procs, addr string) error {
		out, err := k.in(procs, "bash", "-c", `echo x > "$0"`, "/dev/udp/"+addr+"/53").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	for _, c := range []struct {
		from, procs, addr string
		pass              bool
	}{
		{"kubelet", kubeletProcs, "10.244.0.9", true},
		{"kubelet", kubeletProcs, "fd00::9", true},
		{"kubelet", kubeletProcs, "10.96.0.20", true},
		{"other", otherProcs, "10.244.0.9", false},
		{"other", otherProcs, "fd00::9", false},
		{"other", otherProcs, "10.244.0.5", true},
		{"other", otherProcs, "10.96.0.20", true},
		{"pod", podProcs, "10.96.0.10", true},      // its network's service
		{"pod", podProcs, "10.96.0.1", true},       // the API server
		{"pod", podProcs, "10.96.0.20", false},     // another network's service
		{"pod", podProcs, "fd00:10:96::20", false}, // in IPv6 too
		{"pod", podProcs, "10.244.0.5", false},     // a default-network pod
		{"pod", podProcs, "10.244.0.9", false},     // an isolated pod
		{"pod", podProcs, "192.0.2.50", true},      // outside the cluster
		{"pod", podProcs, "2001:db8::50", true},    // in IPv6 too
	} {
		err := send(c.procs, c.addr)
		if c.pass && err != nil {
			t.Errorf("%s to %s: dropped (%v), want it let by", c.from, c.addr, err)
		}
		if !c.pass && err == nil {
			t.Errorf("%s to %s: let by, want it dropped", c.from, c.addr)
		}
	}
}

// TestIsolated: running pods whose default attachment is locked to
// infrastructure, not others, host-network or finished ones.
func TestIsolated(t *testing.T) {
	pod := func(name, role string, phase corev1.PodPhase, host bool) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{podnet.Annotation: `{"default":{"ip_addresses":["10.244.0.` +
			map[string]string{"a": "5", "b": "6", "c": "7", "d": "8"}[name] + `/24"],"mac_address":"0a:58:0a:f4:00:05","role":"` + role + `"}}`}},
			Spec: corev1.PodSpec{HostNetwork: host}, Status: corev1.PodStatus{Phase: phase}}
	}
	got := Isolated([]corev1.Pod{pod("a", podnet.RoleInfrastructure, corev1.PodRunning, false), pod("b", podnet.RolePrimary, corev1.PodRunning, false),
		pod("c", podnet.RoleInfrastructure, corev1.PodSucceeded, false), pod("d", podnet.RoleInfrastructure, corev1.PodRunning, true)})
	if diff := cmp.Diff([]netip.Addr{netip.MustParseAddr("10.244.0.5")}, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestTableTakesAnyName: names nft would refuse in a comment (longer than
// it takes, with quotes or backslashes; pod names run to 253 characters,
// network names have no limit) are cut and cleaned, and the table loads in
// a real nft: one refused comment would fail the whole table.
func TestTableTakesAnyName(t *testing.T) {
	nft := filepath.Join(deps.OVNBinDir(), "nft")
	mount := ResolveMount()
	if _, err := os.Stat(nft); err != nil || mount == "" {
		t.Skipf("no nft (%v) or no cgroup v2 hierarchy here", err)
	}
	dir, err := os.MkdirTemp(mount, "hostisolation-names-")
	if err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	defer os.Remove(dir)
	cg, err := Resolve(mount, filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("p", 253)
	r := testRules(cg, cg)
	r.Confined[0].Networks = strings.Repeat("tenant-network.", 20) + `we"ird\`
	r.Confined[0].Pods[0].Name = long
	script := Table(r)
	if strings.Contains(script, `we"ird`) || strings.Contains(script, `\`) {
		t.Errorf("a quote or backslash is left in the script:\n%s", script)
	}
	cmd := exec.Command("unshare", "--net", nft, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("nft -f: %v: %s", err, out)
	}
}

// TestNamespaceOf: confined when the namespace has a primary user-defined
// network (labelled with its UDN's NAD, or a hand-made primary NAD), or is
// labelled for one without a NAD yet; its networks and home as podnet
// reads them; a default-network namespace is not confined.
func TestNamespaceOf(t *testing.T) {
	ns := func(labelled bool) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
		if labelled {
			n.Labels = map[string]string{v1.PrimaryNetworkLabel: ""}
		}
		return n
	}
	nad := func(name, network, role string, created int64) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			CreationTimestamp: metav1.Unix(created, 0), Annotations: map[string]string{netconf.NetworkIDAnnotation: "3"}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + network +
				`","topology":"layer3","role":"` + role + `","subnets":"10.100.0.0/16/24","netAttachDefName":"ns/` + name + `"}`}}
	}
	nads := func(ns ...*nadv1.NetworkAttachmentDefinition) map[string]*nadv1.NetworkAttachmentDefinition {
		out := map[string]*nadv1.NetworkAttachmentDefinition{}
		for _, n := range ns {
			out[podnet.Key(n.Namespace, n.Name)] = n
		}
		return out
	}
	for _, c := range []struct {
		name string
		ns   *corev1.Namespace
		nads map[string]*nadv1.NetworkAttachmentDefinition
		want Namespace
	}{
		{"default network", ns(false), nil, Namespace{}},
		{"default network with a secondary NAD", ns(false), nads(nad("sec", "sec", "secondary", 1)), Namespace{}},
		{"labelled, no NAD yet", ns(true), nil, Namespace{Confined: true}},
		{"labelled, its UDN", ns(true), nads(nad("net", "ns.net", "primary", 1)), Namespace{Confined: true, Networks: []string{"ns.net"}, Home: "ns.net"}},
		{"a hand-made primary NAD", ns(false), nads(nad("net", "hand", "primary", 1)), Namespace{Confined: true, Networks: []string{"hand"}, Home: "hand"}},
		{"a hand-made primary NAD not allocated yet", ns(false), func() map[string]*nadv1.NetworkAttachmentDefinition {
			n := nad("net", "hand", "primary", 1)
			n.Annotations = nil
			return nads(n)
		}(), Namespace{Confined: true}},
		{"two primaries: the older is home", ns(true), nads(nad("b", "ns.b", "primary", 2), nad("a", "ns.a", "primary", 1)),
			Namespace{Confined: true, Networks: []string{"ns.a", "ns.b"}, Home: "ns.a"}},
	} {
		if diff := cmp.Diff(c.want, namespaceOf(c.ns, c.nads)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestConfine: host-network pods of confined namespaces, grouped by their
// networks, each group allowed its networks' services' and the
// infrastructure services' ClusterIPs; other pods left out; a pod without
// its cgroup yet waits.
func TestConfine(t *testing.T) {
	pod := func(ns, name string, host bool, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
			Spec: corev1.PodSpec{HostNetwork: host}, Status: corev1.PodStatus{Phase: phase}}
	}
	svc := func(ns, name string, ips ...string) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIPs: ips}}
	}
	namespaces := map[string]Namespace{
		"blue":    {Confined: true, Networks: []string{"blue"}, Home: "blue"},
		"blue2":   {Confined: true, Networks: []string{"blue"}, Home: "blue"}, // a CUDN's second namespace
		"red":     {Confined: true, Networks: []string{"red"}, Home: "red"},
		"multi":   {Confined: true, Networks: []string{"blue", "red"}, Home: "blue"},
		"pending": {Confined: true}, // labelled, no NAD yet
		"plain":   {},
	}
	pods := []corev1.Pod{
		pod("blue", "h1", true, corev1.PodRunning), pod("blue2", "h2", true, corev1.PodPending),
		pod("blue", "p", false, corev1.PodRunning), pod("plain", "h", true, corev1.PodRunning),
		pod("red", "done", true, corev1.PodSucceeded), pod("red", "new", true, corev1.PodPending),
		pod("multi", "h", true, corev1.PodRunning), pod("pending", "h", true, corev1.PodRunning),
	}
	svcs := []corev1.Service{
		svc("blue", "web", "10.96.0.10", "fd00:10:96::10"), svc("blue2", "db", "10.96.0.11"), svc("red", "web", "10.96.0.20"),
		svc("plain", "web", "10.96.0.30"), svc("default", "kubernetes", "10.96.0.1"), svc("blue", "headless", "None"),
	}
	infra := func(ns, name string) bool { return ns == "default" && name == "kubernetes" }
	cgroupOf := func(uid string) (Cgroup, bool) {
		return Cgroup{Path: "kubepods/pod" + uid, Level: 2}, uid != "red-new"
	}
	got, waiting := Confine(pods, svcs, namespaces, infra, cgroupOf)
	a := netip.MustParseAddr
	want := []Confined{
		{Allowed: []netip.Addr{a("10.96.0.1")}, Pods: []ConfinedPod{{Name: "pending/h", Cgroup: Cgroup{Path: "kubepods/podpending-h", Level: 2}}}},
		{Networks: "blue", Allowed: []netip.Addr{a("10.96.0.10"), a("fd00:10:96::10"), a("10.96.0.11"), a("10.96.0.1")}, Pods: []ConfinedPod{
			{Name: "blue/h1", Cgroup: Cgroup{Path: "kubepods/podblue-h1", Level: 2}}, {Name: "blue2/h2", Cgroup: Cgroup{Path: "kubepods/podblue2-h2", Level: 2}}}},
		{Networks: "blue,red", Allowed: []netip.Addr{a("10.96.0.10"), a("fd00:10:96::10"), a("10.96.0.11"), a("10.96.0.20"), a("10.96.0.1")}, Pods: []ConfinedPod{
			{Name: "multi/h", Cgroup: Cgroup{Path: "kubepods/podmulti-h", Level: 2}}}},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"red/new"}, waiting); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
}

// TestPodCgroup: a pod's cgroup under either driver's name and any QoS
// class, relative to /sys/fs/cgroup with its level; none before the
// kubelet makes it. The parent is found when not given.
func TestPodCgroup(t *testing.T) {
	mount := t.TempDir() // a plain directory stands for the hierarchy
	for _, d := range []string{"kubepods/besteffort/pod1234-ab", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5678_cd.slice"} {
		if err := os.MkdirAll(filepath.Join(mount, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	parent, err := ResolvePods(mount, "")
	if err != nil || parent != "kubepods.slice" {
		t.Errorf("ResolvePods: %q %v, want kubepods.slice (the systemd driver's, first)", parent, err)
	}
	if _, err := ResolvePods(mount, "elsewhere"); err == nil || !strings.Contains(err.Error(), "--pods-cgroup") {
		t.Errorf("ResolvePods of a missing parent: %v", err)
	}
	for _, c := range []struct {
		parent, uid string
		want        Cgroup
		ok          bool
	}{
		{"kubepods", "1234-ab", Cgroup{Path: "kubepods/besteffort/pod1234-ab", Level: 3}, true},
		{"kubepods.slice", "5678-cd", Cgroup{Path: "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5678_cd.slice", Level: 3}, true},
		{"kubepods", "9999", Cgroup{}, false},
	} {
		got, ok := PodCgroup(mount, c.parent, c.uid)
		if ok != c.ok {
			t.Errorf("%s: found %v, want %v", c.uid, ok, c.ok)
			continue
		}
		if ok {
			// Under a mount other than /sys/fs/cgroup itself, the path
			// keeps the mount's (a plain directory here).
			c.want.Path = mount + "/" + c.want.Path
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.uid, diff)
			}
		}
	}
}

// BenchmarkTableLoad is what one reconcile costs the node: Table built and
// loaded whole by nft (a process started per load, as the agent does),
// into a network namespace of the benchmark's, for a node's pods
// (isolated addresses), confined host-network pods (each with a cgroup of
// its own) and the ClusterIPs they may reach; the empty table is the
// floor (mostly the start of nft).
func BenchmarkTableLoad(b *testing.B) {
	k := newKernel(b, "load")
	for _, size := range []struct{ pods, hostPods, networks, services int }{{0, 0, 0, 0}, {110, 0, 0, 0}, {110, 10, 2, 1000}, {250, 50, 10, 10000}} {
		b.Run(fmt.Sprintf("pods=%d/host=%d/networks=%d/services=%d", size.pods, size.hostPods, size.networks, size.services), func(b *testing.B) {
			prefix := fmt.Sprintf("%d-%d-", size.pods, size.hostPods)
			cg, _ := k.group(prefix + "kubelet")
			r := Rules{Kubelet: cg, Closed: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("10.244.0.0/16")}}
			for i := range size.pods {
				r.Isolated = append(r.Isolated, netip.AddrFrom4([4]byte{10, 244, byte(i / 250), byte(1 + i%250)}))
			}
			for n := range size.networks {
				c := Confined{Networks: fmt.Sprintf("net%d", n)}
				for i := range size.services / size.networks {
					c.Allowed = append(c.Allowed, netip.AddrFrom4([4]byte{10, 96 + byte(n), byte(i / 250), byte(1 + i%250)}))
				}
				for i := range size.hostPods / size.networks {
					pcg, _ := k.group(fmt.Sprintf("%spod-%d-%d", prefix, n, i))
					c.Pods = append(c.Pods, ConfinedPod{Name: fmt.Sprintf("ns%d/host%d", n, i), Cgroup: pcg})
				}
				r.Confined = append(r.Confined, c)
			}
			var bytes int
			for b.Loop() {
				script := Table(r)
				bytes = len(script)
				k.load(script)
			}
			b.ReportMetric(float64(bytes), "script-bytes")
		})
	}
}

// senderEnv makes the test binary a datagram sender (TestMain): "addr
// count" sends count one-byte datagrams to addr and prints the nanoseconds
// each took, on average.
const senderEnv = "HOSTISOLATION_SENDER"

func TestMain(m *testing.M) {
	if v := os.Getenv(senderEnv); v != "" {
		addr, n, _ := strings.Cut(v, " ")
		count, _ := strconv.Atoi(n)
		conn, err := net.Dial("udp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		start := time.Now()
		for range count {
			if _, err := conn.Write([]byte{0}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		fmt.Println(time.Since(start).Nanoseconds() / int64(count))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// BenchmarkHostSend is what the table costs each datagram the host sends
// (the output hook sees them all): a process of a cgroup sends to an
// address out of a veth, in a network namespace of the benchmark's, with
// no table, with conntrack alone (the floor), then with the table of a
// busy node (250 isolated pods, 50 confined host-network pods over 10
// networks, 10,000 allowed ClusterIPs): from a confined pod to an allowed ClusterIP (the longest
// path: the cgroup lookup, the confined chain, its set), and from another
// process to an address outside the cluster. ns/datagram is the sender's
// own measure, without its start.
func BenchmarkHostSend(b *testing.B) {
	k := newKernel(b, "send")
	group := k.group
	kubelet, _ := group("kubelet")
	r := Rules{Kubelet: kubelet, Closed: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("10.244.0.0/16")}}
	for i := range 250 {
		r.Isolated = append(r.Isolated, netip.AddrFrom4([4]byte{10, 244, byte(i / 250), byte(1 + i%250)}))
	}
	var podProcs, otherProcs string
	for n := range 10 {
		c := Confined{Networks: fmt.Sprintf("net%d", n)}
		for i := range 1000 {
			c.Allowed = append(c.Allowed, netip.AddrFrom4([4]byte{10, 96 + byte(n), byte(i / 250), byte(1 + i%250)}))
		}
		for i := range 5 {
			cg, procs := group(fmt.Sprintf("pod-%d-%d", n, i))
			c.Pods = append(c.Pods, ConfinedPod{Name: fmt.Sprintf("ns%d/host%d", n, i), Cgroup: cg})
			podProcs = procs // the last: its rule is looked up after every other's
		}
		r.Confined = append(r.Confined, c)
	}
	_, otherProcs = group("other")
	load := k.load
	send := func(b *testing.B, procs, addr string) {
		var ns float64
		for b.Loop() {
			cmd := k.in(procs, os.Args[0])
			cmd.Env = append(os.Environ(), senderEnv+"="+addr+":9 200000")
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("sender: %v: %s", err, out)
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				b.Fatalf("sender: %q", out)
			}
			ns += v
		}
		b.ReportMetric(ns/float64(b.N), "ns/datagram")
	}
	allowed := r.Confined[9].Allowed[999].String()
	b.Run("floor/no-table/pod-to-clusterip", func(b *testing.B) { send(b, podProcs, allowed) })
	b.Run("floor/no-table/other-to-outside", func(b *testing.B) { send(b, otherProcs, "198.51.100.7") })
	// Every node has conntrack on (kube-proxy's rules, or OVN's); a table
	// that only asks for it is the floor the table is measured against.
	load("table inet ovn_udn_ct_floor {\n\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n\t\tct state established,related accept\n\t}\n}\n")
	b.Run("floor/conntrack/pod-to-clusterip", func(b *testing.B) { send(b, podProcs, allowed) })
	b.Run("floor/conntrack/other-to-outside", func(b *testing.B) { send(b, otherProcs, "198.51.100.7") })
	load("delete table inet ovn_udn_ct_floor\n" + Table(r))
	b.Run("table/pod-to-allowed-clusterip", func(b *testing.B) { send(b, podProcs, allowed) })
	b.Run("table/other-to-outside", func(b *testing.B) { send(b, otherProcs, "198.51.100.7") })
}
