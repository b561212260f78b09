package epslicemirror_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// direct returns an admin client that reads the API, not a cache.
func direct(t *testing.T) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: clustermanager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMirrorsFollowPods: in a UDN namespace a Service's mirrored slices list
// its pods' UDN addresses with their default slices' conditions and ports,
// for a ClusterIP Service and a headless one; readiness, graceful
// deletion and removal of a pod follow; a reconcile with nothing changed
// writes nothing; the mirrors go with their Service.
func TestMirrorsFollowPods(t *testing.T) {
	c := cmtest.Admin(t, env)
	cmtest.Start(t, env, config.Default())
	ctx := context.Background()
	ns, network, key := udnNamespace(t, c, v1.Layer2, "10.100.0.0/16", "fd00:100::/64")
	nodeName := node(t, c)
	web := map[string]string{"app": "web"}
	svc := service(t, c, ns, "web", web, false)
	headless := service(t, c, ns, "web-headless", web, true)

	var pods []*corev1.Pod
	udn := map[string]string{} // pod -> IPv4 UDN address
	for i := range 3 {
		p := pod(t, c, ns, nodeName, fmt.Sprintf("web-%d", i))
		for _, a := range primaryAddrs(t, c, p, key) {
			if netip.MustParseAddr(a).Is4() {
				udn[p.Name] = a
			}
		}
		setStatus(t, c, p, true, fmt.Sprintf("10.244.0.%d", 10+i), fmt.Sprintf("fd00:10:244::%d", 10+i))
		pods = append(pods, p)
	}
	type state struct{ ready, terminating bool }
	states := map[string]state{"web-0": {true, false}, "web-1": {true, false}, "web-2": {true, false}}
	// check waits until both Services' mirrors list the pods in states.
	check := func() {
		t.Helper()
		want := []string{"IPv4 port http 8080"}
		for name, s := range states {
			want = append(want, fmt.Sprintf("IPv4 %s %s ready=%v terminating=%v", name, udn[name], s.ready, s.terminating))
		}
		waitEndpoints(t, c, svc, network, want...)
		waitEndpoints(t, c, headless, network, want...)
	}
	check()
	waitEndpoints(t, c, svc, netconf.DefaultNetworkName, "IPv4 port http 8080",
		"IPv4 web-0 10.244.0.10 ready=true terminating=false",
		"IPv4 web-1 10.244.0.11 ready=true terminating=false",
		"IPv4 web-2 10.244.0.12 ready=true terminating=false")
	for _, s := range mirrors(t, c, svc) {
		if _, ok := s.Labels[discoveryv1.LabelServiceName]; ok {
			t.Errorf("mirror %s carries %s", s.Name, discoveryv1.LabelServiceName)
		}
		if ref := metav1.GetControllerOf(&s); ref == nil || ref.Kind != "Service" || ref.UID != svc.UID {
			t.Errorf("mirror %s is controlled by %v, want service %s", s.Name, ref, svc.UID)
		}
	}

	setStatus(t, c, pods[0], false, "10.244.0.10", "fd00:10:244::10")
	states["web-0"] = state{false, false}
	check()

	// Nothing changed since: a resync writes nothing.
	d := direct(t)
	for _, s := range []*corev1.Service{svc, headless} {
		if n := writes(t, d, s); n != 0 {
			t.Errorf("a reconcile of the settled service %s wrote %d times", s.Name, n)
		}
	}

	// A pod being deleted gracefully is terminating (no kubelet finishes it) ...
	if err := c.Delete(ctx, pods[1]); err != nil {
		t.Fatal(err)
	}
	states["web-1"] = state{false, true}
	check()
	// ... and gone once deleted for good.
	if err := c.Delete(ctx, pods[1], client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	delete(states, "web-1")
	check()

	for _, s := range []*corev1.Service{svc, headless} {
		if err := c.Delete(ctx, s); err != nil {
			t.Fatal(err)
		}
		cmtest.Eventually(t, 0, func() error {
			if left := mirrors(t, c, s); len(left) > 0 {
				return fmt.Errorf("service %s deleted, %d mirrors left", s.Name, len(left))
			}
			return nil
		})
	}
}

// handMade creates a slice for Service svc with these labels and one endpoint.
func handMade(t *testing.T, c client.Client, svc *corev1.Service, name string, labels map[string]string) *discoveryv1.EndpointSlice {
	t.Helper()
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: name, Labels: labels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.100.0.99"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: "outside"}}},
	}
	if err := c.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	cmtest.Eventually(t, 0, func() error {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still exists (%v)", obj.GetName(), err)
	})
}

