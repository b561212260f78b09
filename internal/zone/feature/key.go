package feature

import (
	"fmt"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressip"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressqos"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
)

// Kind is the kind of work a reconcile key names.
type Kind uint8

// The kinds of work of a zone. Each owns its rows in the zone's Northbound
// (or, for KindChassis, its Southbound), under the key's String.
const (
	// KindChassis: the other zones' chassis in the zone's Southbound.
	KindChassis Kind = iota + 1
	// KindNetwork: a network's rows (Key.Network).
	KindNetwork
	// KindPod: a pod's ports and their memberships (Namespace, Name).
	KindPod
	// KindService: a Service's load balancers (Namespace, Name).
	KindService
	// KindPolicy: a NetworkPolicy's rows (Namespace, Name).
	KindPolicy
	// KindDeny: a namespace's default-deny port groups (Namespace).
	KindDeny
	// KindPeer: the address set of one policy peer on a network (Network;
	// Name is the peer's netpol.Peer.Key).
	KindPeer
	// KindConnect: a ClusterNetworkConnect's rows (Name).
	KindConnect
	// KindLink: the link between two primary networks of a namespace
	// (Network and Name, the lower first).
	KindLink
	// KindEgressIP: the EgressIP rows of a network (Network).
	KindEgressIP
	// KindEgressFirewall: a namespace's EgressFirewall rows on its
	// networks (Namespace).
	KindEgressFirewall
	// KindEgressQoS: a namespace's EgressQoS rows on its networks
	// (Namespace).
	KindEgressQoS
	// KindVM: a live-migratable VM's ports, shared by its pods
	// (Namespace, Name: the VM's).
	KindVM
)

// Key is a reconcile key of the zone controller: what to reconcile, typed.
// Its String is the OVSDB owner of the rows it writes, which the zone's
// databases keep across restarts, so its spelling never changes.
type Key struct {
	Kind      Kind
	Network   string
	Namespace string
	Name      string
}

// The owner prefixes, as the zone's databases hold them.
const (
	chassisKeyOwner = "chassis"
	networkPrefix   = "net:"
	podPrefix       = "pod:"
	servicePrefix   = "svc:"
	policyPrefix    = "np:"
	denyPrefix      = "npdeny:"
	peerPrefix      = "npas:"
	connectPrefix   = "cnc:"
	linkPrefix      = primarylinks.OwnerPrefix
	egressIPPrefix  = egressip.OwnerPrefix
	firewallPrefix  = egressfirewall.OwnerPrefix
	qosPrefix       = egressqos.OwnerPrefix
	vmPrefix        = "vm:"
)

// ChassisKey is the key of the zone's remote chassis.
func ChassisKey() Key { return Key{Kind: KindChassis} }

// NetworkKey is the key of a network's rows.
func NetworkKey(network string) Key { return Key{Kind: KindNetwork, Network: network} }

// PodKey is the key of a pod's ports.
func PodKey(namespace, name string) Key { return Key{Kind: KindPod, Namespace: namespace, Name: name} }

// ServiceKey is the key of a Service's load balancers.
func ServiceKey(namespace, name string) Key {
	return Key{Kind: KindService, Namespace: namespace, Name: name}
}

// PolicyKey is the key of a NetworkPolicy's rows.
func PolicyKey(namespace, name string) Key {
	return Key{Kind: KindPolicy, Namespace: namespace, Name: name}
}

// DenyKey is the key of a namespace's default-deny port groups.
func DenyKey(namespace string) Key { return Key{Kind: KindDeny, Namespace: namespace} }

// PeerKey is the key of a policy peer's address set on a network.
func PeerKey(network string, p netpol.Peer) Key {
	return Key{Kind: KindPeer, Network: network, Name: p.Key()}
}

// ConnectKey is the key of a ClusterNetworkConnect's rows.
func ConnectKey(name string) Key { return Key{Kind: KindConnect, Name: name} }

// LinkKey is the key of the link between primary networks a and b (in
// either order).
func LinkKey(a, b string) Key {
	if b < a {
		a, b = b, a
	}
	return Key{Kind: KindLink, Network: a, Name: b}
}

// EgressIPKey is the key of a network's EgressIP rows.
func EgressIPKey(network string) Key { return Key{Kind: KindEgressIP, Network: network} }

// EgressFirewallKey is the key of a namespace's EgressFirewall rows.
func EgressFirewallKey(namespace string) Key {
	return Key{Kind: KindEgressFirewall, Namespace: namespace}
}

// EgressQoSKey is the key of a namespace's EgressQoS rows.
func EgressQoSKey(namespace string) Key { return Key{Kind: KindEgressQoS, Namespace: namespace} }

// VMKey is the key of a live-migratable VM's ports.
func VMKey(namespace, name string) Key { return Key{Kind: KindVM, Namespace: namespace, Name: name} }

