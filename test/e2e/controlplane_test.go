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

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/nodeagent"
	"github.com/ovn-udn/ovn-udn/internal/sandbox"
)

// agnhostImage is the Kubernetes e2e test image; the sandbox's node agent
// runs its servers as `ovn-udn agnhost`.
const agnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.53"

// deployment is a Deployment of agnhost netexec pods (HTTP on 8080), one per
// node (required anti-affinity), scheduled by the real scheduler (no
// nodeName).
func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: agnhostImage, Args: []string{"netexec", "--http-port=8080", "--udp-port=0"},
						Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
						{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: "kubernetes.io/hostname"}}}},
				}}}}
}

// readyPods waits until the Deployment's pods are n Ready pods and returns
// them.
func readyPods(t *testing.T, ns, app string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, func() error {
		var list corev1.PodList
		if err := admin.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		pods = nil
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && nodeagent.PodReady(&p) {
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

// TestDeploymentAndService: a Deployment's pods are scheduled by the real
// scheduler over the three nodes, become Ready and run their workload (each
// answers HTTP with its own name), and the real EndpointSlice controller
// lists their addresses behind a ClusterIP Service.
func TestDeploymentAndService(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	for _, o := range []client.Object{ns, deployment("web", "echo", 3), svc} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pods := readyPods(t, "web", "echo", 3)
	var nodes, ips []string
	for _, p := range pods {
		nodes = append(nodes, p.Spec.NodeName)
		ips = append(ips, p.Status.PodIP)
	}
	sort.Strings(nodes)
	if fmt.Sprint(nodes) != "[node1 node2 node3]" {
		t.Errorf("pods scheduled on %v, want one on each node", nodes)
	}
	sort.Strings(ips)
	eventually(t, func() error {
		var slices discoveryv1.EndpointSliceList
		if err := admin.List(ctx, &slices, client.InNamespace("web"), client.MatchingLabels{discoveryv1.LabelServiceName: "echo"}); err != nil {
			return err
		}
		var got []string
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					got = append(got, e.Addresses...)
				}
			}
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(ips) {
			return fmt.Errorf("EndpointSlices of web/echo list %v, want %v", got, ips)
		}
		return nil
	})
	if err := admin.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil || svc.Spec.ClusterIP == "" {
		t.Fatalf("service has no ClusterIP (%v)", err)
	}
	serve(t, "plain/a")
	for _, p := range pods {
		url := "http://" + p.Status.PodIP + ":8080/hostname"
		eventually(t, func() error {
			var out, errOut bytes.Buffer
			code, err := sandbox.Exec(ctx, dir, "plain/a", []string{binary, "agnhost", "get", "--timeout=2s", url}, nil, &out, &errOut)
			if err != nil || code != 0 {
				return fmt.Errorf("GET %s from plain/a: exit %d %v: %s", url, code, err, errOut.String())
			}
			if got := strings.TrimSpace(out.String()); got != p.Name {
				return fmt.Errorf("GET %s answered %q, want %q", url, got, p.Name)
			}
			return nil
		})
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