// TestNoMirrors: a Service of a default-network namespace, and one without a
// selector in a UDN namespace, get no mirrors (a stale one is deleted), and a
// user's own slice for the latter is used as it is, never deleted.
func TestNoMirrors(t *testing.T) {
	c := cmtest.Admin(t, env)
	cmtest.Start(t, env, config.Default())

	plainNS := cmtest.Namespace(t, c, "plain", nil)
	plain := service(t, c, plainNS, "web", map[string]string{"app": "web"}, false)
	setStatus(t, c, pod(t, c, plainNS, node(t, c), "web-0"), true, "10.244.0.20")
	waitEndpoints(t, c, plain, netconf.DefaultNetworkName, "IPv4 port http 8080", "IPv4 web-0 10.244.0.20 ready=true terminating=false")
	stale := handMade(t, c, plain, "stale", mirror.Labels(plain.Name, "some.net"))
	waitGone(t, c, stale)
	if left := mirrors(t, c, plain); len(left) > 0 {
		t.Errorf("default-network service has mirrors: %v", left)
	}

	ns, network, _ := udnNamespace(t, c, v1.Layer2, "10.100.0.0/16")
	manual := service(t, c, ns, "manual", nil, false)
	own := handMade(t, c, manual, "manual-own", map[string]string{
		mirror.LabelServiceName: manual.Name, mirror.LabelNetwork: network, discoveryv1.LabelManagedBy: "someone"})
	staleUDN := handMade(t, c, manual, "manual-stale", mirror.Labels(manual.Name, network))
	waitGone(t, c, staleUDN)
	if n := writes(t, direct(t), manual); n != 0 {
		t.Errorf("a reconcile of the selector-less service wrote %d times", n)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(own), own); err != nil {
		t.Fatalf("the user's own slice: %v", err)
	}
	waitEndpoints(t, c, manual, network, "IPv4 port http 8080", "IPv4 outside 10.100.0.99 ready=true terminating=false")
}

// TestLateAnnotation: a ready pod is left out of the mirror until it has its
// primary-network address, which then appears without any change of the
// default slices (the pod watch).
func TestLateAnnotation(t *testing.T) {
	c := cmtest.Admin(t, env)
	cmtest.Start(t, env, config.Default())
	ns, network, key := udnNamespace(t, c, v1.Layer3, "10.128.0.0/14/24")
	svc := service(t, c, ns, "web", map[string]string{"app": "web"}, false)
	p := pod(t, c, ns, node(t, c), "web-0")
	setStatus(t, c, p, true, "10.244.0.30")
	waitEndpoints(t, c, svc, netconf.DefaultNetworkName, "IPv4 port http 8080", "IPv4 web-0 10.244.0.30 ready=true terminating=false")
	waitEndpoints(t, c, svc, network, "IPv4 port http 8080")

	nets := podnet.Networks{key: {IPs: []string{"10.128.1.5/24"}, MAC: "0a:58:0a:80:01:05", Role: podnet.RolePrimary}}
	if _, err := podnet.Patch(context.Background(), c, p, nets); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, c, svc, network, "IPv4 port http 8080", "IPv4 web-0 10.128.1.5 ready=true terminating=false")
}
