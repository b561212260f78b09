package demo

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// Namespaces of the shapes section: the same Layer2 primary network in the
// seed's flat shape and in ovn-kubernetes' shape.
const (
	shapeFlatNamespace = "shape-flat"
	shapeOVNKNamespace = "shape-ovnk"
	shapeSubnet        = "10.177.0.0/24"
)

// ShapesDemo applies one UserDefinedNetwork written as for ovn-kubernetes
// (spec.layer2) and its twin in the flat shape, and checks that the first
// is accepted and Ready, that both give the same NAD config, that a pod
// gets an address on it from its kubelet, and that a manifest mixing the
// shapes is refused with its message. It deletes what it made.
func ShapesDemo(ctx context.Context, c client.Client, out io.Writer) error {
	flat := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: shapeFlatNamespace, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{shapeSubnet}}}
	ovnk := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: shapeOVNKNamespace, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Layer2: &v1.Layer2Config{Role: v1.Primary, Subnets: []v1.CIDR{shapeSubnet}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: shapeOVNKNamespace, Name: "a"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: sandbox.AgnhostImage, Args: []string{"pause"}}}}}
	for _, ns := range []string{shapeFlatNamespace, shapeOVNKNamespace} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		defer func() { _ = c.Delete(context.Background(), obj) }()
	}
	for _, o := range []client.Object{flat, ovnk} {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("%s: %w", o.GetName(), err)
		}
	}

	ready := AppCheck{Name: "UDN in ovn-kubernetes' shape (spec.layer2)", From: "API", Target: shapeOVNKNamespace + "/net", Want: "NetworkCreated True"}
	ready.Err = proc.WaitFor(time.Minute, 200*time.Millisecond, func() (bool, error) {
		var u v1.UserDefinedNetwork
		if err := c.Get(ctx, client.ObjectKeyFromObject(ovnk), &u); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(u.Status.Conditions, v1.ConditionNetworkCreated)
		if cond == nil {
			return false, fmt.Errorf("no %s condition yet", v1.ConditionNetworkCreated)
		}
		ready.Got = v1.ConditionNetworkCreated + " " + string(cond.Status)
		return cond.Status == metav1.ConditionTrue, nil
	})
	same := AppCheck{Name: "its NAD and its flat twin's (up to the namespace)", From: "API", Target: "NetworkAttachmentDefinition net", Want: "same config"}
	same.Err = proc.WaitFor(time.Minute, 200*time.Millisecond, func() (bool, error) {
		configs := map[string]string{}
		for _, ns := range []string{shapeFlatNamespace, shapeOVNKNamespace} {
			var nad nadv1.NetworkAttachmentDefinition
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "net"}, &nad); err != nil {
				return false, nil // not yet
			}
			configs[ns] = strings.ReplaceAll(nad.Spec.Config, ns, "NS")
		}
		if configs[shapeFlatNamespace] == configs[shapeOVNKNamespace] {
			same.Got = "same config"
		} else {
			same.Got = "differs"
		}
		return true, nil
	})
	// A namespace's primary network comes before its pods (a pod created
	// first would hold the network back: PodsAlreadyExist).
	if err := c.Create(ctx, pod); err != nil {
		return fmt.Errorf("pod: %w", err)
	}
	addr := AppCheck{Name: "a pod on it (its kubelet, ovn-udn's CNI plugin)", From: "kubelet", Target: shapeOVNKNamespace + "/a", Want: "Running, address in " + shapeSubnet}
	addr.Err = proc.WaitFor(2*time.Minute, 200*time.Millisecond, func() (bool, error) {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return false, err
		}
		nets, err := podnet.ParsePod(&p)
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		a, ok := nets[podnet.Key(shapeOVNKNamespace, "net")]
		if !ok || len(a.IPs) == 0 {
			return false, nil
		}
		addr.Got, addr.Node = "Running, address "+a.IPs[0], p.Spec.NodeName
		if ip, err := netip.ParsePrefix(a.IPs[0]); err == nil && netip.MustParsePrefix(shapeSubnet).Contains(ip.Addr()) {
			addr.Got = "Running, address in " + shapeSubnet
		}
		return true, nil
	})
	mixed := AppCheck{Name: "a manifest mixing the shapes", From: "API", Target: "role and layer2", Want: "refused: two shapes of one network"}
	bad := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: shapeOVNKNamespace, Name: "mixed"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Layer2: &v1.Layer2Config{Role: v1.Primary, Subnets: []v1.CIDR{shapeSubnet}}}}
	switch err := c.Create(ctx, bad, client.DryRunAll); {
	case err == nil:
		mixed.Got = "accepted"
	case strings.Contains(err.Error(), "two shapes of one network"):
		mixed.Got = "refused: two shapes of one network"
	default:
		mixed.Got = "refused: " + err.Error()
	}
	for _, o := range []client.Object{pod, ovnk, flat} {
		_ = c.Delete(ctx, o)
	}
	fmt.Fprintf(out, "\novn-kubernetes' manifests (UserDefinedNetwork and ClusterUserDefinedNetwork as ovn-kubernetes releases them, beside the seed's flat shape; docs/api.md):\n\n")
	return PrintAppChecks(out, []AppCheck{ready, same, addr, mixed})
}
