// Package mirror is the contract of mirrored EndpointSlices, and their pure
// builder. Kubernetes' EndpointSlice controller lists pods by their
// default-network addresses (status.podIPs), but a Service in a namespace
// whose primary network is a user-defined network is load-balanced to its
// pods' primary-network addresses: cluster-manager's mirror controller
// (package epslicemirror) keeps, beside each default slice, a mirrored slice
// holding those (Desired). The labels on mirrored slices are a contract with
// the readers (ForService, the zones' load balancers), which import this
// package and not the controller.
package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// Labels of the EndpointSlices a Service's load balancers use on a
// user-defined network: those this package mirrors, and those a user makes by
// hand for a Service without a selector.
const (
	// LabelServiceName holds the name of the Service the slice belongs to.
	// Mirrored slices never carry discoveryv1.LabelServiceName, so nothing
	// takes them for the Service's default-network slices.
	LabelServiceName = "k8s.ovn.org/service-name"
	// LabelNetwork holds the name of the network whose addresses the slice
	// lists (the "name" of the network's NAD config).
	LabelNetwork = "k8s.ovn.org/endpointslice-network"
)

// ManagedBy is the discoveryv1.LabelManagedBy value of mirrored slices; only
// slices carrying it are ever changed or deleted here.
const ManagedBy = "ovn-udn-endpointslice-mirror"

// DefaultManager is the discoveryv1.LabelManagedBy value of the slices
// Kubernetes' EndpointSlice controller maintains for Services with a
// selector: the slices that are mirrored.
const DefaultManager = "endpointslice-controller.k8s.io"

// PodAddrs returns the primary-network addresses of the pod of the Service's
// namespace with this name and, when uid is not empty, this UID; none when
// the pod is unknown, is another incarnation, or has no such address yet.
type PodAddrs func(name string, uid types.UID) []netip.Addr

// Desired returns the mirrored slices svc should have on network, its
// namespace's primary user-defined network: one per slice of defaults that
// Kubernetes' EndpointSlice controller made for svc (others, and FQDN slices,
// are ignored), in the order of defaults. A mirrored slice has the default
// slice's address type and ports, and its endpoints with their conditions,
// node, zone, hostname, hints and target, each with the address of its pod's
// family that addrs gives in place of the default-network one. Endpoints
// whose pod has no such address yet are left out; a mirror may be empty.
func Desired(svc *corev1.Service, network string, defaults []discoveryv1.EndpointSlice, addrs PodAddrs) []discoveryv1.EndpointSlice {
	var out []discoveryv1.EndpointSlice
	owner := metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))
	for i := range defaults {
		d := &defaults[i]
		if !mirrored(svc, d) {
			continue
		}
		m := discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name:            Name(d.Name, network),
				Namespace:       svc.Namespace,
				Labels:          Labels(svc.Name, network),
				OwnerReferences: []metav1.OwnerReference{*owner},
			},
			AddressType: d.AddressType,
			Endpoints:   []discoveryv1.Endpoint{},
		}
		for _, p := range d.Ports {
			m.Ports = append(m.Ports, *p.DeepCopy())
		}
		for _, e := range d.Endpoints {
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || (ref.Namespace != "" && ref.Namespace != svc.Namespace) {
				continue
			}
			a, ok := family(addrs(ref.Name, ref.UID), d.AddressType)
			if !ok {
				continue
			}
			e = *e.DeepCopy()
			e.Addresses = []string{a.String()}
			m.Endpoints = append(m.Endpoints, e)
		}
		out = append(out, m)
	}
	return out
}

// mirrored reports whether d is a default slice of svc that has a mirror.
func mirrored(svc *corev1.Service, d *discoveryv1.EndpointSlice) bool {
	return d.Namespace == svc.Namespace && d.Labels[discoveryv1.LabelServiceName] == svc.Name &&
		d.Labels[discoveryv1.LabelManagedBy] == DefaultManager &&
		(d.AddressType == discoveryv1.AddressTypeIPv4 || d.AddressType == discoveryv1.AddressTypeIPv6)
}

// family returns the first address of addrs of the slice's address type.
func family(addrs []netip.Addr, t discoveryv1.AddressType) (netip.Addr, bool) {
	for _, a := range addrs {
		if a.Is4() == (t == discoveryv1.AddressTypeIPv4) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// Labels returns the labels of a mirrored slice of Service service on network.
func Labels(service, network string) map[string]string {
	return map[string]string{LabelServiceName: service, LabelNetwork: network, discoveryv1.LabelManagedBy: ManagedBy}
}

// maxName is the longest object name (a DNS subdomain).
const maxName = 253

// Name returns the name of the mirror of default slice source on network:
// source's name, cut short enough and trimmed so the result is a valid DNS
// subdomain, then "-" and a hash of both, so every (source, network) pair has
// its own stable name.
func Name(source, network string) string {
	sum := sha256.Sum256([]byte(source + "/" + network))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	prefix := source
	if len(prefix) > maxName-len(suffix) {
		prefix = prefix[:maxName-len(suffix)]
	}
	return strings.TrimRight(prefix, ".-") + suffix
}

// PrimaryAddrs returns a pod's addresses on its namespace's primary network
// (the attachment key is the primary NAD's, podnet.Primary.Key), from its
// k8s.ovn.org/pod-networks annotation: none when the annotation is absent or
// malformed or lacks a primary attachment there.
func PrimaryAddrs(pod *corev1.Pod, key string) []netip.Addr {
	nets, err := podnet.ParsePod(pod)
	if err != nil {
		return nil
	}
	a, ok := nets[key]
	if !ok || a.Role != podnet.RolePrimary {
		return nil
	}
	prefixes, err := a.Prefixes()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, len(prefixes))
	for i, p := range prefixes {
		out[i] = p.Addr()
	}
	return out
}

// upToDate reports whether the stored mirror have already says what want
// does: its labels (others' labels are left alone), owner, address type,
// ports and endpoints.
func UpToDate(have, want *discoveryv1.EndpointSlice) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) &&
		have.AddressType == want.AddressType &&
		equality.Semantic.DeepEqual(have.Ports, want.Ports) &&
		equality.Semantic.DeepEqual(have.Endpoints, want.Endpoints)
}
