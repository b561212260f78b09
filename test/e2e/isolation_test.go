package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc"
	"github.com/ovn-udn/ovn-udn/internal/contract/kubevirt"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// tenant returns a client acting as user in namespace ns, with a tenant's
// rights there: pods, and UserDefinedNetworks through config/rbac/tenant.yaml's
// role, nothing in any other namespace and no NetworkAttachmentDefinitions.
func tenant(t *testing.T, user, ns string) client.Client {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	bindings := []*rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-pods"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user + "-udn"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ovn-udn-tenant-edit"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}},
	}
	for _, o := range append([]client.Object{role}, bindings[0], bindings[1]) {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	c := impersonate(t, user)
	// The tenant cannot touch another namespace, nor NADs in her own.
	if err := c.Create(ctx, &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mine"},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"x","type":"bridge"}`}}); !apierrors.IsForbidden(err) {
		t.Fatalf("tenant %s creating a NAD: %v, want forbidden", user, err)
	}
	return c
}

func podOn(ns, name, node string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
}

// refusedPod checks that a pod was refused with an InvalidNetworkSelection
// Event and got no attachment and no network at all.
func refusedPod(t *testing.T, pod *corev1.Pod, fragment string) {
	t.Helper()
	msg := cmtest.WaitEvent(t, admin, pod, "Pod", podnet.WaitBadSelection)
	if fragment != "" && !strings.Contains(msg, fragment) {
		t.Errorf("%s/%s: Event %q does not mention %q", pod.Namespace, pod.Name, msg, fragment)
	}
	got := &corev1.Pod{}
	if err := admin.Get(context.Background(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Annotations[podnet.Annotation]; ok {
		t.Errorf("%s/%s was given attachments: %s", pod.Namespace, pod.Name, v)
	}
	if n, err := sandbox.PodNetns(context.Background(), dir, admin, pod.Namespace+"/"+pod.Name); err == nil {
		t.Errorf("%s/%s was plumbed (network namespace %s)", pod.Namespace, pod.Name, n)
	}
}

// TestTenantIsolation acts as a hostile tenant against another tenant's
// secondary network: joining it from her own namespace is refused, and a NAD
// that claims its network name (made by someone who may create NADs) never
// takes it over: the rightful network keeps carrying packets throughout.
func TestTenantIsolation(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"team-a", "team-b"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "sec"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.77.0.0/24"}}}
	if err := admin.Create(ctx, udn); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, admin, udn)
	sel := map[string]string{netconf.NetworksAnnotation: "sec"}
	for i, node := range []string{"node1", "node2"} {
		if err := admin.Create(ctx, podOn("team-b", fmt.Sprintf("b%d", i+1), node, sel)); err != nil {
			t.Fatal(err)
		}
	}
	serve(t, "team-b/b1", "team-b/b2")
	own := demo.Check{Name: "team-b's secondary network, across nodes", From: "team-b/b1", To: []string{"team-b/b2"}, On: "team-b/sec", Family: 4, Reachable: true}
	expect(t, own)
	alice := tenant(t, "alice", "team-a")

	t.Run("pod selecting another namespace's network", func(t *testing.T) {
		short := podOn("team-a", "join-short", "node1", map[string]string{netconf.NetworksAnnotation: "team-b/sec"})
		long := podOn("team-a", "join-json", "node2", map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","namespace":"team-b"}]`})
		for _, p := range []*corev1.Pod{short, long} {
			if err := alice.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		refusedPod(t, short, "own namespace team-a")
		refusedPod(t, long, "own namespace team-a")
		expect(t, own)
	})

	t.Run("invalid selections of its own network", func(t *testing.T) {
		// Refused up front: nothing is plumbed, so nothing can leak.
		badMAC := podOn("team-b", "bad-mac", "node1", map[string]string{netconf.NetworksAnnotation: `[{"name":"sec","mac":"01:00:5e:00:00:01"}]`})
		twice := podOn("team-b", "twice", "node2", map[string]string{netconf.NetworksAnnotation: "sec,sec"})
		for _, p := range []*corev1.Pod{badMAC, twice} {
			if err := admin.Create(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		refusedPod(t, badMAC, "multicast")
		refusedPod(t, twice, "more than once")
	})

	t.Run("forged pod-networks annotation", func(t *testing.T) {
		b1 := &corev1.Pod{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: "team-b", Name: "b1"}, b1); err != nil {
			t.Fatal(err)
		}
		victim, err := podnet.Parse(b1.Annotations)
		if err != nil || victim["team-b/sec"].MAC == "" {
			t.Fatalf("team-b/b1's attachment: %v %v", victim, err)
		}
		// b1's own address and MAC, claimed on team-b's network for a pod of team-a.
		forged := podnet.Networks{"team-b/sec": victim["team-b/sec"]}.String()
		// The admission policy (config/admission) refuses a tenant's write,
		// at creation and afterwards.
		err = alice.Create(ctx, podOn("team-a", "forger", "node1", map[string]string{podnet.Annotation: forged}))
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), "written by ovn-udn only") {
			t.Fatalf("tenant creating a pod with a forged annotation: %v, want refused by the admission policy", err)
		}
		honest := podOn("team-a", "honest", "node1", nil)
		if err := alice.Create(ctx, honest); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := alice.Get(ctx, client.ObjectKeyFromObject(honest), honest); err != nil {
				return err
			}
			if honest.Annotations[podnet.Annotation] == "" {
				return fmt.Errorf("team-a/honest not annotated yet")
			}
			return nil
		})
		// Her write races the node agent's status updates: a conflict is
		// not the answer under test, so read and write again.
		for tries := 0; ; tries++ {
			honest.Annotations[podnet.Annotation] = forged
			err = alice.Update(ctx, honest)
			if !apierrors.IsConflict(err) || tries == 20 {
				break
			}
			if err := alice.Get(ctx, client.ObjectKeyFromObject(honest), honest); err != nil {
				t.Fatal(err)
			}
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), "may not change it") {
			t.Fatalf("tenant rewriting her pod's annotation: %v, want refused by the admission policy", err)
		}
		// Nor may she say where a VM's port lives (docs/kubevirt.md).
		err = alice.Create(ctx, podOn("team-a", "activated", "node1", map[string]string{kubevirt.ActivatedAnnotation: "node1"}))
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), kubevirt.ActivatedAnnotation+" is written by ovn-udn only") {
			t.Fatalf("tenant creating a pod with %s: %v, want refused by the admission policy", kubevirt.ActivatedAnnotation, err)
		}
		// Without the policy (here: an administrator's write), the controllers
		// still give the pod nothing on another namespace's network: the entry
		// is dropped from the annotation and no port is made for it.
		smuggled := podOn("team-a", "smuggled", "node2", map[string]string{podnet.Annotation: forged})
		if err := admin.Create(ctx, smuggled); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(smuggled), smuggled); err != nil {
				return err
			}
			nets, err := podnet.Parse(smuggled.Annotations)
			if err != nil {
				return err
			}
			if _, ok := nets["team-b/sec"]; ok {
				return fmt.Errorf("team-a/smuggled still claims team-b/sec: %s", smuggled.Annotations[podnet.Annotation])
			}
			if _, ok := nets[podnet.DefaultKey]; !ok {
				return fmt.Errorf("team-a/smuggled has no default-network attachment yet")
			}
			return nil
		})
		serve(t, "team-a/smuggled")
		syncDataplane(t)
		if err := nbClean(podnet.PortName("team-b/sec", "team-a", "smuggled")); err != nil {
			t.Fatal(err)
		}
		expect(t, own)
	})

	t.Run("NAD claiming the network's name", func(t *testing.T) {
		evil := &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "evil"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"team-b.sec","type":"ovn-k8s-cni-overlay",
				"topology":"layer2","role":"secondary","subnets":"10.77.0.0/24","netAttachDefName":"team-a/evil"}`}}
		if err := admin.Create(ctx, evil); err != nil {
			t.Fatal(err)
		}
		cmtest.WaitEvent(t, admin, evil, "NetworkAttachmentDefinition", netalloc.ReasonNetworkNameNotOwned)
		squatter := podOn("team-a", "squatter", "node1", map[string]string{netconf.NetworksAnnotation: "evil"})
		if err := alice.Create(ctx, squatter); err != nil {
			t.Fatal(err)
		}
		refusedPod(t, squatter, "belongs to namespace team-b")
		if err := admin.Get(ctx, client.ObjectKeyFromObject(evil), evil); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, _ := netconf.ParseAllocation(evil.Annotations); ok {
			t.Errorf("the squatting NAD was allocated: %v", evil.Annotations)
		}
		// The rightful network: still created, still rendered, still carrying
		// packets, and a new pod of it gets a fresh address.
		if err := admin.Get(ctx, client.ObjectKeyFromObject(udn), udn); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(udn.Status.Conditions, v1.ConditionNetworkCreated) {
			t.Errorf("team-b's network lost NetworkCreated: %+v", udn.Status.Conditions)
		}
		if err := admin.Create(ctx, podOn("team-b", "b3", "node3", sel)); err != nil {
			t.Fatal(err)
		}
		serve(t, "team-b/b3")
		syncDataplane(t)
		expect(t, own, demo.Check{Name: "team-b's new pod beside the squatting NAD", From: "team-b/b1", To: []string{"team-b/b3"}, On: "team-b/sec", Family: 4, Reachable: true})
		if err := admin.Delete(ctx, evil); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(evil), evil); !apierrors.IsNotFound(err) {
				return fmt.Errorf("squatting NAD still exists (%v)", err)
			}
			return nil
		})
		syncDataplane(t)
		expect(t, own, demo.Check{Name: "team-b after the squatting NAD is gone", From: "team-b/b3", To: []string{"team-b/b1", "team-b/b2"}, On: "team-b/sec", Family: 4, Reachable: true})
	})
}

// impersonate returns a client of the sandbox acting as user.
func impersonate(t *testing.T, user string) client.Client {
	t.Helper()
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: clustermanager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
