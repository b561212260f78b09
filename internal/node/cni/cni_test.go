package cni_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
)

func TestInterfaces(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
		Annotations: map[string]string{netconf.NetworksAnnotation: "other/sec-a, sec-b@data"}}}
	nets := podnet.Networks{
		"default":     {IPs: []string{"10.244.1.5/24"}, MAC: "0a:58:0a:f4:01:05", Role: podnet.RoleInfrastructure},
		"ns/blue":     {IPs: []string{"10.128.1.5/24"}, MAC: "0a:58:0a:80:01:05", Role: podnet.RolePrimary, Gateways: []string{"10.128.1.1"}},
		"other/sec-a": {MAC: "02:00:00:00:00:01", Role: podnet.RoleSecondary},
		"ns/sec-b":    {IPs: []string{"192.168.0.5/24"}, MAC: "0a:58:c0:a8:00:05", Role: podnet.RoleSecondary},
	}
	ifs, err := cni.Interfaces(pod, nets, func(string) int { return 1300 })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range ifs {
		got = append(got, i.Name+"="+i.Port)
	}
	want := "eth0=ns_p ovn-udn1=ns.blue_ns_p net1=other.sec-a_ns_p data=ns.sec-b_ns_p"
	if strings.Join(got, " ") != want {
		t.Fatalf("interfaces %v, want %s", got, want)
	}
	if len(ifs[1].Gateways) != 1 || ifs[1].MTU != 1300 || len(ifs[2].IPs) != 0 {
		t.Fatalf("details: %+v", ifs)
	}
	if n := len(cni.HostVeth("a-very-long-port-name_with_namespace_and_pod")); n > 15 {
		t.Fatalf("host veth name has %d characters, more than 15", n)
	}
}

// TestAddDel plumbs a pod into a real OVS bridge (userspace datapath) in a
// network namespace and removes it again.
func TestAddDel(t *testing.T) {
	deps.Require(t, deps.CheckOVN)
	node := "cnitest-node"
	if out, err := deps.OVNCommand("ip", "netns", "add", node).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = deps.OVNCommand("ip", "netns", "del", node).Run() })
	ovs, err := ovnrun.StartNode(ovnrun.NodeOptions{Name: node, Dir: t.TempDir(), Netns: node})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ovs.Stop)
	ovsdb := ovs.DB
	h := cni.Host{Netns: node, OVSDB: ovsdb, Bridge: "br-int", Command: deps.OVNCommand, Path: deps.OVNProgram}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	nets := podnet.Networks{"default": {IPs: []string{"10.244.1.5/24", "fd00::5/64"}, MAC: "0a:58:0a:f4:01:05", Role: podnet.RolePrimary,
		Gateways: []string{"10.244.1.1", "fd00::1"}, Routes: []podnet.Route{{Dest: "100.64.0.0/16", NextHop: "10.244.1.1"}}}}
	ifs, _ := cni.Interfaces(pod, nets, func(string) int { return 0 })
	podNetns := "cnitest-pod" // as a runtime makes it
	if out, err := deps.OVNCommand("ip", "netns", "add", podNetns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = deps.OVNCommand("ip", "netns", "del", podNetns).Run() })
	if err := h.Add(podNetns, "ns/p", "sandbox-1", ifs); err != nil {
		t.Fatal(err)
	}
	out, _ := deps.OVNCommand("ip", "-n", podNetns, "addr", "show", "eth0").CombinedOutput()
	for _, want := range []string{"0a:58:0a:f4:01:05", "10.244.1.5/24", "fd00::5/64", "mtu 1400"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("eth0 lacks %s:\n%s", want, out)
		}
	}
	routes, _ := deps.OVNCommand("ip", "-n", podNetns, "route").CombinedOutput()
	if !strings.Contains(string(routes), "default via 10.244.1.1 dev eth0") || !strings.Contains(string(routes), "100.64.0.0/16 via 10.244.1.1 dev eth0") {
		t.Errorf("routes:\n%s", routes)
	}
	plugged, err := h.Ports()
	if err != nil {
		t.Fatal(err)
	}
	if len(plugged["ns/p"]) != 1 || plugged["ns/p"][0].Port != "ns_p" || plugged["ns/p"][0].Fingerprint != ifs[0].Fingerprint() || plugged["ns/p"][0].Netns != podNetns || plugged["ns/p"][0].Sandbox != "sandbox-1" {
		t.Fatalf("plugged ports %+v", plugged)
	}
	// Adding again (e.g. after an agent restart) replaces, not duplicates.
	if err := h.Add(podNetns, "ns/p", "sandbox-1", ifs); err != nil {
		t.Fatal(err)
	}
	if err := h.Del([]string{"ns_p"}); err != nil {
		t.Fatal(err)
	}
	if plugged, _ := h.Ports(); len(plugged) != 0 {
		t.Fatalf("ports left after Del: %+v", plugged)
	}
	// The veths went with the ports; the namespace is the runtime's and stays.
	if out, _ := deps.OVNCommand("ip", "-n", node, "link", "show", cni.HostVeth("ns_p")).CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Fatalf("host veth left after Del: %s", out)
	}
	if out, _ := deps.OVNCommand("ip", "-n", podNetns, "link", "show", "eth0").CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Fatalf("pod's eth0 left after Del: %s", out)
	}
	if out, _ := deps.OVNCommand("ip", "netns", "list").CombinedOutput(); !strings.Contains(string(out), podNetns) {
		t.Fatal("Del removed the runtime's namespace")
	}
}
