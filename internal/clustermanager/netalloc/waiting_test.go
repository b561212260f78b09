package netalloc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// macvlanNAD is another plugin's NAD, as Multus users keep beside ovn-udn.
func macvlanNAD(namespace, name string) *nadv1.NetworkAttachmentDefinition {
	return &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","type":"macvlan","master":"eth0","mode":"bridge"}`}}
}

// TestWaitingPodsAreTold: in a namespace that also holds another plugin's
// NAD (macvlan, and one with an empty config), a primary Layer3 network of
// two node slices is used on three nodes. The two first nodes get slices
// (the where-used decisions complete: before, the foreign NAD made them
// panic), the third gets NodeSubnetExhausted, and so does the Pending pod
// on it, naming the network: its owner cannot read Nodes. A pod of a
// Layer2 network whose subnet is full is told too.
func TestWaitingPodsAreTold(t *testing.T) {
	ctx := context.Background()
	c := cmtest.Admin(t, env)
	cmtest.StartWith(t, env, clustermanager.Options{Cluster: fleetConfig(), InactiveGracePeriod: time.Minute})
	f := newFleet(t, c)
	ns := cmtest.Namespace(t, c, "tight", map[string]string{v1.PrimaryNetworkLabel: ""})
	for _, nad := range []*nadv1.NetworkAttachmentDefinition{macvlanNAD(ns, "macvlan"),
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-file"}}} {
		if err := c.Create(ctx, nad); err != nil {
			t.Fatal(err)
		}
		cmtest.DeleteAtCleanup(t, c, nad)
	}
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.151.0.0/24/25"}}}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	network := netconf.UDNNetworkName(ns, "net")
	f.udns[network] = u
	cmtest.WaitNetworkCreated(t, c, u)

	nodes := []string{f.addNode(), f.addNode(), f.addNode()}
	pods := map[string]*corev1.Pod{}
	for i, n := range nodes {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%d", i),
			Annotations: map[string]string{netconf.NetworksAnnotation: "macvlan"}},
			Spec: corev1.PodSpec{NodeName: n, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		deletePodAtCleanup(t, c, p)
		pods[n] = p
	}
	lacking := waitSliceHolders(t, c, network, nodes, 2)
	msg := cmtest.WaitEvent(t, c, pods[lacking], "Pod", "NodeSubnetExhausted")
	for _, want := range []string{network, lacking} {
		if !strings.Contains(msg, want) {
			t.Errorf("the waiting pod's Event %q does not name %s", msg, want)
		}
	}
	for _, n := range nodes {
		if n != lacking && hasPodEvent(t, c, pods[n], "NodeSubnetExhausted") {
			t.Errorf("pod %s on node %s, which has a slice, was told it waits for one", pods[n].Name, n)
		}
	}

	// Layer2: a /29 holds fewer addresses than pods asking.
	ns2 := cmtest.Namespace(t, c, "tight2", map[string]string{v1.PrimaryNetworkLabel: ""})
	u2 := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.152.0.0/29"}}}
	if err := c.Create(ctx, u2); err != nil {
		t.Fatal(err)
	}
	f.udns[netconf.UDNNetworkName(ns2, "net")] = u2
	cmtest.WaitNetworkCreated(t, c, u2)
	var l2 []*corev1.Pod
	for i := 0; i < 8; i++ {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns2, Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{NodeName: nodes[i%3], Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		deletePodAtCleanup(t, c, p)
		l2 = append(l2, p)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		for _, p := range l2 {
			if hasPodEvent(t, c, p, "AddressAllocationFailed") {
				return nil
			}
		}
		return fmt.Errorf("no pod of the full Layer2 network was told")
	})
}

// hasPodEvent reports whether an Event with reason names pod.
func hasPodEvent(t testing.TB, c client.Client, pod *corev1.Pod, reason string) bool {
	var events corev1.EventList
	if err := c.List(context.Background(), &events, client.InNamespace(pod.Namespace)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod.Name && e.Reason == reason {
			return true
		}
	}
	return false
}

// deletePodAtCleanup deletes pod at once when the test ends: no kubelet
// here finishes a graceful deletion.
func deletePodAtCleanup(t testing.TB, c client.Client, pod *corev1.Pod) {
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}
