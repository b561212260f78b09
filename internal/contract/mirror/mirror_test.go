package mirror

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

const (
	testNS      = "tenant"
	testKey     = "tenant/net" // the primary NAD's attachment key
	testNetwork = "tenant.net"
)

var (
	ipv4 = discoveryv1.AddressTypeIPv4
	ipv6 = discoveryv1.AddressTypeIPv6
	tcp  = corev1.ProtocolTCP
	web  = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "web", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
	httpPort = discoveryv1.EndpointPort{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: &tcp}
)

// annotated returns a pod with the given pod-networks annotation value ("" for none).
func annotated(name, annotation string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, UID: types.UID("uid-" + name)}}
	if annotation != "" {
		p.Annotations = map[string]string{podnet.Annotation: annotation}
	}
	return p
}

// withAttachments returns a pod annotated with a default (infrastructure)
// attachment and, when primary is not empty, a primary one with these CIDRs.
func withAttachments(name string, primary ...string) *corev1.Pod {
	nets := podnet.Networks{podnet.DefaultKey: {IPs: []string{"10.244.0.9/24"}, Role: podnet.RoleInfrastructure}}
	if len(primary) > 0 {
		nets[testKey] = podnet.Attachment{IPs: primary, Role: podnet.RolePrimary}
	}
	return annotated(name, nets.String())
}

var testPods = map[string]*corev1.Pod{
	"a":         withAttachments("a", "10.100.0.5/16", "fd00:100::5/64"),
	"b":         withAttachments("b", "10.100.0.6/16"), // no IPv6 address
	"bare":      annotated("bare", ""),                 // not annotated yet
	"only-dflt": withAttachments("only-dflt"),          // not attached to the UDN yet
	"broken":    annotated("broken", "{not json"),
	"secondary": annotated("secondary", podnet.Networks{testKey: {IPs: []string{"10.100.0.7/16"}, Role: podnet.RoleSecondary}}.String()),
}

func testAddrs(name string, uid types.UID) []netip.Addr {
	p, ok := testPods[name]
	if !ok || (uid != "" && uid != p.UID) {
		return nil
	}
	return PrimaryAddrs(p, testKey)
}

// ep is an endpoint of pod at addr with these conditions (ready, serving, terminating).
func ep(pod, addr string, ready, serving, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		NodeName:   ptr.To("node-" + pod),
		Zone:       ptr.To("zone-1"),
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: testNS, Name: pod, UID: types.UID("uid-" + pod)},
	}
}

func readyEP(pod, addr string) discoveryv1.Endpoint { return ep(pod, addr, true, true, false) }

// dflt is a default slice of Service svc.
func dflt(svc, name string, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: DefaultManager}},
		AddressType: t, Ports: ports, Endpoints: eps,
	}
}

// mirror is the expected mirror of default slice source of web, written out.
func mirror(source string, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: Name(source, testNetwork),
			Labels: map[string]string{
				"k8s.ovn.org/service-name":               "web",
				"k8s.ovn.org/endpointslice-network":      testNetwork,
				"endpointslice.kubernetes.io/managed-by": "ovn-udn-endpointslice-mirror",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "svc-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		AddressType: t, Ports: ports, Endpoints: append([]discoveryv1.Endpoint{}, eps...),
	}
}

