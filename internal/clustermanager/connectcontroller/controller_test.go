package connectcontroller_test

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/connectcontroller"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

func cnc(name string, selectors v1.NetworkSelectors, cidr string, prefix int32) *v1.ClusterNetworkConnect {
	return &v1.ClusterNetworkConnect{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ClusterNetworkConnectSpec{
		NetworkSelectors:    selectors,
		ConnectSubnets:      []v1.ConnectSubnet{{CIDR: v1.ConnectCIDR(cidr), NetworkPrefix: prefix}},
		ConnectivityEnabled: []v1.ConnectivityType{v1.PodNetwork}}}
}

func cudnSelector(labels map[string]string) v1.NetworkSelector {
	return v1.NetworkSelector{NetworkSelectionType: v1.ClusterUserDefinedNetworkSelection,
		ClusterUserDefinedNetworkSelector: &v1.ClusterUserDefinedNetworkSelector{NetworkSelector: metav1.LabelSelector{MatchLabels: labels}}}
}

func udnSelector(labels map[string]string) v1.NetworkSelector {
	return v1.NetworkSelector{NetworkSelectionType: v1.PrimaryUserDefinedNetworkSelection,
		PrimaryUserDefinedNetworkSelector: &v1.PrimaryUserDefinedNetworkSelector{NamespaceSelector: metav1.LabelSelector{MatchLabels: labels}}}
}

// accepted waits until the connect's Accepted condition has this reason
// and returns the connect.
func accepted(t *testing.T, c client.Client, name, reason string) *v1.ClusterNetworkConnect {
	t.Helper()
	var got v1.ClusterNetworkConnect
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionAccepted)
		if cond == nil || cond.Reason != reason {
			return fmt.Errorf("Accepted: %+v, want reason %s", cond, reason)
		}
		want := v1.ConnectFailure
		if reason == v1.ReasonValidationSucceeded {
			want = v1.ConnectSuccess // no node: no zone to wait for
		}
		if got.Status.Status != want {
			return fmt.Errorf("status %q, want %q", got.Status.Status, want)
		}
		return nil
	})
	return &got
}

func networkID(t *testing.T, c client.Client, ns, nad string) int {
	t.Helper()
	var id int
	cmtest.Eventually(t, time.Minute, func() error {
		n := &nadv1.NetworkAttachmentDefinition{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: nad}, n); err != nil {
			return err
		}
		v, ok := n.Annotations[netconf.NetworkIDAnnotation]
		if !ok {
			return fmt.Errorf("NAD %s/%s has no network ID", ns, nad)
		}
		var err error
		id, err = strconv.Atoi(v)
		return err
	})
	return id
}

