package hostisolation

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// Isolated returns the default-network addresses of the pods whose
// default interface only the kubelet may reach: running, not on the host's
// network, with the default attachment locked to infrastructure (their
// namespace has a primary user-defined network).
func Isolated(pods []corev1.Pod) []netip.Addr {
	var out []netip.Addr
	for i := range pods {
		p := &pods[i]
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		nets, err := podnet.ParsePod(p)
		if err != nil {
			continue
		}
		a, ok := nets[podnet.DefaultKey]
		if !ok || a.Role != podnet.RoleInfrastructure {
			continue
		}
		for _, s := range a.IPs {
			if pfx, err := netip.ParsePrefix(s); err == nil {
				out = append(out, pfx.Addr())
			}
		}
	}
	return out
}

// MirrorAnnotation holds a static pod's hash, which the kubelet names its
// cgroup by, on the pod's mirror in the API (whose UID is another).
const MirrorAnnotation = "kubernetes.io/config.mirror"

// CgroupUID is the UID the kubelet names pod's cgroup by: a static pod's
// hash, else the pod's UID.
func CgroupUID(pod *corev1.Pod) string {
	if h := pod.Annotations[MirrorAnnotation]; h != "" {
		return h
	}
	return string(pod.UID)
}

// Namespace is what the table needs to know of a namespace.
type Namespace struct {
	// Confined: the namespace has primary user-defined networks (or is
	// labelled for one that has no NAD yet); its host-network pods are
	// confined to them.
	Confined bool
	// Networks are its primary networks (podnet.NamespacePrimaries).
	Networks []string
	// Home is the network its services belong to (podnet.NamespacePrimary),
	// "" when none.
	Home string
}

// Confine groups the host-network pods of confined namespaces by their
// networks, each group with the ClusterIPs it may reach: those of the
// services whose namespace's home is one of the networks, and those of the
// infrastructure services (infra). cgroupOf finds a pod's cgroup by its
// CgroupUID; a pod whose cgroup is not there yet (or any more) is left out
// and named in waiting, unless it has finished or is being deleted.
func Confine(pods []corev1.Pod, svcs []corev1.Service, namespaces map[string]Namespace, infra func(namespace, name string) bool, cgroupOf func(uid string) (Cgroup, bool)) (out []Confined, waiting []string) {
	groups := map[string]*Confined{}
	for i := range pods {
		p := &pods[i]
		ns := namespaces[p.Namespace]
		if !p.Spec.HostNetwork || !ns.Confined || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		name := p.Namespace + "/" + p.Name
		cg, ok := cgroupOf(CgroupUID(p))
		if !ok {
			if p.DeletionTimestamp == nil { // a pod going away may have lost its cgroup first
				waiting = append(waiting, name)
			}
			continue
		}
		key := strings.Join(slices.Sorted(slices.Values(ns.Networks)), ",")
		g := groups[key]
		if g == nil {
			g = &Confined{Networks: key}
			for j := range svcs {
				s := &svcs[j]
				home := namespaces[s.Namespace].Home
				if !infra(s.Namespace, s.Name) && (home == "" || !slices.Contains(ns.Networks, home)) {
					continue
				}
				for _, ip := range s.Spec.ClusterIPs {
					if a, err := netip.ParseAddr(ip); err == nil {
						g.Allowed = append(g.Allowed, a)
					}
				}
			}
			groups[key] = g
		}
		g.Pods = append(g.Pods, ConfinedPod{Name: name, Cgroup: cg})
	}
	for _, g := range groups {
		slices.SortFunc(g.Pods, func(a, b ConfinedPod) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Confined) int { return strings.Compare(a.Networks, b.Networks) })
	slices.Sort(waiting)
	return out, waiting
}