func TestDesired(t *testing.T) {
	http := []discoveryv1.EndpointPort{httpPort}
	named := []discoveryv1.EndpointPort{httpPort,
		{Name: ptr.To("metrics"), Port: ptr.To[int32](9090), Protocol: &tcp, AppProtocol: ptr.To("http")},
		{Name: ptr.To("dns"), Port: ptr.To[int32](53), Protocol: ptr.To(corev1.ProtocolUDP)}}
	withHost := readyEP("a", "10.244.0.5")
	withHost.Hostname = ptr.To("a")
	withHost.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "zone-1"}}}
	mirroredHost := withHost
	mirroredHost.Addresses = []string{"10.100.0.5"}
	recreated := readyEP("a", "10.244.0.5")
	recreated.TargetRef.UID = "uid-of-an-earlier-a"
	noRef := readyEP("a", "10.244.0.5")
	noRef.TargetRef = nil
	notPod := readyEP("a", "10.244.0.5")
	notPod.TargetRef.Kind = "Node"
	elsewhere := readyEP("a", "10.244.0.5")
	elsewhere.TargetRef.Namespace = "other"
	otherNS := dflt("web", "web-there", ipv4, http, readyEP("a", "10.244.0.5"))
	otherNS.Namespace = "other"
	byHand := dflt("web", "web-hand", ipv4, http, readyEP("a", "10.244.0.5"))
	byHand.Labels[discoveryv1.LabelManagedBy] = "someone-else"

	tests := []struct {
		name     string
		defaults []discoveryv1.EndpointSlice
		want     []discoveryv1.EndpointSlice
	}{{
		name: "dual-stack: each family gets its pods' addresses of that family; a pod without one is left out",
		defaults: []discoveryv1.EndpointSlice{
			dflt("web", "web-v4", ipv4, http, readyEP("a", "10.244.0.5"), readyEP("b", "10.244.0.6")),
			dflt("web", "web-v6", ipv6, http, readyEP("a", "fd00:10:244::5"), readyEP("b", "fd00:10:244::6")),
		},
		want: []discoveryv1.EndpointSlice{
			mirror("web-v4", ipv4, http, readyEP("a", "10.100.0.5"), readyEP("b", "10.100.0.6")),
			mirror("web-v6", ipv6, http, readyEP("a", "fd00:100::5")),
		},
	}, {
		name: "conditions: not ready, serving while terminating, not serving",
		defaults: []discoveryv1.EndpointSlice{dflt("web", "web-v4", ipv4, http,
			ep("a", "10.244.0.5", false, true, true), ep("b", "10.244.0.6", false, false, false))},
		want: []discoveryv1.EndpointSlice{mirror("web-v4", ipv4, http,
			ep("a", "10.100.0.5", false, true, true), ep("b", "10.100.0.6", false, false, false))},
	}, {
		name:     "hostname and hints are kept",
		defaults: []discoveryv1.EndpointSlice{dflt("web", "web-v4", ipv4, http, withHost)},
		want:     []discoveryv1.EndpointSlice{mirror("web-v4", ipv4, http, mirroredHost)},
	}, {
		name: "pods without a primary address yet: no annotation, only the default attachment, malformed, not primary, gone",
		defaults: []discoveryv1.EndpointSlice{dflt("web", "web-v4", ipv4, http,
			readyEP("bare", "10.244.0.7"), readyEP("a", "10.244.0.5"), readyEP("only-dflt", "10.244.0.8"),
			readyEP("broken", "10.244.0.9"), readyEP("secondary", "10.244.0.10"), readyEP("gone", "10.244.0.11"))},
		want: []discoveryv1.EndpointSlice{mirror("web-v4", ipv4, http, readyEP("a", "10.100.0.5"))},
	}, {
		name:     "a slice none of whose pods has an address is mirrored empty",
		defaults: []discoveryv1.EndpointSlice{dflt("web", "web-v6", ipv6, http, readyEP("b", "fd00:10:244::6"))},
		want:     []discoveryv1.EndpointSlice{mirror("web-v6", ipv6, http)},
	}, {
		name:     "named ports, several protocols",
		defaults: []discoveryv1.EndpointSlice{dflt("web", "web-v4", ipv4, named, readyEP("a", "10.244.0.5"))},
		want:     []discoveryv1.EndpointSlice{mirror("web-v4", ipv4, named, readyEP("a", "10.100.0.5"))},
	}, {
		name: "several default slices of one family, each its own mirror",
		defaults: []discoveryv1.EndpointSlice{
			dflt("web", "web-1", ipv4, http, readyEP("a", "10.244.0.5")),
			dflt("web", "web-2", ipv4, http, readyEP("b", "10.244.0.6")),
		},
		want: []discoveryv1.EndpointSlice{
			mirror("web-1", ipv4, http, readyEP("a", "10.100.0.5")),
			mirror("web-2", ipv4, http, readyEP("b", "10.100.0.6")),
		},
	}, {
		name: "endpoints of another pod incarnation, without a pod target, or of another namespace are left out",
		defaults: []discoveryv1.EndpointSlice{dflt("web", "web-v4", ipv4, http,
			recreated, noRef, notPod, elsewhere, readyEP("b", "10.244.0.6"))},
		want: []discoveryv1.EndpointSlice{mirror("web-v4", ipv4, http, readyEP("b", "10.100.0.6"))},
	}, {
		name: "slices of another Service, made by someone else, FQDN, or of another namespace are not mirrored",
		defaults: []discoveryv1.EndpointSlice{
			dflt("api", "api-v4", ipv4, http, readyEP("a", "10.244.0.5")),
			byHand,
			dflt("web", "web-fqdn", discoveryv1.AddressTypeFQDN, http),
			otherNS,
		},
		want: nil,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Desired(web, testNetwork, tc.defaults, testAddrs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Desired (-want +got):\n%s", diff)
			}
		})
	}
}