// String is the key's OVSDB owner.
func (k Key) String() string {
	switch k.Kind {
	case KindChassis:
		return chassisKeyOwner
	case KindNetwork:
		return networkPrefix + k.Network
	case KindPod:
		return podPrefix + k.Namespace + "/" + k.Name
	case KindService:
		return servicePrefix + k.Namespace + "/" + k.Name
	case KindPolicy:
		return policyPrefix + k.Namespace + "/" + k.Name
	case KindDeny:
		return denyPrefix + k.Namespace
	case KindPeer:
		return peerPrefix + k.Network + "|" + k.Name
	case KindConnect:
		return connectPrefix + k.Name
	case KindLink:
		return primarylinks.Owner(k.Network, k.Name)
	case KindEgressIP:
		return egressip.Owner(k.Network)
	case KindEgressFirewall:
		return egressfirewall.Owner(k.Namespace)
	case KindEgressQoS:
		return egressqos.Owner(k.Namespace)
	case KindVM:
		return vmPrefix + k.Namespace + "/" + k.Name
	}
	return fmt.Sprintf("unknown-kind-%d:%s/%s/%s", k.Kind, k.Network, k.Namespace, k.Name)
}

// CompareKeys orders keys by their strings (for sorted output).
func CompareKeys(a, b Key) int { return strings.Compare(a.String(), b.String()) }

// Prefix is how the owners of the kind's keys begin ("net:"); the chassis'
// one owner is the whole prefix.
func (k Kind) Prefix() string {
	switch k {
	case KindChassis:
		return chassisKeyOwner
	case KindNetwork:
		return networkPrefix
	case KindPod:
		return podPrefix
	case KindService:
		return servicePrefix
	case KindPolicy:
		return policyPrefix
	case KindDeny:
		return denyPrefix
	case KindPeer:
		return peerPrefix
	case KindConnect:
		return connectPrefix
	case KindLink:
		return linkPrefix
	case KindEgressIP:
		return egressIPPrefix
	case KindEgressFirewall:
		return firewallPrefix
	case KindEgressQoS:
		return qosPrefix
	case KindVM:
		return vmPrefix
	}
	return fmt.Sprintf("unknown-kind-%d:", k)
}

// ParseKey reads a key back from its OVSDB owner (String); ok is false for
// an owner the zone controller does not write.
func ParseKey(owner string) (Key, bool) {
	if owner == chassisKeyOwner {
		return ChassisKey(), true
	}
	nsName := func(s string) (string, string, bool) {
		ns, name, ok := strings.Cut(s, "/")
		return ns, name, ok && ns != "" && name != ""
	}
	switch {
	case strings.HasPrefix(owner, egressIPPrefix):
		n := strings.TrimPrefix(owner, egressIPPrefix)
		return EgressIPKey(n), n != ""
	case strings.HasPrefix(owner, firewallPrefix):
		ns := strings.TrimPrefix(owner, firewallPrefix)
		return EgressFirewallKey(ns), ns != ""
	case strings.HasPrefix(owner, qosPrefix):
		ns := strings.TrimPrefix(owner, qosPrefix)
		return EgressQoSKey(ns), ns != ""
	case strings.HasPrefix(owner, networkPrefix):
		return NetworkKey(strings.TrimPrefix(owner, networkPrefix)), true
	case strings.HasPrefix(owner, vmPrefix):
		ns, name, ok := nsName(strings.TrimPrefix(owner, vmPrefix))
		return VMKey(ns, name), ok
	case strings.HasPrefix(owner, podPrefix):
		ns, name, ok := nsName(strings.TrimPrefix(owner, podPrefix))
		return PodKey(ns, name), ok
	case strings.HasPrefix(owner, servicePrefix):
		ns, name, ok := nsName(strings.TrimPrefix(owner, servicePrefix))
		return ServiceKey(ns, name), ok
	case strings.HasPrefix(owner, policyPrefix):
		ns, name, ok := nsName(strings.TrimPrefix(owner, policyPrefix))
		return PolicyKey(ns, name), ok
	case strings.HasPrefix(owner, denyPrefix):
		return DenyKey(strings.TrimPrefix(owner, denyPrefix)), true
	case strings.HasPrefix(owner, peerPrefix):
		network, peer, ok := strings.Cut(strings.TrimPrefix(owner, peerPrefix), "|")
		return Key{Kind: KindPeer, Network: network, Name: peer}, ok
	case strings.HasPrefix(owner, connectPrefix):
		return ConnectKey(strings.TrimPrefix(owner, connectPrefix)), true
	case strings.HasPrefix(owner, linkPrefix):
		a, b, ok := primarylinks.ParseOwner(owner)
		return LinkKey(a, b), ok
	}
	return Key{}, false
}
