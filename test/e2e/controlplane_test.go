package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// agnhostImage is the Kubernetes e2e test image, built from the pinned
// module and imported into every node's containerd.
const agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.56"

// deployment is a Deployment of agnhost netexec pods (HTTP on 8080, UDP on
// 8081 answering "hostname"), one per node (required anti-affinity),
// scheduled by the real scheduler (no nodeName).
func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: agnhostImage, Args: []string{"netexec", "--http-port=8080", "--udp-port=8081"},
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
						{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: "kubernetes.io/hostname"}}}},
				}}}}
}

// readyPods waits until the Deployment's pods are n Ready pods and returns
// them.
func readyPods(t testing.TB, ns, app string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, func() error {
		var list corev1.PodList
		if err := admin.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		pods = nil
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && kubeobj.PodReady(&p) {
				pods = append(pods, p)
			}
		}
		if len(pods) != n {
			return fmt.Errorf("%d of %d pods of %s/%s Ready", len(pods), n, ns, app)
		}
		return nil
	})
	return pods
}

// TestDeploymentAndService: examples/web.yaml's Deployment is spread by the
// real scheduler over the three nodes, its pods become Ready and run their
// workload (each answers HTTP with its own name), the real EndpointSlice
// controller lists them behind the Service, and CoreDNS resolves the
// Service's and the API server's names from another pod — the demo's app
// checks.
func TestDeploymentAndService(t *testing.T) {
	ctx := context.Background()
	if err := demo.WaitDeployments(ctx, admin, []string{"web"}, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	pods := readyPods(t, "web", "echo", 3)
	var nodes []string
	for _, p := range pods {
		nodes = append(nodes, p.Spec.NodeName)
	}
	sort.Strings(nodes)
	if fmt.Sprint(nodes) != "[node1 node2 node3]" {
		t.Errorf("pods scheduled on %v, want one on each node", nodes)
	}
	serve(t, demo.DemoAppClient)
	checks, err := demo.AppChecks(ctx, dir, admin, demo.DemoAppClient, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := demo.PrintAppChecks(&out, checks); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(checks) != 5 { // endpoints, DNS, three servers
		t.Fatalf("%d app checks, want 5:\n%s", len(checks), out.String())
	}
	kapi := &corev1.Service{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, kapi); err != nil {
		t.Fatal(err)
	}
	var got, errOut bytes.Buffer
	code, err := sandbox.Exec(ctx, dir, demo.DemoAppClient, []string{"getent", "hosts", "kubernetes.default"}, nil, &got, &errOut)
	if err != nil || code != 0 || !strings.HasPrefix(got.String(), kapi.Spec.ClusterIP+" ") {
		t.Fatalf("getent hosts kubernetes.default: %q (exit %d, %v, %s), want %s", got.String(), code, err, errOut.String(), kapi.Spec.ClusterIP)
	}
}

// TestNamespaceDeletion: deleting a namespace with a primary UDN and a
// Deployment on it finishes: the namespace controller deletes the pods (the
// node agents unplumb them), the UDN (its NAD goes, by cluster-manager and the
// garbage collector) and the namespace itself; no zone keeps a row of the
// network.
func TestNamespaceDeletion(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "leaving", Labels: map[string]string{v1.PrimaryNetworkLabel: ""}}}
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "leaving", Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.88.0.0/24"}}}
	for _, o := range []client.Object{ns, udn} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cmtest.WaitNetworkCreated(t, admin, udn)
	if err := admin.Create(ctx, deployment("leaving", "app", 2)); err != nil {
		t.Fatal(err)
	}
	var netns []string
	for _, p := range readyPods(t, "leaving", "app", 2) {
		n, err := sandbox.PodNetns(ctx, dir, admin, p.Namespace+"/"+p.Name)
		if err != nil {
			t.Fatal(err)
		}
		netns = append(netns, n)
	}
	if err := admin.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s still exists (%v)", ns.Name, err)
		}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "leaving", Name: "net"}, &nadv1.NetworkAttachmentDefinition{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("NAD leaving/net still exists (%v)", err)
		}
		for _, n := range netns {
			if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
				return fmt.Errorf("pod network namespace %s still exists", n)
			}
		}
		return nbClean("leaving.net")
	})
}

// TestTenantEditRole: kube-controller-manager aggregates
// config/rbac/tenant.yaml into the built-in edit role, so a tenant bound to
// "edit" in her namespace manages UserDefinedNetworks there, and nowhere else.
func TestTenantEditRole(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"bob-ns", "not-bob"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "bob-ns", Name: "bob-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "bob"}}}); err != nil {
		t.Fatal(err)
	}
	bob := impersonate(t, "bob")
	spec := v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.90.0/24"}}
	eventually(t, func() error { // aggregation happens shortly after the binding
		err := bob.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "bob-ns", Name: "mine"}, Spec: spec})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	err := bob.Create(ctx, &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "not-bob", Name: "theirs"}, Spec: spec})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("bob creating a UDN outside his namespace: %v, want forbidden", err)
	}
}

// TestNamespaceSelectedByCUDNDeleted: a namespace a live CUDN selects can be
// deleted and really goes away; the CUDN keeps serving its other namespace.
func TestNamespaceSelectedByCUDNDeleted(t *testing.T) {
	ctx := context.Background()
	sel := map[string]string{"cudn-leaving": "yes"}
	for _, name := range []string{"cudn-stays", "cudn-goes"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sel}}); err != nil {
			t.Fatal(err)
		}
	}
	cu := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "leaving"},
		Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: sel},
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.77.0/24"}}}}
	if err := admin.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, admin, cu)
	if err := admin.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cudn-goes"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if err := admin.Get(ctx, client.ObjectKey{Name: "cudn-goes"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace cudn-goes still exists (%v)", err)
		}
		cond, err := cmtest.NetworkCondition(ctx, admin, cu)
		if err != nil {
			return err
		}
		if cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "1 namespace(s)") {
			return fmt.Errorf("CUDN condition %s %q, want True in 1 namespace", cond.Status, cond.Message)
		}
		return nil
	})
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "cudn-stays", Name: "cluster.udn.leaving"}, &nadv1.NetworkAttachmentDefinition{}); err != nil {
		t.Fatalf("the NAD of the namespace that stays: %v", err)
	}
}
