// Package kubevirt is KubeVirt's contract with a network plugin, as
// ovn-udn reads it (the one ovn-kubernetes reads, so that the same VMs
// migrate on either): a VM runs in a virt-launcher pod (label
// kubevirt.io=virt-launcher) that names its VM in the kubevirt.io/domain
// annotation (and, up to 63 characters, the vm.kubevirt.io/name label),
// and asks for live migration on a pod network with the
// kubevirt.io/allow-pod-bridge-network-live-migration annotation. A live
// migration is a second virt-launcher pod of the same VM on another node,
// newer than the first; it ends when the source pod completes.
//
// Every pod of a VM has the same attachment on a Layer2 network (address,
// MAC, port tunnel key, and the VM's name, which cluster-manager records
// at the pod's first allocation and which decides from then on) and the
// same logical switch port, which OVN binds
// to the source's chassis and, while a target exists, to the target's as
// an additional chassis that stays blocked until the VM announces itself
// there (activation-strategy=rarp). The zone that sees the activation
// records it on the target pod (ActivatedAnnotation); from then on the
// target is the VM's active pod everywhere. Everything here is pure.
package kubevirt

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// KubeVirt's labels and annotations on virt-launcher pods.
const (
	// AppLabel is on every virt-launcher pod, with value VirtLauncher.
	AppLabel     = "kubevirt.io"
	VirtLauncher = "virt-launcher"
	// VMNameLabel is the VM's name, cut to 63 characters.
	VMNameLabel = "vm.kubevirt.io/name"
	// DomainAnnotation is the VM's name.
	DomainAnnotation = "kubevirt.io/domain"
	// AllowLiveMigrationAnnotation asks for live migration on the pod's
	// network (any value).
	AllowLiveMigrationAnnotation = "kubevirt.io/allow-pod-bridge-network-live-migration"
)

// ActivatedAnnotation is ovn-udn's: the zone of a migration target's node
// writes it on the target pod when OVN saw the VM announce itself there
// (Port_Binding options:additional-chassis-activated). Its value is the
// node.
const ActivatedAnnotation = "k8s.ovn.org/live-migration-activated"

// VMName returns the VM of a live-migratable virt-launcher pod.
func VMName(p *corev1.Pod) (string, bool) {
	if p == nil || p.Labels[AppLabel] != VirtLauncher {
		return "", false
	}
	if _, ok := p.Annotations[AllowLiveMigrationAnnotation]; !ok {
		return "", false
	}
	vm := p.Annotations[DomainAnnotation]
	return vm, vm != ""
}

// Done reports whether a pod no longer runs the VM: completed or failed.
// (Roles also leaves out pods being deleted.)
func Done(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Roles names, among one VM's pods, the active one (whose chassis the
// VM's port is bound to) and the migration target (an additional chassis,
// blocked until the VM announces itself there), either nil. Finished and
// unscheduled pods take no part. The active pod is the newest one
// activated (ActivatedAnnotation), or the oldest when none is; the target
// is the newest pod when it is newer than the active one and on another
// node.
func Roles(pods []*corev1.Pod) (active, target *corev1.Pod) {
	var live []*corev1.Pod
	for _, p := range pods {
		if p != nil && !Done(p) && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return nil, nil
	}
	sort.Slice(live, func(i, j int) bool { return older(live[i], live[j]) })
	active = live[0]
	for _, p := range live {
		if p.Annotations[ActivatedAnnotation] != "" {
			active = p
		}
	}
	newest := live[len(live)-1]
	if newest != active && older(active, newest) && newest.Spec.NodeName != active.Spec.NodeName {
		target = newest
	}
	return active, target
}

// older orders pods by creation, then name. Creation times have a second's
// resolution: a source and a target created in the same second are told
// apart by name only (a migration's target comes long after its source).
func older(a, b *corev1.Pod) bool {
	ta, tb := a.CreationTimestamp, b.CreationTimestamp
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.Name < b.Name
}