// TestConnectLifecycle runs cluster-manager against a real API server: a
// connect of a Layer3 UDN and a Layer2 CUDN is accepted with a connect
// router key from the central range and a slice per network; the seed's
// refusals come with their reasons and Events; the allocation survives a
// restart unchanged; a network unselected and selected again gets its
// slice back.
func TestConnectLifecycle(t *testing.T) {
	admin := cmtest.Admin(t, env)
	ctx := context.Background()
	stop := cmtest.Start(t, env, config.Default())

	blue := cmtest.Namespace(t, admin, "blue", map[string]string{v1.PrimaryNetworkLabel: "", "connect-test": "blue"})
	green := cmtest.Namespace(t, admin, "green", map[string]string{v1.PrimaryNetworkLabel: "", "connect-test": "green"})
	udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: blue, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"103.103.0.0/16/24"}}}
	greenName := cmtest.UniqueName("green")
	cudn := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: greenName, Labels: map[string]string{"connect": greenName}},
		Spec: v1.ClusterUserDefinedNetworkSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"connect-test": "green"}},
			Template: &v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"104.104.0.0/16"}}}}
	for _, o := range []client.Object{udn, cudn} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		cmtest.DeleteAtCleanup(t, admin, o)
	}
	blueID := networkID(t, admin, blue, "net")
	greenID := networkID(t, admin, green, netconf.CUDNNetworkName(greenName))

	name := cmtest.UniqueName("colored")
	colored := cnc(name, v1.NetworkSelectors{cudnSelector(map[string]string{"connect": greenName}), udnSelector(map[string]string{"connect-test": "blue"})}, "192.168.0.0/16", 24)
	if err := admin.Create(ctx, colored); err != nil {
		t.Fatal(err)
	}
	cmtest.DeleteAtCleanup(t, admin, colored)
	got := accepted(t, admin, name, v1.ReasonValidationSucceeded)
	alloc, ok, err := connect.ParseAllocation(got.Annotations)
	if err != nil || !ok {
		t.Fatalf("allocation: %v %v %v", ok, err, got.Annotations)
	}
	if alloc.TunnelKey < allocator.FirstAllocatedKey || alloc.TunnelKey > allocator.LastTunnelKey {
		t.Errorf("connect router key %d outside the central range", alloc.TunnelKey)
	}
	want := connect.Subnets{
		{Topology: netconf.TopologyLayer2, ID: greenID}: {V4: netip.MustParsePrefix("192.168.0.2/31")},
		{Topology: netconf.TopologyLayer3, ID: blueID}:  {V4: netip.MustParsePrefix("192.168.1.0/24")},
	}
	if alloc.Subnets.Format() != want.Format() {
		t.Fatalf("subnets %s, want %s", alloc.Subnets.Format(), want.Format())
	}

	// Refusals, one per reason the API server cannot see.
	rival := cnc(cmtest.UniqueName("rival"), v1.NetworkSelectors{cudnSelector(map[string]string{"connect": greenName}), udnSelector(map[string]string{"connect-test": "blue"})}, "192.168.128.0/17", 24)
	alone := cnc(cmtest.UniqueName("alone"), v1.NetworkSelectors{udnSelector(map[string]string{"connect-test": "blue"})}, "10.200.0.0/16", 24)
	services := cnc(cmtest.UniqueName("svc"), v1.NetworkSelectors{cudnSelector(map[string]string{"connect": greenName}), udnSelector(map[string]string{"connect-test": "blue"})}, "10.96.0.0/16", 24)
	tiny := cnc(cmtest.UniqueName("tiny"), v1.NetworkSelectors{cudnSelector(map[string]string{"connect": greenName}), udnSelector(map[string]string{"connect-test": "blue"})}, "10.201.0.0/30", 31)
	for _, tc := range []struct {
		obj    *v1.ClusterNetworkConnect
		reason string
	}{
		{rival, v1.ReasonConnectSubnetOverlap},
		{alone, v1.ReasonInsufficientNetworks},
		{services, v1.ReasonConnectSubnetConflict},
		// Two blocks of one link: the Layer3 network takes one, and the
		// Layer2 network finds no link 1 in the other.
		{tiny, v1.ReasonConnectSubnetExhausted},
	} {
		if err := admin.Create(ctx, tc.obj); err != nil {
			t.Fatal(err)
		}
		cmtest.DeleteAtCleanup(t, admin, tc.obj)
		r := accepted(t, admin, tc.obj.Name, tc.reason)
		msg := cmtest.WaitEvent(t, admin, r, "ClusterNetworkConnect", tc.reason)
		t.Logf("%s: %s", tc.reason, msg)
		if _, ok, _ := connect.ParseAllocation(r.Annotations); ok {
			t.Errorf("%s: refused connect got an allocation", tc.obj.Name)
		}
	}

	// A restart changes nothing.
	before := got.ResourceVersion
	stop()
	cmtest.Start(t, env, config.Default())
	accepted(t, admin, name, v1.ReasonValidationSucceeded)
	if err := admin.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != before {
		after, _, _ := connect.ParseAllocation(got.Annotations)
		t.Errorf("restart rewrote the connect: key %d -> %d, subnets %s -> %s", alloc.TunnelKey, after.TunnelKey, alloc.Subnets.Format(), after.Subnets.Format())
	}

	// Unselect the Layer2 network: one network left, refused (zones tear the
	// connect down; the allocation stays), and selected again it has the
	// same slice.
	patchLabels(t, admin, cudn, map[string]string{"connect": "no"})
	accepted(t, admin, name, v1.ReasonInsufficientNetworks)
	patchLabels(t, admin, cudn, map[string]string{"connect": greenName})
	got = accepted(t, admin, name, v1.ReasonValidationSucceeded)
	again, _, _ := connect.ParseAllocation(got.Annotations)
	if again.Subnets.Format() != want.Format() || again.TunnelKey != alloc.TunnelKey {
		t.Errorf("selected again: %d %s, want %d %s", again.TunnelKey, again.Subnets.Format(), alloc.TunnelKey, want.Format())
	}
	// The networks go while this manager runs (their finalizers are its to
	// remove; cleanups would run after it stopped).
	for _, o := range []client.Object{udn, cudn} {
		if err := admin.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cmtest.Eventually(t, time.Minute, func() error {
		for _, o := range []client.Object{udn, cudn} {
			if err := admin.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
				return fmt.Errorf("%s still there", o.GetName())
			}
		}
		return nil
	})
	// With its networks gone, the connect is refused.
	accepted(t, admin, name, v1.ReasonInsufficientNetworks)
}

func TestSummary(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status}
	}
	accepted := cond(v1.ConditionAccepted, metav1.ConditionTrue)
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		nodes []string
		want  v1.ConnectStatusType
	}{
		{"nothing yet", nil, []string{"a"}, ""},
		{"refused", []metav1.Condition{cond(v1.ConditionAccepted, metav1.ConditionFalse)}, []string{"a"}, v1.ConnectFailure},
		{"accepted, zones pending", []metav1.Condition{accepted}, []string{"a"}, ""},
		{"accepted, every zone ready", []metav1.Condition{accepted, cond("Ready-In-Zone-a", metav1.ConditionTrue), cond("Ready-In-Zone-b", metav1.ConditionTrue)}, []string{"a", "b"}, v1.ConnectSuccess},
		{"one zone failed", []metav1.Condition{accepted, cond("Ready-In-Zone-a", metav1.ConditionTrue), cond("Ready-In-Zone-b", metav1.ConditionFalse)}, []string{"a", "b"}, v1.ConnectFailure},
		{"one zone missing", []metav1.Condition{accepted, cond("Ready-In-Zone-a", metav1.ConditionTrue)}, []string{"a", "b"}, ""},
	} {
		if got := connectcontroller.Summary(tc.conds, tc.nodes); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func patchLabels(t *testing.T, c client.Client, obj client.Object, labels map[string]string) {
	t.Helper()
	cmtest.Eventually(t, 30*time.Second, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.SetLabels(labels)
		return c.Update(context.Background(), obj)
	})
}
