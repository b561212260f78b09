package udncontroller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

func udnObj(ns, name string, spec v1.UserDefinedNetworkSpec) *v1.UserDefinedNetwork {
	return &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func l2Primary(subnets ...v1.NetworkSubnet) v1.UserDefinedNetworkSpec {
	return v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: subnets}
}

func waitNAD(t *testing.T, c client.Client, ns, name string) *nadv1.NetworkAttachmentDefinition {
	t.Helper()
	var nad *nadv1.NetworkAttachmentDefinition
	eventually(t, func() error {
		if nad = getNAD(t, c, ns, name); nad == nil {
			return apierrors.NewNotFound(nadv1.Resource("network-attachment-definitions"), ns+"/"+name)
		}
		return nil
	})
	return nad
}

// TestUDNRendersNAD checks the NAD of a Layer3 primary UDN field by field.
func TestUDNRendersNAD(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "tenant", primaryLabel)

	u := udnObj(ns, "blue", v1.UserDefinedNetworkSpec{
		Topology: v1.Layer3, Role: v1.Primary, MTU: 1300,
		Subnets:        []v1.NetworkSubnet{"10.128.0.0/16/24", "2001:db8::/60/64"},
		ExcludeSubnets: []v1.ExcludeCIDR{"10.128.0.0/28"},
	})
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)

	nad := getNAD(t, c, ns, "blue")
	var got map[string]any
	if err := json.Unmarshal([]byte(nad.Spec.Config), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"cniVersion":       "1.0.0",
		"name":             ns + ".blue",
		"type":             "ovn-k8s-cni-overlay",
		"topology":         "layer3",
		"role":             "primary",
		"subnets":          "10.128.0.0/16/24,2001:db8::/60/64",
		"excludeSubnets":   "10.128.0.0/28",
		"joinSubnet":       "100.65.0.0/16,fd99::/64",
		"mtu":              float64(1300),
		"netAttachDefName": ns + "/blue",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NAD config (-want +got):\n%s", diff)
	}
	if !containsString(nad.Finalizers, v1.NetworkProtectionFinalizer) {
		t.Errorf("NAD finalizers %v lack %s", nad.Finalizers, v1.NetworkProtectionFinalizer)
	}
	ref := metav1.GetControllerOf(nad)
	if ref == nil || ref.Kind != "UserDefinedNetwork" || ref.Name != "blue" || ref.UID != u.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("NAD owner reference = %+v, want a blocking controller reference to UserDefinedNetwork blue (%s)", ref, u.UID)
	}
	id, err := strconv.Atoi(nad.Annotations[netconf.NetworkIDAnnotation])
	if err != nil || id < 1 || id > 4095 {
		t.Errorf("network-id annotation %q, want 1..4095", nad.Annotations[netconf.NetworkIDAnnotation])
	}
	if !containsString(u.Finalizers, v1.NetworkProtectionFinalizer) {
		t.Errorf("UDN finalizers %v lack %s", u.Finalizers, v1.NetworkProtectionFinalizer)
	}
}

// TestLayer2Defaults checks the defaults a Layer2 UDN gets: MTU from the
// configuration, join subnets by family, persistent IPs.
func TestLayer2Defaults(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "l2", primaryLabel)
	spec := l2Primary("10.100.0.0/24")
	spec.IPAM = &v1.IPAMSpec{Lifecycle: v1.IPAMLifecyclePersistent}
	u := udnObj(ns, "vm", spec)
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	conf, err := netconf.Parse(getNAD(t, c, ns, "vm"))
	if err != nil {
		t.Fatal(err)
	}
	if conf.MTU != 1400 || conf.JoinSubnet != "100.65.0.0/16" || !conf.PersistentIPs || conf.Topology != "layer2" || conf.TransitSubnet != "" {
		t.Errorf("config = %+v; want mtu 1400, join 100.65.0.0/16 only, persistentIPs, layer2, default transit", conf)
	}
	if len(getNAD(t, c, ns, "vm").Annotations[netconf.TunnelKeysAnnotation]) == 0 {
		t.Errorf("a Layer2 primary network needs a transit-router tunnel key annotation")
	}
}