func TestName(t *testing.T) {
	long := strings.Repeat("a", 240) + "." + strings.Repeat("b", 12)
	// Cut at 242 characters, the last two end in "-" and "." before trimming.
	cases := []string{"web-x7k2p", long, strings.Repeat("c", 241) + "-" + strings.Repeat("d", 20),
		strings.Repeat("e", 241) + "." + strings.Repeat("f", 20)}
	seen := map[string]bool{}
	for _, src := range cases {
		for _, network := range []string{"tenant.net", "cluster.udn.shared"} {
			n := Name(src, network)
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				t.Errorf("Name(%q, %q) = %q: %v", src, network, n, errs)
			}
			if n != Name(src, network) {
				t.Errorf("Name(%q, %q) is not stable", src, network)
			}
			if seen[n] {
				t.Errorf("Name(%q, %q) = %q repeats", src, network, n)
			}
			seen[n] = true
		}
	}
	if n := Name("web-x7k2p", "tenant.net"); !strings.HasPrefix(n, "web-x7k2p-") {
		t.Errorf("Name of a short source = %q, want it to start with the source", n)
	}
}

func TestUpToDate(t *testing.T) {
	want := mirror("web-v4", ipv4, []discoveryv1.EndpointPort{httpPort}, readyEP("a", "10.100.0.5"))
	stored := *want.DeepCopy()
	stored.ResourceVersion, stored.UID = "42", "slice-uid"
	stored.Labels["team"] = "blue"
	if !UpToDate(&stored, &want) {
		t.Error("a stored mirror with server fields and another's label is not up to date")
	}
	empty := mirror("web-v4", ipv4, nil)
	storedEmpty := *empty.DeepCopy()
	storedEmpty.Endpoints = nil
	if !UpToDate(&storedEmpty, &empty) {
		t.Error("an empty mirror read back with nil endpoints is not up to date")
	}
	for name, change := range map[string]func(*discoveryv1.EndpointSlice){
		"readiness":   func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Conditions.Ready = ptr.To(false) },
		"address":     func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"10.100.0.9"} },
		"port":        func(s *discoveryv1.EndpointSlice) { s.Ports[0].Port = ptr.To[int32](80) },
		"our label":   func(s *discoveryv1.EndpointSlice) { s.Labels[LabelNetwork] = "other" },
		"owner":       func(s *discoveryv1.EndpointSlice) { s.OwnerReferences = nil },
		"addressType": func(s *discoveryv1.EndpointSlice) { s.AddressType = ipv6 },
	} {
		s := *stored.DeepCopy()
		change(&s)
		if UpToDate(&s, &want) {
			t.Errorf("a mirror with another %s is up to date", name)
		}
	}
}
