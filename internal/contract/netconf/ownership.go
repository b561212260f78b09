package netconf

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultNetworkName is the network name of the cluster default network; no
// NAD may claim it.
const DefaultNetworkName = "default"

// Owner kinds of managed NADs (the OwnerKindLabel values).
const (
	KindUDN  = "UserDefinedNetwork"
	KindCUDN = "ClusterUserDefinedNetwork"
)

// apiGroup is the group of the network objects that own managed NADs.
const apiGroup = "k8s.ovn.org"

// Managed reports whether a NAD carries the label of NADs rendered from a
// UserDefinedNetwork or ClusterUserDefinedNetwork.
func Managed(nad *nadv1.NetworkAttachmentDefinition) bool {
	_, ok := nad.Labels[ManagedByLabel]
	return ok
}

// NameOwner is who a network name belongs to: the UserDefinedNetwork
// Namespace/Name or the ClusterUserDefinedNetwork Name (Kind says which), or
// nobody (Kind empty) for a name any NAD may use.
type NameOwner struct {
	Kind, Namespace, Name string
}

func (o NameOwner) String() string {
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return o.Kind + " " + o.Name
}

// OwnerOfName returns who a network name belongs to. Names of the forms
// ovn-udn gives its networks are reserved: "cluster.udn.<cudn>" to that
// ClusterUserDefinedNetwork, "<namespace>.<udn>" to that UserDefinedNetwork
// (namespace names hold no dot, so the first dot splits). Other names belong
// to nobody.
func OwnerOfName(network string) NameOwner {
	if rest, ok := strings.CutPrefix(network, CUDNPrefix); ok && rest != "" {
		return NameOwner{Kind: KindCUDN, Name: rest}
	}
	if ns, name, ok := strings.Cut(network, "."); ok && ns != "" && name != "" {
		return NameOwner{Kind: KindUDN, Namespace: ns, Name: name}
	}
	return NameOwner{}
}

// CheckOwnership says whether nad may define the network its config c names,
// from the NAD alone: the name "default" is never allowed; a name reserved
// for a ClusterUserDefinedNetwork needs a managed NAD whose controller
// reference is that CUDN; a name reserved for a UserDefinedNetwork needs a
// NAD in that namespace, and a managed one must belong to that UDN (one whose
// owner reference was removed by hand still passes there: cluster-manager
// puts it back, and the namespace already binds it to its UDN). Egress is a
// ClusterUserDefinedNetwork's alone (ErrEgressNotAllowed).
func CheckOwnership(nad *nadv1.NetworkAttachmentDefinition, c *NetConf) error {
	if c.Name == DefaultNetworkName {
		return fmt.Errorf("network name %q is reserved for the cluster default network", c.Name)
	}
	owner := OwnerOfName(c.Name)
	if c.Egress != "" && owner.Kind != KindCUDN {
		// The check below then ties the NAD to its CUDN.
		return fmt.Errorf("network %s: %w", c.Name, ErrEgressNotAllowed)
	}
	switch owner.Kind {
	case KindCUDN:
		// A CUDN's NADs live in any namespace: only its controller
		// reference ties one to it (a label alone can be forged).
		if !Managed(nad) || metav1.GetControllerOf(nad) == nil || !controlledBy(nad, owner) {
			return fmt.Errorf("network name %q belongs to %s; only its own NetworkAttachmentDefinitions may use it", c.Name, owner)
		}
	case KindUDN:
		if nad.Namespace != owner.Namespace {
			return fmt.Errorf("network name %q belongs to namespace %s; a NetworkAttachmentDefinition in %s may not use it", c.Name, owner.Namespace, nad.Namespace)
		}
		if Managed(nad) && !controlledBy(nad, owner) {
			return fmt.Errorf("network name %q belongs to %s, not to this NetworkAttachmentDefinition's owner", c.Name, owner)
		}
	}
	return nil
}

// controlledBy reports whether nad's controller reference, if it has one,
// names owner; no controller reference counts as yes (managed NADs only).
func controlledBy(nad *nadv1.NetworkAttachmentDefinition, owner NameOwner) bool {
	ref := metav1.GetControllerOf(nad)
	if ref == nil {
		return true
	}
	group, _, _ := strings.Cut(ref.APIVersion, "/")
	return group == apiGroup && ref.Kind == owner.Kind && ref.Name == owner.Name
}

// ErrEgressNotAllowed refuses egress to a network that is not a
// ClusterUserDefinedNetwork's: only an administrator's network may have a
// way out of its own, which a namespace's EgressFirewall, EgressQoS and
// EgressIP do not cover.
var ErrEgressNotAllowed = errors.New("egress is allowed only on a ClusterUserDefinedNetwork's network; a namespace's own network could route around its EgressFirewall")

// Refused is a NAD left out of its network, and why.
type Refused struct {
	NAD    *nadv1.NetworkAttachmentDefinition
	Reason error
}

// Admit splits the NADs that define one network into those that may
// (admitted) and those that may not: each must pass CheckOwnership, and a
// hand-made NAD is refused while a managed NAD of the same network name
// exists (the UDN's network is its own, whoever named a network that way
// first). NADs whose config is not ovn-udn's, or does not parse, are not
// judged: they are admitted, for the caller to report. Both lists are sorted
// by namespace/name.
func Admit(nads []*nadv1.NetworkAttachmentDefinition) (admitted []*nadv1.NetworkAttachmentDefinition, refused []Refused) {
	managed := map[string]bool{}
	type entry struct {
		nad *nadv1.NetworkAttachmentDefinition
		c   *NetConf
	}
	var ok []entry
	for _, nad := range nads {
		c, err := Parse(nad)
		if err != nil || c == nil {
			admitted = append(admitted, nad) // not judged here: callers report bad configs
			continue
		}
		if err := CheckOwnership(nad, c); err != nil {
			refused = append(refused, Refused{nad, err})
			continue
		}
		if Managed(nad) {
			managed[c.Name] = true
		}
		ok = append(ok, entry{nad, c})
	}
	for _, e := range ok {
		if !Managed(e.nad) && managed[e.c.Name] {
			refused = append(refused, Refused{e.nad, fmt.Errorf("network name %q belongs to %s, which defines it", e.c.Name, OwnerOfName(e.c.Name))})
			continue
		}
		admitted = append(admitted, e.nad)
	}
	byKey := func(a, b *nadv1.NetworkAttachmentDefinition) bool {
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	}
	sort.Slice(admitted, func(i, j int) bool { return byKey(admitted[i], admitted[j]) })
	sort.Slice(refused, func(i, j int) bool { return byKey(refused[i].NAD, refused[j].NAD) })
	return admitted, refused
}
