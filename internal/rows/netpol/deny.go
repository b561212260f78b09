package netpol

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/ovn-org/libovsdb/model"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// DenyInput is a namespace's policies as one zone sees them.
type DenyInput struct {
	Namespace string
	// Network is the namespace's network.
	Network topology.Network
	// Policies are the namespace's policies.
	Policies []*networkingv1.NetworkPolicy
	// Pods are the namespace's pods on the network in the zone.
	Pods []Pod
	// Management are the node's management-port addresses on the network:
	// what comes from them (kubelet probes) is never dropped.
	Management []netip.Addr
	// Hairpin are the source addresses of a pod's own connections that a
	// Service sent back to it (config.Cluster.ServiceHairpinIPs): a pod is
	// never isolated from itself.
	Hairpin []netip.Addr
	// Keep are the directions whose port groups exist: they stay, empty,
	// when no pod needs them (so a policy replaced by another does not
	// delete and recreate a port group of the same name).
	Keep map[string]bool
	// IDPrefix starts the rows' IDs (see Input.IDPrefix).
	IDPrefix string
}

// Deny returns the rows a namespace owns in the zone: for each direction in
// which some policy selects some of its pods there, a port group of those
// pods whose IP traffic in that direction is dropped (below every policy's
// allows), except ARP and neighbour discovery, traffic with the node's
// management port, and (ingress) a pod's own connections a Service sent back
// to it.
func Deny(in DenyInput) []model.Model {
	type compiled struct {
		sel          labels.Selector
		ingress, egr bool
	}
	pols := make([]compiled, 0, len(in.Policies))
	for _, pol := range in.Policies {
		if pol.Namespace != in.Namespace {
			continue
		}
		i, e := Types(pol)
		pols = append(pols, compiled{sel: selector(&pol.Spec.PodSelector), ingress: i, egr: e})
	}
	var ingress, egress []string
	for _, p := range in.Pods {
		if p.PortUUID == "" || p.Namespace != in.Namespace {
			continue
		}
		var in1, eg1 bool
		for _, pol := range pols {
			if (pol.ingress && !in1 || pol.egr && !eg1) && pol.sel.Matches(labels.Set(p.Labels)) {
				in1, eg1 = in1 || pol.ingress, eg1 || pol.egr
			}
		}
		if in1 {
			ingress = append(ingress, p.PortUUID)
		}
		if eg1 {
			egress = append(egress, p.PortUUID)
		}
	}
	var rows []model.Model
	if len(ingress) > 0 || in.Keep["Ingress"] {
		rows = append(rows, denyRows(in, "Ingress", ingress)...)
	}
	if len(egress) > 0 || in.Keep["Egress"] {
		rows = append(rows, denyRows(in, "Egress", egress)...)
	}
	return rows
}

func denyRows(in DenyInput, dir string, ports []string) []model.Model {
	ports = append([]string{}, ports...)
	sort.Strings(ports)
	name := DenyPortGroupName(in.Network.Name, in.Namespace, dir)
	pg := &nbdb.PortGroup{UUID: in.IDPrefix + "pg:" + dir, Name: name, Ports: ports,
		ExternalIDs: ids(KindDefaultDeny, in.Namespace, in.Network.Name)}
	pg.ExternalIDs[DirectionKey] = dir
	rows := []model.Model{pg}
	port, direction, opts := "outport", nbdb.ACLDirectionToLport, map[string]string(nil)
	if dir == "Egress" {
		port, direction, opts = "inport", nbdb.ACLDirectionFromLport, map[string]string{"apply-after-lb": "true"}
	}
	add := func(id string, prio int, match string, action nbdb.ACLAction) {
		acl := &nbdb.ACL{UUID: in.IDPrefix + "acl:" + dir + ":" + id, Action: action, Priority: prio, Tier: Tier, Direction: direction,
			Match: match, Options: opts, ExternalIDs: ids(KindDefaultDeny, in.Namespace, in.Network.Name)}
		acl.ExternalIDs[DirectionKey] = dir
		name := fmt.Sprintf("%s:%s:%s", in.Namespace, dir, id)
		if len(name) > 63 {
			name = name[:63]
		}
		acl.Name = &name
		rows = append(rows, acl)
		pg.ACLs = append(pg.ACLs, acl.UUID)
	}
	at := port + " == @" + name
	add("drop", DenyPriority, at, nbdb.ACLActionDrop)
	add("arp", AllowPriority, at+" && (arp || nd)", nbdb.ACLActionAllow)
	// Traffic between a pod and its node is always allowed (Kubernetes
	// says so). The allow-related ACLs also make the switch stateful, so
	// replies of connections an isolated pod accepted or opened are
	// recognised as such (a switch without stateful ACLs does no conntrack,
	// and its drops would take them).
	side := "src"
	if dir == "Egress" {
		side = "dst"
	}
	mgmt := append([]netip.Addr(nil), in.Management...)
	sort.Slice(mgmt, func(i, j int) bool { return mgmt[i].Less(mgmt[j]) })
	for _, m := range mgmt {
		fam := "ip4"
		if m.Is6() {
			fam = "ip6"
		}
		add("node-"+fam, AllowPriority, fmt.Sprintf("%s && %s.%s == %s", at, fam, side, m), nbdb.ACLActionAllowRelated)
	}
	if dir == "Ingress" {
		v4, v6 := families(in.Network)
		for _, h := range in.Hairpin {
			fam := "ip4"
			if h.Is6() {
				fam = "ip6"
			}
			if h.Is4() && !v4 || h.Is6() && !v6 {
				continue // not an address of the network's families
			}
			add("hairpin-"+fam, AllowPriority, fmt.Sprintf("%s && %s.src == %s", at, fam, h), nbdb.ACLActionAllowRelated)
		}
	}
	return rows
}

// DenyPortGroupName is the name of a namespace's default-deny port group of
// one direction ("Ingress", "Egress") on a network.
func DenyPortGroupName(network, namespace, dir string) string {
	return "np_" + hash(network+"|"+namespace) + "_" + map[string]string{"Ingress": "ingressDefaultDeny", "Egress": "egressDefaultDeny"}[dir]
}

// PeerRows returns the rows a peer owns on a network: its address set of
// each of the network's IP families, holding addrs of that family.
func PeerRows(n topology.Network, p Peer, addrs []netip.Addr) []model.Model {
	v4, v6 := families(n)
	var rows []model.Model
	for _, fam := range []struct {
		on, v6 bool
	}{{v4, false}, {v6, true}} {
		if !fam.on {
			continue
		}
		set := &nbdb.AddressSet{UUID: "as:" + map[bool]string{false: "v4", true: "v6"}[fam.v6],
			Name: AddressSetName(n.Name, p, fam.v6), Addresses: []string{}, ExternalIDs: ids(KindPeer, p.Key(), n.Name)}
		for _, a := range addrs {
			if a.Is6() == fam.v6 {
				set.Addresses = append(set.Addresses, a.String())
			}
		}
		rows = append(rows, set)
	}
	return rows
}
