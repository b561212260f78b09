package podnet

import (
	"fmt"
	"sort"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations on pods of a namespace with several primary networks
// (OKEP-5252, docs/pods.md "Several primary networks").
const (
	// RequestedPrimaryAnnotation is set by the user when the pod is created:
	// the primary network the pod wants, by the name of its
	// UserDefinedNetwork or ClusterUserDefinedNetwork (the name of the
	// network's NetworkAttachmentDefinition in the namespace is accepted
	// too). It is read until the pod is placed; changing it later has no
	// effect. On a pod of a namespace without a primary user-defined network
	// it is ignored.
	RequestedPrimaryAnnotation = "k8s.ovn.org/requested-primary-udn"
	// PlacementAnnotation records the primary network a pod of a namespace
	// with several was placed on (the name of its NetworkAttachmentDefinition
	// in the namespace). The zone controller of the pod's node writes it with
	// the pod's first attachments, so every other component (cluster-manager,
	// which attaches Layer2 networks, and the node agent) follows one
	// decision; from then on it decides, whatever the request says.
	PlacementAnnotation = "k8s.ovn.org/primary-udn"
)

// Reasons a pod waits for its placement (Event reasons).
const (
	// WaitBadRequestedPrimary: the requested primary network is not a primary
	// network of the pod's namespace.
	WaitBadRequestedPrimary = "InvalidRequestedPrimaryNetwork"
	// WaitPlacementPending: the namespace has several primary networks and
	// the zone controller of the pod's node has not chosen one yet.
	WaitPlacementPending = "PrimaryNetworkPlacementPending"
	// WaitPrimaryNetworksFull: no primary network of the namespace has an
	// address left for the pod (on its node, for Layer3 networks).
	WaitPrimaryNetworksFull = "PrimaryNetworksFull"
	// WaitPlacedNetworkGone: the network the pod was placed on is no longer a
	// primary network of its namespace.
	WaitPlacedNetworkGone = "PlacedPrimaryNetworkGone"
)

// HasRoom tells whether a primary network has an address left for a pod; the
// zone controller answers it for its node (Layer3: the node's slice; Layer2:
// the network's subnets).
type HasRoom func(Primary) bool

// placement is the outcome of choosing a pod's primary network.
type placement struct {
	chosen Primary
	// record is the NAD name to write in PlacementAnnotation ("" when
	// nothing new was decided: a single primary network, or a pod already
	// placed).
	record string
}

// place chooses the primary network of pod among prims (at least one,
// oldest first): the one its attachments already hold, the one recorded in
// PlacementAnnotation, the one it requests, else (room not nil, several
// networks) the first ready network with room. ready tells which NADs are
// allocated.
func place(pod *corev1.Pod, prims []Primary, ready func(Primary) bool, room HasRoom) (placement, error) {
	current, _ := ParsePod(pod)
	for _, p := range prims {
		if _, ok := current[p.Key]; ok {
			return placement{chosen: p}, nil
		}
	}
	if name, ok := pod.Annotations[PlacementAnnotation]; ok && len(prims) > 1 {
		if p, ok := findPrimary(prims, name); ok {
			return placement{chosen: p}, nil
		}
		return placement{}, &Waiting{WaitPlacedNetworkGone, fmt.Sprintf("pod %s/%s was placed on primary network %q, which is not a primary network of the namespace (%s)",
			pod.Namespace, pod.Name, name, primaryNames(prims))}
	}
	if name, ok := pod.Annotations[RequestedPrimaryAnnotation]; ok {
		p, ok := findPrimary(prims, name)
		if !ok {
			return placement{}, &Waiting{WaitBadRequestedPrimary, fmt.Sprintf("%s names %q, which is not a primary network of namespace %s (its primary networks: %s)",
				RequestedPrimaryAnnotation, name, pod.Namespace, primaryNames(prims))}
		}
		return placement{chosen: p, record: recordOf(p, prims)}, nil
	}
	if len(prims) == 1 {
		return placement{chosen: prims[0]}, nil
	}
	if room == nil {
		return placement{}, &Waiting{WaitPlacementPending, fmt.Sprintf("namespace %s has %d primary networks; the zone controller of the pod's node chooses one", pod.Namespace, len(prims))}
	}
	for _, p := range prims {
		if ready(p) && room(p) {
			return placement{chosen: p, record: p.NAD}, nil
		}
	}
	return placement{}, &Waiting{WaitPrimaryNetworksFull, fmt.Sprintf("no primary network of namespace %s has an address left for the pod on node %s (%s)",
		pod.Namespace, pod.Spec.NodeName, primaryNames(prims))}
}

// MayUsePrimary reports whether pod is, or may still be, on the primary
// network whose NAD in the pod's namespace is nadName and whose network
// object is object: not when its placement record, its primary attachment or
// its request names another network. A pod that is none of these yet may
// be placed on any of them.
func MayUsePrimary(pod *corev1.Pod, nadName, object string) bool {
	if name, ok := pod.Annotations[PlacementAnnotation]; ok {
		return name == nadName
	}
	if nets, err := ParsePod(pod); err == nil {
		for k, a := range nets {
			if k != DefaultKey && a.Role == RolePrimary {
				return k == Key(pod.Namespace, nadName)
			}
		}
	}
	if name, ok := pod.Annotations[RequestedPrimaryAnnotation]; ok {
		return name == nadName || name == object
	}
	return true
}

// recordOf is what PlacementAnnotation records for a requested network: its
// NAD name when the namespace has several primary networks.
func recordOf(p Primary, prims []Primary) string {
	if len(prims) > 1 {
		return p.NAD
	}
	return ""
}

// findPrimary finds a primary network by the name of its network object or
// of its NAD.
func findPrimary(prims []Primary, name string) (Primary, bool) {
	for _, p := range prims {
		if p.NAD == name || (p.Object != "" && p.Object == name) {
			return p, true
		}
	}
	return Primary{}, false
}

func primaryNames(prims []Primary) string {
	var names []string
	for _, p := range prims {
		n := p.NAD
		if p.Object != "" && p.Object != p.NAD {
			n = p.Object + " (" + p.NAD + ")"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// objectName is the name of the UserDefinedNetwork or
// ClusterUserDefinedNetwork that controls a NAD ("" for a hand-made NAD).
func objectName(nad *nadv1.NetworkAttachmentDefinition) string {
	if ref := metav1.GetControllerOf(nad); ref != nil && strings.HasPrefix(ref.APIVersion, "k8s.ovn.org/") {
		return ref.Name
	}
	return ""
}

// sortPrimaries orders primary networks oldest NAD first, then by key: the
// order automatic placement tries them in.
func sortPrimaries(out []Primary, nads map[string]*nadv1.NetworkAttachmentDefinition) {
	sort.SliceStable(out, func(i, j int) bool {
		a, b := nads[out[i].Key], nads[out[j].Key]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return out[i].Key < out[j].Key
	})
}
