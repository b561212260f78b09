package demo

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// The section's own Layer3 tenant: the example networks of Layer3 have pods
// on every node, so nothing shows cluster-manager giving a node a slice
// only while the node uses the network (docs/allocation.md "Slices only
// where used"). This one has one pod on the first node; the section brings
// a second to WhereUsedNode and takes it away again.
const (
	// WhereUsedLayer3Namespace holds the tenant's primary Layer3 network.
	WhereUsedLayer3Namespace = "where-l3"
	whereUsedLayer3Subnet    = "10.210.0.0/16/24"
)

// whereUsedLayer3 creates the tenant (its namespace, network, and a pod on
// node1) and waits until the pod is Ready; it returns the network's name
// and what removes the tenant.
func whereUsedLayer3(ctx context.Context, dir string, c client.Client) (network string, remove func(), err error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: WhereUsedLayer3Namespace, Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{whereUsedLayer3Subnet}}}
	remove = func() {
		bg := context.Background()
		_ = c.DeleteAllOf(bg, &corev1.Pod{}, client.InNamespace(ns.Name), client.GracePeriodSeconds(0))
		_ = c.Delete(bg, ns)
	}
	for _, o := range []client.Object{ns, udn} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", remove, err
		}
	}
	// Its pods must come after its NAD: a pod created before has no
	// primary network to attach to.
	if err := proc.WaitFor(time.Minute, 100*time.Millisecond, func() (bool, error) {
		n, err := NamespaceNetwork(ctx, c, ns.Name)
		network = n
		return err == nil && n != "" && n != "default", err
	}); err != nil {
		return "", remove, fmt.Errorf("network of namespace %s: %w", ns.Name, err)
	}
	if err := c.Create(ctx, whereUsedPod(ns.Name, "a", "node1")); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", remove, err
	}
	return network, remove, WaitPodsReady(ctx, dir, c, []string{ns.Name + "/a"}, 2*time.Minute)
}

// whereUsedPod is a pause pod pinned to node.
func whereUsedPod(namespace, name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
}

// waitSlices waits until the network's slices are held by exactly want
// (as slicesOn says it) and returns what it last read.
func waitSlices(ctx context.Context, c client.Client, network, want string, timeout time.Duration) (string, error) {
	var got string
	err := proc.WaitFor(timeout, 100*time.Millisecond, func() (bool, error) {
		var err error
		got, err = slicesOn(ctx, c, network)
		return err == nil && got == want, err
	})
	if got != "" {
		err = nil // the check says what it found
	}
	return got, err
}
