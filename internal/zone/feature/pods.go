package feature

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// PodDone reports whether a pod holds no addresses of its own: host
// network, or finished.
func PodDone(p *corev1.Pod) bool {
	return p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// AttachmentChanged reports whether a pod update changes its attachments or
// ports (what its own key and its networks render).
func AttachmentChanged(o, n *corev1.Pod) bool {
	for _, k := range []string{podnet.Annotation, netconf.NetworksAnnotation, podnet.PrimaryIPAMClaimAnnotation} {
		if o.Annotations[k] != n.Annotations[k] {
			return true
		}
	}
	return o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase
}

// PodChanges passes pod events that change a pod's attachments or ports, or
// its labels (which policies select it).
var PodChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		return AttachmentChanged(o, n) || !maps.Equal(o.Labels, n.Labels)
	},
}

// AttachmentChanges passes pod events that may change a pod's attachments
// or ports (AttachmentChanged).
var AttachmentChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		return !ok1 || !ok2 || AttachmentChanged(o, n)
	},
}