// TestTransitSubnetConflict: a Layer2 primary network overlapping the default
// transit subnet gets another one, recorded in its NAD and reported.
func TestTransitSubnetConflict(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "transit", primaryLabel)
	u := udnObj(ns, "net", l2Primary("100.88.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated, "transit subnet 100.89.0.0/16 is used because the default transit subnet 100.88.0.0/16,fd97::/64 overlaps the network")
	conf, err := netconf.Parse(getNAD(t, c, ns, "net"))
	if err != nil || conf.TransitSubnet != "100.89.0.0/16" {
		t.Fatalf("NAD transitSubnet = %q (%v), want 100.89.0.0/16", conf.TransitSubnet, err)
	}
}

// TestForeignNAD: a NAD of the same name not owned by the UDN is never touched
// and is reported; once it is gone the network is created.
func TestForeignNAD(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "foreign", primaryLabel)
	foreign := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"0.3.1","name":"mine","type":"bridge"}`},
	}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	u := udnObj(ns, "net", l2Primary("10.100.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonForeignNAD, "is not owned by UserDefinedNetwork net")
	if got := getNAD(t, c, ns, "net"); got.Spec.Config != foreign.Spec.Config || len(got.OwnerReferences) != 0 {
		t.Fatalf("foreign NAD was modified: %+v", got)
	}
	if err := c.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	if !ownedByUID(getNAD(t, c, ns, "net"), u.UID) {
		t.Fatal("NAD recreated without the UDN's owner reference")
	}
}

// TestDriftedNADRepaired: a managed NAD edited by hand is put back.
func TestDriftedNADRepaired(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "drift", primaryLabel)
	u := udnObj(ns, "net", l2Primary("10.100.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	orig := waitNAD(t, c, ns, "net")
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)

	drifted := orig.DeepCopy()
	drifted.Spec.Config = `{"cniVersion":"1.0.0","name":"` + ns + `.net","type":"ovn-k8s-cni-overlay","topology":"layer2","role":"primary","subnets":"10.200.0.0/24","netAttachDefName":"` + ns + `/net"}`
	drifted.Annotations[netconf.NetworkIDAnnotation] = "4000"
	drifted.Finalizers = nil
	if err := c.Update(ctx, drifted); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		got := getNAD(t, c, ns, "net")
		if !sameJSON(got.Spec.Config, orig.Spec.Config) {
			return errorf("config not repaired: %s", got.Spec.Config)
		}
		if got.Annotations[netconf.NetworkIDAnnotation] != orig.Annotations[netconf.NetworkIDAnnotation] {
			return errorf("network-id annotation not repaired: %s", got.Annotations[netconf.NetworkIDAnnotation])
		}
		if !containsString(got.Finalizers, v1.NetworkProtectionFinalizer) {
			return errorf("finalizer not restored")
		}
		return nil
	})
}

// TestPrimaryRequiresLabelAddedLater: a primary UDN in an unlabeled namespace
// waits, and is created once the label appears.
func TestPrimaryRequiresLabelAddedLater(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "nolabel", nil)
	u := udnObj(ns, "net", l2Primary("10.100.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonNamespaceNotLabeled, v1.PrimaryNetworkLabel)
	if getNAD(t, c, ns, "net") != nil {
		t.Fatal("NAD created although the namespace lacks the primary-network label")
	}
	nsObj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{v1.PrimaryNetworkLabel: ""}
	if err := c.Update(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
}

// TestPrimaryRules: pods already in the namespace, and a second primary network.
func TestPrimaryRules(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()

	// Pods existing before the network block it until they go.
	ns := namespace(t, c, "pods", primaryLabel)
	p := pod(ns, "early", nil)
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	u := udnObj(ns, "net", l2Primary("10.100.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonPodsExist, "early")
	if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)

	// Once the network exists, new pods do not un-create it.
	p2 := pod(ns, "late", nil)
	if err := c.Create(ctx, p2); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, p2)

	// A second primary UDN with other subnets joins (OKEP-5252), though
	// the namespace has pods; one overlapping it fails, naming the first;
	// a primary CUDN selecting the namespace fails (no UDN/CUDN mix).
	second := udnObj(ns, "second", l2Primary("10.101.0.0/24"))
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, second)
	waitCondition(t, c, second, metav1.ConditionTrue, v1.ReasonNADCreated)
	overlap := udnObj(ns, "overlap", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.100.0.0/16"}})
	if err := c.Create(ctx, overlap); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, overlap)
	waitCondition(t, c, overlap, metav1.ConditionFalse, v1.ReasonPrimarySubnetOverlap, "UserDefinedNetwork "+ns+"/net", "10.100.0.0/16 overlaps 10.100.0.0/24")
	if getNAD(t, c, ns, "overlap") != nil {
		t.Fatal("an overlapping primary network got a NAD")
	}
	cudn := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: ns + "-mix"}, Spec: v1.ClusterUserDefinedNetworkSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
		Template:          ptr.To(l2Primary("10.102.0.0/24"))}}
	if err := c.Create(ctx, cudn); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, cudn)
	waitCondition(t, c, cudn, metav1.ConditionFalse, v1.ReasonPrimaryConflict, "all UserDefinedNetworks or all ClusterUserDefinedNetworks")
	if getNAD(t, c, ns, netconf.CUDNNetworkName(cudn.Name)) != nil {
		t.Fatal("a primary CUDN got a NAD in a namespace with primary UDNs")
	}
	// ... while a secondary network is fine.
	sec := udnObj(ns, "extra", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.5.0/24"}})
	if err := c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, sec)
	waitCondition(t, c, sec, metav1.ConditionTrue, v1.ReasonNADCreated)
	// The first keeps its condition.
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	// Unplaced, the pod may go to either primary network: it holds both
	// until it goes (the cleanups delete the networks).
	if err := c.Delete(ctx, p2, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

// TestDeletingOnePrimaryOfSeveral: a primary network of a namespace with
// several is deleted as soon as no pod is placed on it, even the first one;
// pods placed on another do not hold it, and the last one left is held by
// every pod.
func TestDeletingOnePrimaryOfSeveral(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "several", primaryLabel)
	first := udnObj(ns, "first", l2Primary("10.110.0.0/24"))
	second := udnObj(ns, "second", v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.111.0.0/16"}})
	for _, u := range []*v1.UserDefinedNetwork{first, second} {
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		cleanupDelete(t, c, u)
		waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	}
	onSecond := pod(ns, "on-second", map[string]string{podnet.PlacementAnnotation: "second"})
	if err := c.Create(ctx, onSecond); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, onSecond)
	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if getNAD(t, c, ns, "first") != nil {
			return errorf("the first network's NAD is still there though no pod is placed on it")
		}
		return nil
	})
	if err := c.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, second, metav1.ConditionFalse, v1.ReasonNetworkInUse, "1 pod(s): on-second")
}

// TestHandMadePrimaryNAD: a primary NAD made by hand in the namespace after the
// UDN's is reported as a conflict on the UDN.
func TestHandMadePrimaryNAD(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "handmade", primaryLabel)
	u := udnObj(ns, "net", l2Primary("10.100.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	hand := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-hand"},
		Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: `{"cniVersion":"1.0.0","name":"x","type":"ovn-k8s-cni-overlay","topology":"layer2","role":"primary","subnets":"10.9.0.0/24","netAttachDefName":"` + ns + `/by-hand"}`},
	}
	if err := c.Create(ctx, hand); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonPrimaryConflict, "NetworkAttachmentDefinition "+ns+"/by-hand")
	if err := c.Delete(ctx, hand); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
}

// TestCUDNAcrossNamespaces: one NAD per selected namespace with the same
// network name; a namespace with its own primary UDN fails, the others work;
// a namespace that stops matching loses the NAD; status names everything.
func TestCUDNAcrossNamespaces(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	sel := map[string]string{"tenant": cmtest.UniqueName("shared")}
	withSel := func(extra map[string]string) map[string]string {
		m := map[string]string{v1.PrimaryNetworkLabel: ""}
		for k, v := range sel {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	a := namespace(t, c, "cudn-a", withSel(nil))
	b := namespace(t, c, "cudn-b", withSel(nil))
	conflicted := namespace(t, c, "cudn-c", withSel(nil))
	own := udnObj(conflicted, "own", l2Primary("10.50.0.0/24"))
	if err := c.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, own)
	waitCondition(t, c, own, metav1.ConditionTrue, v1.ReasonNADCreated)

	cu := &v1.ClusterUserDefinedNetwork{
		ObjectMeta: metav1.ObjectMeta{Name: sel["tenant"]},
		Spec: v1.ClusterUserDefinedNetworkSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: sel},
			Template:          &v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.60.0.0/16"}},
		},
	}
	if err := c.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, cu)
	nadName := "cluster.udn." + cu.Name
	cond := waitCondition(t, c, cu, metav1.ConditionFalse, v1.ReasonPrimaryConflict, "namespace "+conflicted, "UserDefinedNetwork "+conflicted+"/own")
	t.Logf("condition: %s", cond.Message)
	if diff := cmp.Diff([]string{a, b}, cu.Status.ActiveNamespaces); diff != "" {
		t.Errorf("activeNamespaces (-want +got):\n%s", diff)
	}
	na, nb := getNAD(t, c, a, nadName), getNAD(t, c, b, nadName)
	if na == nil || nb == nil {
		t.Fatal("NADs missing in selected namespaces")
	}
	ca, _ := netconf.Parse(na)
	cb, _ := netconf.Parse(nb)
	if ca.Name != nadName || cb.Name != nadName || ca.NADName != a+"/"+nadName || ca.VRF != cu.Name {
		t.Errorf("configs: %+v / %+v", ca, cb)
	}
	if na.Annotations[netconf.NetworkIDAnnotation] != nb.Annotations[netconf.NetworkIDAnnotation] {
		t.Errorf("the NADs of one network have different IDs: %s and %s", na.Annotations[netconf.NetworkIDAnnotation], nb.Annotations[netconf.NetworkIDAnnotation])
	}
	if getNAD(t, c, conflicted, nadName) != nil {
		t.Error("NAD created in the namespace that has its own primary network")
	}

	// Namespace b stops matching: its NAD (unused) goes away.
	unselect := func(name string) {
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			t.Fatal(err)
		}
		for k := range sel {
			delete(ns.Labels, k)
		}
		if err := c.Update(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	unselect(b)
	eventually(t, func() error {
		if getNAD(t, c, b, nadName) != nil {
			return errorf("NAD in namespace %s still exists after it stopped matching", b)
		}
		return nil
	})
	// Removing the conflicting UDN lets the CUDN in.
	if err := c.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, cu, metav1.ConditionTrue, v1.ReasonNADCreated)
	if diff := cmp.Diff([]string{a, conflicted}, cu.Status.ActiveNamespaces); diff != "" {
		t.Errorf("activeNamespaces (-want +got):\n%s", diff)
	}

	// Namespace a stops matching while a pod uses the network: the NAD
	// stays until the pod goes, and goes with it.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: a, Name: "user"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	unselect(a)
	eventually(t, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cu), cu); err != nil {
			return err
		}
		if slices.Contains(cu.Status.ActiveNamespaces, a) {
			return errorf("namespace %s still active after it stopped matching", a)
		}
		return nil
	})
	if getNAD(t, c, a, nadName) == nil {
		t.Fatalf("the NAD in namespace %s went while a pod uses it", a)
	}
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if getNAD(t, c, a, nadName) != nil {
			return errorf("NAD in namespace %s still exists after its last pod went", a)
		}
		return nil
	})
}

// TestDeletionBlockedByPod: a network in use keeps its finalizers and says so;
// when the pod goes the NAD is deleted and the UDN released.
func TestDeletionBlockedByPod(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "inuse", nil)
	u := udnObj(ns, "sec", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.10.0/24"}})
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	user := pod(ns, "user", map[string]string{netconf.NetworksAnnotation: "sec@net1"})
	bystander := pod(ns, "bystander", nil)
	for _, p := range []*corev1.Pod{user, bystander} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cleanupDelete(t, c, bystander)
	if err := c.Delete(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonNetworkInUse, "1 pod(s): user")
	if msg := cmtest.WaitEvent(t, c, u, "UserDefinedNetwork", v1.ReasonNetworkInUse); !strings.Contains(msg, "user") {
		t.Errorf("NetworkInUse Event %q does not name the pod", msg)
	}
	if getNAD(t, c, ns, "sec") == nil {
		t.Fatal("NAD deleted while a pod uses it")
	}
	if err := c.Delete(ctx, user, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if getNAD(t, c, ns, "sec") != nil {
			return errorf("NAD still exists")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(u), u); !apierrors.IsNotFound(err) {
			return errorf("UDN still exists (%v)", err)
		}
		return nil
	})
}

// TestControllerSideValidation: checks the API server cannot make end in a
// condition, never in a crash or a half-written NAD.
func TestControllerSideValidation(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "invalid", primaryLabel)
	cases := []struct {
		name     string
		spec     v1.UserDefinedNetworkSpec
		fragment string
	}{
		{"overlaps-cluster", l2Primary("10.244.5.0/24"), "overlaps the cluster default network subnet 10.244.0.0/16"},
		{"overlaps-services", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.96.0.0/24"}}, "overlaps the service CIDR 10.96.0.0/16"},
		{"join-overlaps-default", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.100.0.0/24"}, JoinSubnets: []v1.CIDR{"100.64.0.0/24"}}, "join subnet 100.64.0.0/24 overlaps the default network join subnet"},
		{"overlaps-masquerade", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"169.254.10.0/24"}}, "masquerade subnet"},
	}
	for _, tc := range cases {
		u := udnObj(ns, tc.name, tc.spec)
		if err := c.Create(ctx, u); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cleanupDelete(t, c, u)
		waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonSubnetOverlap, tc.fragment)
		if getNAD(t, c, ns, tc.name) != nil {
			t.Errorf("%s: NAD created for an invalid network", tc.name)
		}
	}
}

// TestVRFConflict: two CUDNs with the same VRF: the later one fails.
func TestVRFConflict(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	label := cmtest.UniqueName("vrf")
	namespace(t, c, "vrf", map[string]string{label: "x"})
	mk := func(name string) *v1.ClusterUserDefinedNetwork {
		return &v1.ClusterUserDefinedNetwork{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.ClusterUserDefinedNetworkSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{label: "x"}},
				Template:          &v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.20.0/24"}},
				VRF:               "blue-vrf",
			},
		}
	}
	first, second := mk(label+"-first"), mk(label+"-second")
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, first)
	waitCondition(t, c, first, metav1.ConditionTrue, v1.ReasonNADCreated)
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, second)
	waitCondition(t, c, second, metav1.ConditionFalse, v1.ReasonVRFConflict, "VRF blue-vrf is already used by ClusterUserDefinedNetwork "+first.Name)
	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, second, metav1.ConditionTrue, v1.ReasonNADCreated)
}

// TestNetworkLimit: past the configured number of networks, creation fails
// with a clear reason.
func TestNetworkLimit(t *testing.T) {
	c := admin(t)
	ctx := context.Background()
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &nads); err != nil {
		t.Fatal(err)
	}
	existing := map[string]bool{}
	for _, n := range nads.Items {
		if conf, _ := netconf.Parse(&n); conf != nil && n.Annotations[netconf.NetworkIDAnnotation] != "" {
			existing[conf.Name] = true
		}
	}
	cfg := config.Default()
	cfg.MaxNetworks = len(existing) + 1
	startManager(t, cfg)
	ns := namespace(t, c, "limit", nil)
	sec := func(name, subnet string) *v1.UserDefinedNetwork {
		return udnObj(ns, name, v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(subnet)}})
	}
	one, two := sec("one", "192.168.30.0/24"), sec("two", "192.168.31.0/24")
	if err := c.Create(ctx, one); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, one)
	waitCondition(t, c, one, metav1.ConditionTrue, v1.ReasonNADCreated)
	if err := c.Create(ctx, two); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, two)
	waitCondition(t, c, two, metav1.ConditionFalse, v1.ReasonNetworkLimit, "configured maximum")
	cmtest.WaitEvent(t, c, two, "UserDefinedNetwork", v1.ReasonNetworkLimit)
	// The waiting network takes the first ID released, with no other nudge.
	if err := c.Delete(ctx, one); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, two, metav1.ConditionTrue, v1.ReasonNADCreated)
}

// TestNamespaceNetworkLimit: a tenant's namespace holds at most
// --max-networks-per-namespace UserDefinedNetworks; the next ones wait with a
// condition and an Event, allocate nothing, and the oldest of them is created
// when one of the namespace's networks is deleted. Other namespaces are not
// affected.
func TestNamespaceNetworkLimit(t *testing.T) {
	c := admin(t)
	ctx := context.Background()
	cfg := config.Default()
	cfg.MaxNetworksPerNamespace = 2
	startManager(t, cfg)
	ns, other := namespace(t, c, "capped", nil), namespace(t, c, "uncapped", nil)
	sec := func(ns, name, subnet string) *v1.UserDefinedNetwork {
		return udnObj(ns, name, v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{v1.NetworkSubnet(subnet)}})
	}
	var nets []*v1.UserDefinedNetwork
	for i, name := range []string{"a", "b", "c", "d"} {
		u := sec(ns, name, fmt.Sprintf("192.168.%d.0/24", 90+i))
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		cleanupDelete(t, c, u)
		nets = append(nets, u)
		if i < 2 {
			waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
		}
	}
	for _, u := range nets[2:] {
		waitCondition(t, c, u, metav1.ConditionFalse, v1.ReasonNamespaceNetworkLimit, "the maximum of 2 UserDefinedNetworks", "--max-networks-per-namespace")
		cmtest.WaitEvent(t, c, u, "UserDefinedNetwork", v1.ReasonNamespaceNetworkLimit)
		if nad := getNAD(t, c, ns, u.Name); nad != nil {
			t.Fatalf("%s over the limit has a NAD", u.Name)
		}
	}
	elsewhere := sec(other, "a", "192.168.94.0/24")
	if err := c.Create(ctx, elsewhere); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, elsewhere)
	waitCondition(t, c, elsewhere, metav1.ConditionTrue, v1.ReasonNADCreated)

	// Deleting a created network makes room for the oldest waiting one only.
	if err := c.Delete(ctx, nets[0]); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, nets[2], metav1.ConditionTrue, v1.ReasonNADCreated)
	waitCondition(t, c, nets[3], metav1.ConditionFalse, v1.ReasonNamespaceNetworkLimit)
}

// TestTenantRBAC: a tenant bound to the tenant role in their namespace can
// manage UDNs there, and cannot create NADs, CUDNs, or UDNs elsewhere.
func TestTenantRBAC(t *testing.T) {
	c := admin(t)
	ctx := context.Background()
	if err := applyManifest(ctx, c, repoFile("config", "rbac", "tenant.yaml")); err != nil {
		t.Fatal(err)
	}
	mine := namespace(t, c, "alice", nil)
	other := namespace(t, c, "bob", nil)
	if err := c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "alice-udn"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "ovn-udn-tenant-edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "alice"}},
	}); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.UserConfig("alice")
	if err != nil {
		t.Fatal(err)
	}
	alice, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	sec := v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.40.0/24"}}
	if err := alice.Create(ctx, udnObj(mine, "ok", sec)); err != nil {
		t.Fatalf("tenant cannot create a UDN in their namespace: %v", err)
	}
	forbidden := map[string]client.Object{
		"UDN in another namespace": udnObj(other, "nope", sec),
		"NAD": &nadv1.NetworkAttachmentDefinition{ObjectMeta: metav1.ObjectMeta{Namespace: mine, Name: "nad"},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: `{"type":"ovn-k8s-cni-overlay"}`}},
		"CUDN": &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: "alice-cudn"},
			Spec: v1.ClusterUserDefinedNetworkSpec{Template: &sec}},
	}
	for what, obj := range forbidden {
		if err := alice.Create(ctx, obj); !apierrors.IsForbidden(err) {
			t.Errorf("tenant creating a %s: got %v, want Forbidden", what, err)
		}
	}
	_ = c.Delete(ctx, udnObj(mine, "ok", sec))
}

// TestOwnerReferenceRemovedIsPutBack: a managed NAD whose owner reference is
// removed by hand is not taken for a foreign NAD: the reference is put back
// and the network stays created.
func TestOwnerReferenceRemovedIsPutBack(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	ns := namespace(t, c, "orphan", primaryLabel)
	u := udnObj(ns, "net", l2Primary("10.100.0.0/24"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, u)
	nad := waitNAD(t, c, ns, "net")
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
	nad.OwnerReferences = nil
	if err := c.Update(ctx, nad); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if got := getNAD(t, c, ns, "net"); !ownedByUID(got, u.UID) {
			return errorf("owner reference not put back: %+v", got.OwnerReferences)
		}
		return nil
	})
	waitCondition(t, c, u, metav1.ConditionTrue, v1.ReasonNADCreated)
}

// TestTerminatingNamespaceReleasesCUDN: a namespace a live CUDN selects can
// finish deleting: the CUDN keeps its NAD there while a pod uses it (and
// says so), and releases it once the pod is gone.
func TestTerminatingNamespaceReleasesCUDN(t *testing.T) {
	c := admin(t)
	startManager(t, config.Default())
	ctx := context.Background()
	sel := map[string]string{"tenant": cmtest.UniqueName("leaving")}
	keep, leave := namespace(t, c, "stays", sel), namespace(t, c, "leaves", sel)
	cu := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: cmtest.UniqueName("leaving")},
		Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: sel},
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.40.0/24"}}}}
	if err := c.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	cleanupDelete(t, c, cu)
	waitCondition(t, c, cu, metav1.ConditionTrue, v1.ReasonNADCreated, "2 namespace(s)")
	name := netconf.CUDNNetworkName(cu.Name)
	user := pod(leave, "user", map[string]string{netconf.NetworksAnnotation: name})
	if err := c.Create(ctx, user); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leave}}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, cu, metav1.ConditionFalse, v1.ReasonNamespaceTerminating, leave, "user")
	if getNAD(t, c, leave, name) == nil {
		t.Fatal("NAD deleted while a pod of the terminating namespace uses it")
	}
	if err := c.Delete(ctx, user, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error {
		if getNAD(t, c, leave, name) != nil {
			return errorf("NAD in the terminating namespace %s still exists", leave)
		}
		return nil
	})
	if getNAD(t, c, keep, name) == nil {
		t.Fatal("NAD of the namespace that stays was deleted")
	}
	waitCondition(t, c, cu, metav1.ConditionTrue, v1.ReasonNADCreated, "1 namespace(s)")
}

// TestTenantBurstDoesNotDelayOthers: with 100 networks of one tenant queued
// before one network of another (the controller starts after all exist, so
// its queue holds them all at once), the other tenant's network is created
// after a handful of the burst, not after all of it.
func TestTenantBurstDoesNotDelayOthers(t *testing.T) {
	c := admin(t)
	ctx := context.Background()
	const burst = 100
	busy, quiet := namespace(t, c, "burst", nil), namespace(t, c, "quiet", nil)
	spec := v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"192.168.60.0/24"}}
	var all []*v1.UserDefinedNetwork
	for i := 0; i < burst; i++ {
		all = append(all, udnObj(busy, fmt.Sprintf("n%03d", i), spec))
	}
	mine := udnObj(quiet, "net", spec)
	all = append(all, mine)
	for _, u := range all {
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.MaxNetworksPerNamespace = 0 // the burst is one namespace's
	startManager(t, cfg)
	for _, u := range all {
		cleanupDelete(t, c, u)
	}
	waitCondition(t, c, mine, metav1.ConditionTrue, v1.ReasonNADCreated)
	var list v1.UserDefinedNetworkList
	if err := c.List(ctx, &list, client.InNamespace(busy)); err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, u := range list.Items {
		if meta.IsStatusConditionTrue(u.Status.Conditions, v1.ConditionNetworkCreated) {
			done++
		}
	}
	// Round-robin: the quiet tenant's network is about the second reconciled;
	// allow for requeues of the burst's first networks.
	if done > burst/5 {
		t.Fatalf("the other tenant's network waited for %d of the %d networks of the burst", done, burst)
	}
	t.Logf("created after %d of the burst's %d networks", done, burst)
}
