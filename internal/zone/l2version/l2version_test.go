package l2version_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone/l2version"
)

const (
	v1 = nodeinfo.Layer2TopologyV1
	v2 = nodeinfo.Layer2TopologyV2
)

// TestDecide: a node moves to 2.0 only when it runs no pod on a Layer2
// primary network; a zone told 1.0 renders 1.0 whatever runs.
func TestDecide(t *testing.T) {
	for _, c := range []struct {
		want, current string
		running       int
		out           string
	}{
		{v2, "", 0, v2},
		{v2, "", 3, v2}, // no annotation: already 2.0
		{v2, v2, 3, v2},
		{v2, v1, 0, v2},
		{v2, v1, 1, v1}, // pods run: it stays
		{v1, "", 5, v1}, // the old release renders 1.0
		{v1, v2, 0, v1},
	} {
		if got := l2version.Decide(c.want, c.current, c.running); got != c.out {
			t.Errorf("Decide(%q, %q, %d) = %q, want %q", c.want, c.current, c.running, got, c.out)
		}
	}
}

// TestRunning counts, on a real Northbound, the node's local workload
// ports on Layer2 primary networks: not another node's, not a remote
// port, not the management port, not a secondary or Layer3 network's.
func TestRunning(t *testing.T) {
	z := ovntest.StartZone(t, "l2version")
	z.MustNBCtl("ls-add", "sw")
	port := func(name, typ, node, topo, role, nad string) {
		owner := "external_ids:k8s.ovn.org/pod=ns/" + name
		if name == "vm1" {
			owner = "external_ids:k8s.ovn.org/vm=ns/vm1"
		}
		args := []string{"lsp-add", "sw", name, "--", "set", "logical_switch_port", name, owner,
			"external_ids:k8s.ovn.org/node=" + node, "external_ids:k8s.ovn.org/topology=" + topo, "external_ids:k8s.ovn.org/role=" + role}
		if nad != "" {
			args = append(args, "external_ids:k8s.ovn.org/nad="+nad)
		}
		if typ != "" {
			args = append(args, "type="+typ)
		}
		z.MustNBCtl(args...)
	}
	port("pod1", "", "node1", "layer2", "primary", "ns/net")
	port("vm1", "", "node1", "layer2", "primary", "ns/net")
	port("remote", "remote", "node1", "layer2", "primary", "ns/net")
	port("other-node", "", "node2", "layer2", "primary", "ns/net")
	port("mgmt", "", "node1", "layer2", "primary", "")
	port("secondary", "", "node1", "layer2", "secondary", "ns/sec")
	port("l3", "", "node1", "layer3", "primary", "ns/l3")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nb, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, NoMonitor: true, OwnTransact: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	got, err := l2version.Workloads(ctx, nb, "node1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/pod1", "vm ns/vm1"}, got); diff != "" {
		t.Errorf("Workloads (-want +got):\n%s", diff)
	}
}

// TestPodsOnLayer2: the API server's pods on the node that run on a Layer2
// primary network count; not those of another node, finished ones, those
// on the host's network, or those of a Layer3 or secondary network; another
// plugin's NAD is ignored.
func TestPodsOnLayer2(t *testing.T) {
	nad := func(ns, topology, role string) *nadv1.NetworkAttachmentDefinition {
		return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"` + ns + `.net","type":"ovn-k8s-cni-overlay","topology":"` +
				topology + `","role":"` + role + `","subnets":"10.128.0.0/16","netAttachDefName":"` + ns + `/net"}`}}
	}
	pod := func(ns, name, node string, phase corev1.PodPhase, host bool) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
			podnet.Annotation: `{"` + ns + `/net":{"ip_addresses":["10.128.0.5/16"],"mac_address":"0a:58:0a:80:00:05","role":"primary"}}`}},
			Spec: corev1.PodSpec{NodeName: node, HostNetwork: host}, Status: corev1.PodStatus{Phase: phase}}
	}
	c := fake.NewClientBuilder().WithScheme(kubeobj.NewScheme(nadv1.AddToScheme)).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithObjects(nad("l2", "layer2", "primary"), nad("l3", "layer3", "primary"), nad("sec", "layer2", "secondary"),
			&nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "macvlan"}, // another plugin's: ignored
				Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"m","type":"macvlan"}`}},
			pod("l2", "running", "node1", corev1.PodRunning, false), pod("l2", "pending", "node1", corev1.PodPending, false),
			pod("l2", "done", "node1", corev1.PodSucceeded, false), pod("l2", "host", "node1", corev1.PodRunning, true),
			pod("l2", "elsewhere", "node2", corev1.PodRunning, false), pod("l3", "l3", "node1", corev1.PodRunning, false),
			pod("sec", "sec", "node1", corev1.PodRunning, false)).Build()
	got, err := l2version.PodsOnLayer2(context.Background(), c, "node1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"l2/pending", "l2/running"}, got); diff != "" {
		t.Errorf("PodsOnLayer2 (-want +got):\n%s", diff)
	}
}
