package udncontroller

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udn"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// A namespace may have several primary networks (OKEP-5252) when they fit
// together: all UserDefinedNetworks or all ClusterUserDefinedNetworks (never
// both), ClusterUserDefinedNetworks with the same namespaceSelector, and no
// two with overlapping subnets. Layer2 and Layer3 may be mixed. Networks are
// judged in order of precedence (claimant.before): each against those
// before it that were admitted, so a network that does not fit never blocks
// a later one that does, and the first keeps working whatever comes after.

// claimant is a network that wants to be a primary network of a namespace.
type claimant struct {
	kind, name string
	uid        types.UID
	created    metav1.Time
	nad        *nadv1.NetworkAttachmentDefinition // its NAD in the namespace, if any
	subnets    []netip.Prefix
	selector   *metav1.LabelSelector // a ClusterUserDefinedNetwork's namespaceSelector
	foreign    bool                  // a hand-made primary NAD: nothing may join it
}

func (c claimant) String() string {
	if c.kind == "" {
		return fmt.Sprintf("NetworkAttachmentDefinition %s/%s", c.nad.Namespace, c.nad.Name)
	}
	return c.kind + " " + c.name
}

// before orders claimants: hand-made NADs first, then those that already
// have their NAD (oldest NAD first), then by the network object's age, then
// by kind and name.
func (c claimant) before(o claimant) bool {
	if c.foreign != o.foreign {
		return c.foreign
	}
	if (c.nad != nil) != (o.nad != nil) {
		return c.nad != nil
	}
	if c.nad != nil && !c.nad.CreationTimestamp.Equal(&o.nad.CreationTimestamp) {
		return c.nad.CreationTimestamp.Before(&o.nad.CreationTimestamp)
	}
	if !c.created.Equal(&o.created) {
		return c.created.Before(&o.created)
	}
	if c.kind != o.kind {
		return c.kind < o.kind
	}
	return c.name < o.name
}

// verdict is whether a claimant may be a primary network of the namespace.
type verdict struct {
	// reason and message are empty when it may.
	reason, message string
	// additional is true when an earlier admitted primary network exists:
	// the namespace's pods are then no reason to refuse this one.
	additional bool
}

// judgePrimaries decides every claimant of namespace ns, by UID.
func judgePrimaries(ns string, claims []claimant) map[types.UID]verdict {
	claims = append([]claimant(nil), claims...)
	sort.SliceStable(claims, func(i, j int) bool { return claims[i].before(claims[j]) })
	out := map[types.UID]verdict{}
	var admitted []claimant
	for _, c := range claims {
		v := verdict{additional: len(admitted) > 0}
		for _, a := range admitted {
			if v.reason, v.message = conflict(ns, a, c); v.reason != "" {
				break
			}
		}
		if v.reason == "" {
			admitted = append(admitted, c)
		}
		if c.uid != "" {
			out[c.uid] = v
		}
	}
	return out
}

// conflict says why c may not be a primary network of ns beside the
// admitted a.
func conflict(ns string, a, c claimant) (reason, message string) {
	switch {
	case a.foreign:
		return v1.ReasonPrimaryConflict, fmt.Sprintf("namespace %s already has a primary network defined by hand: %s", ns, a)
	case a.kind != c.kind:
		return v1.ReasonPrimaryConflict, fmt.Sprintf("namespace %s already has a primary network: %s; a namespace's primary networks are either all UserDefinedNetworks or all ClusterUserDefinedNetworks", ns, a)
	case a.kind == netconf.KindCUDN && !equality.Semantic.DeepEqual(a.selector, c.selector):
		return v1.ReasonPrimarySelectorMismatch, fmt.Sprintf("namespace %s already has a primary network: %s, whose namespaceSelector differs; an additional primary ClusterUserDefinedNetwork must have the same namespaceSelector", ns, a)
	}
	var overlaps []string
	for _, p := range c.subnets {
		for _, q := range a.subnets {
			if p.Overlaps(q) {
				overlaps = append(overlaps, p.String()+" overlaps "+q.String())
			}
		}
	}
	if len(overlaps) > 0 {
		return v1.ReasonPrimarySubnetOverlap, fmt.Sprintf("namespace %s already has a primary network whose subnets overlap: %s (%s)", ns, a, strings.Join(overlaps, ", "))
	}
	return "", ""
}

// primaryVerdict judges owner among the networks claiming to be primary in
// ns: the namespace's primary NADs (a hand-made one admits no other), its
// primary UserDefinedNetworks and the primary ClusterUserDefinedNetworks
// selecting it.
func (r *Controller) primaryVerdict(ctx context.Context, ns *corev1.Namespace, owner udn.Owner) (verdict, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.InNamespace(ns.Name)); err != nil {
		return verdict{}, err
	}
	var claims []claimant
	nadOf := map[types.UID]*nadv1.NetworkAttachmentDefinition{}
	for i := range nads.Items {
		n := &nads.Items[i]
		c, err := netconf.Parse(n)
		if err != nil || c == nil || !c.IsPrimary() {
			continue
		}
		if ref := metav1.GetControllerOf(n); ref != nil && ref.APIVersion == v1.GroupVersion.String() {
			nadOf[ref.UID] = n
			continue
		}
		if ownedBy(n, owner) && n.Name == ownerNADName(owner) {
			nadOf[owner.UID] = n // its owner reference is about to be put back
			continue
		}
		if netconf.Managed(n) {
			continue // another network's NAD whose owner reference is being put back
		}
		claims = append(claims, claimant{nad: n, created: n.CreationTimestamp, foreign: true})
	}

	var udns v1.UserDefinedNetworkList
	if err := r.Client.List(ctx, &udns, client.InNamespace(ns.Name)); err != nil {
		return verdict{}, err
	}
	for _, u := range udns.Items {
		if u.Spec.Flat().Role == v1.Primary && (u.DeletionTimestamp == nil || nadOf[u.UID] != nil) {
			claims = append(claims, claimant{kind: netconf.KindUDN, name: u.Namespace + "/" + u.Name, uid: u.UID, created: u.CreationTimestamp,
				nad: nadOf[u.UID], subnets: udn.SubnetPrefixes(u.Spec.Flat())})
		}
	}
	var cudns v1.ClusterUserDefinedNetworkList
	if err := r.Client.List(ctx, &cudns); err != nil {
		return verdict{}, err
	}
	for i := range cudns.Items {
		c := &cudns.Items[i]
		if c.Spec.FlatTemplate().Role != v1.Primary {
			continue
		}
		if (selects(c, ns.Labels) && c.DeletionTimestamp == nil) || nadOf[c.UID] != nil {
			claims = append(claims, claimant{kind: netconf.KindCUDN, name: c.Name, uid: c.UID, created: c.CreationTimestamp,
				nad: nadOf[c.UID], subnets: udn.SubnetPrefixes(c.Spec.FlatTemplate()), selector: &c.Spec.NamespaceSelector})
		}
	}
	return judgePrimaries(ns.Name, claims)[owner.UID], nil
}
