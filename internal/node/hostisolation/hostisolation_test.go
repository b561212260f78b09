package hostisolation

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// connections and neighbour discovery first, then the kubelet's cgroup,
// then the drop; new forwarded connections toward the pods dropped. The
// script loads in a real nft, in a network namespace of its own (when
// this machine lets the test make one).
func TestTable(t *testing.T) {
	got := Table(Cgroup{Path: "unified/k", Level: 1}, []netip.Addr{netip.MustParseAddr("10.244.0.9"), netip.MustParseAddr("fd00::9"), netip.MustParseAddr("10.244.0.4")})
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
	chain output {
		type filter hook output priority filter; policy accept;
		ct state established,related accept
		icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept
		ip daddr @isolated4 socket cgroupv2 level 1 "unified/k" accept
		ip daddr @isolated4 drop
		ip6 daddr @isolated6 socket cgroupv2 level 1 "unified/k" accept
		ip6 daddr @isolated6 drop
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
	nft := filepath.Join(deps.OVNBinDir(), "nft")
	mount := ResolveMount()
	if _, err := os.Stat(nft); err != nil || mount == "" {
		t.Skipf("no nft (%v) or no cgroup v2 hierarchy here", err)
	}
	dir, err := os.MkdirTemp(mount, "hostisolation-test-")
	if err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	defer os.Remove(dir)
	cg, err := Resolve(mount, filepath.Base(dir))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--net", nft, "-f", "-")
	cmd.Stdin = strings.NewReader(Table(cg, []netip.Addr{netip.MustParseAddr("10.244.0.4"), netip.MustParseAddr("fd00::4")}))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("nft -f: %v: %s", err, out)
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
