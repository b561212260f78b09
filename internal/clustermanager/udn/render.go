// Package udn translates UserDefinedNetworks and ClusterUserDefinedNetworks into
// the NetworkAttachmentDefinitions the rest of ovn-udn consumes, and makes the
// checks the API server cannot make (overlaps with the cluster's reserved
// subnets). Everything here is a pure function of its inputs; the controllers in
// internal/clustermanager/udncontroller and `ovn-udn render` both call it.
package udn

import (
	"fmt"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Owner identifies the network object a NAD is rendered from.
type Owner struct {
	Kind string // "UserDefinedNetwork" or "ClusterUserDefinedNetwork"
	Name string
	UID  types.UID
}

// Request is everything needed to render one NAD.
type Request struct {
	Owner Owner
	Spec  v1.UserDefinedNetworkSpec
	// NetworkName is "<ns>.<udn>" or "cluster.udn.<cudn>".
	NetworkName string
	// Namespace and Name of the NAD.
	Namespace, Name string
	// VRF is set for ClusterUserDefinedNetworks.
	VRF string
	// NetworkID is the network's allocated ID, recorded as an annotation.
	NetworkID int
	// TunnelKeys are the network's extra tunnel keys, recorded as an annotation.
	TunnelKeys []int
}

// ForUDN returns the request for a UserDefinedNetwork.
func ForUDN(u *v1.UserDefinedNetwork) Request {
	return Request{
		Owner:       Owner{Kind: netconf.KindUDN, Name: u.Name, UID: u.UID},
		Spec:        u.Spec.Flat(),
		NetworkName: netconf.UDNNetworkName(u.Namespace, u.Name),
		Namespace:   u.Namespace,
		Name:        u.Name,
	}
}

// ForCUDN returns the request for a ClusterUserDefinedNetwork in one namespace.
func ForCUDN(c *v1.ClusterUserDefinedNetwork, namespace, vrf string) Request {
	return Request{
		Owner:       Owner{Kind: netconf.KindCUDN, Name: c.Name, UID: c.UID},
		Spec:        c.Spec.FlatTemplate(),
		NetworkName: netconf.CUDNNetworkName(c.Name),
		Namespace:   namespace,
		Name:        netconf.CUDNNetworkName(c.Name),
		VRF:         vrf,
	}
}

// VRFName is the VRF of a ClusterUserDefinedNetwork: spec.vrf, else its name
// when shorter than 16 characters, else udn-<network ID>-vrf.
func VRFName(c *v1.ClusterUserDefinedNetwork, networkID int) string {
	switch {
	case c.Spec.VRF != "":
		return c.Spec.VRF
	case len(c.Name) < 16:
		return c.Name
	default:
		return fmt.Sprintf("udn-%d-vrf", networkID)
	}
}

// Config renders the CNI configuration of a network. It fails (with a
// *ConditionError) when the spec overlaps a reserved subnet.
func Config(req Request, cfg config.Cluster) (*netconf.NetConf, error) {
	s := req.Spec
	if err := CheckSubnets(s, cfg); err != nil {
		return nil, err
	}
	if s.Egress != "" && req.Owner.Kind != netconf.KindCUDN {
		// The API server refuses it since egress became the
		// administrator's; a UDN created before that still has it.
		return nil, &ConditionError{Reason: v1.ReasonEgressNotAllowed,
			Message: "egress is allowed only in a ClusterUserDefinedNetwork: a namespace's own network could route around its EgressFirewall"}
	}
	c := &netconf.NetConf{
		CNIVersion: netconf.CNIVersion,
		Name:       req.NetworkName,
		Type:       netconf.CNIType,
		Topology:   strings.ToLower(string(s.Topology)),
		Role:       strings.ToLower(string(s.Role)),
		Subnets:    joinStrings(s.Subnets),
		MTU:        int(s.MTU),
		NADName:    req.Namespace + "/" + req.Name,
		VRF:        req.VRF,
	}
	if c.MTU == 0 {
		c.MTU = cfg.MTU
	}
	c.ExcludeSubnets = excludeList(s.ExcludeSubnets)
	if s.IPAM != nil && s.IPAM.Lifecycle == v1.IPAMLifecyclePersistent {
		c.PersistentIPs = true
	}
	if s.Localnet != nil {
		c.PhysicalNetworkName = s.Localnet.PhysicalNetworkName
		c.VLANID = int(s.Localnet.VLANID)
	}
	if s.Topology == v1.Localnet && c.PhysicalNetworkName == "" {
		c.PhysicalNetworkName = req.NetworkName
	}
	if s.Egress == v1.EgressGateway {
		c.Egress = netconf.EgressGateway
	}
	// A secondary network's gateway takes the default join subnets
	// (topology.FromNetConf): they are not written in its NAD, whose
	// join subnets pods' attachments are checked against for overlap.
	if s.Role == v1.Primary || s.Egress == v1.EgressGateway {
		join := JoinSubnets(s, cfg)
		if s.Role == v1.Primary {
			c.JoinSubnet = netconf.JoinList(join)
		}
		if s.Topology == v1.Layer2 {
			transit, err := TransitSubnets(SubnetPrefixes(s), join, cfg)
			if err != nil {
				return nil, err
			}
			if transit != nil {
				c.TransitSubnet = netconf.JoinList(transit)
			}
		}
	}
	return c, nil
}

// NAD renders the NetworkAttachmentDefinition for req: its config, the
// protection finalizer, a controller owner reference to the network object,
// labels, and the allocation annotations.
func NAD(req Request, cfg config.Cluster) (*nadv1.NetworkAttachmentDefinition, error) {
	c, err := Config(req, cfg)
	if err != nil {
		return nil, err
	}
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{
			Name:       req.Name,
			Namespace:  req.Namespace,
			Finalizers: []string{v1.NetworkProtectionFinalizer},
			Labels: map[string]string{
				netconf.ManagedByLabel: "",
				netconf.OwnerKindLabel: req.Owner.Kind,
			},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(req.Owner)},
			Annotations:     netconf.AllocationAnnotations(req.NetworkID, req.TunnelKeys),
		},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: c.Marshal()},
	}
	return nad, nil
}

// OwnerReference is the controller reference from a NAD to its network object.
func OwnerReference(o Owner) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion:         v1.GroupVersion.String(),
		Kind:               o.Kind,
		Name:               o.Name,
		UID:                o.UID,
		Controller:         &t,
		BlockOwnerDeletion: &t,
	}
}

// JoinSubnets returns a primary network's join subnets: its own, or the
// cluster's UDN defaults for the IP families of its subnets.
func JoinSubnets(s v1.UserDefinedNetworkSpec, cfg config.Cluster) []netip.Prefix {
	if len(s.JoinSubnets) > 0 {
		out := make([]netip.Prefix, 0, len(s.JoinSubnets))
		for _, j := range s.JoinSubnets {
			if p, err := netip.ParsePrefix(string(j)); err == nil {
				out = append(out, p)
			}
		}
		return out
	}
	var out []netip.Prefix
	for _, fam := range families(SubnetPrefixes(s)) {
		for _, d := range cfg.UDNJoinSubnets {
			if d.Addr().Is4() == (fam == 4) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// TransitSubnets returns the transit subnets a Layer2 primary network must use
// instead of the cluster's default ones (one per IP family of the network), or
// nil when the defaults do not overlap its subnets or join subnets. The choice is deterministic: the first
// free /16 (IPv4) or /64 (IPv6) after the default, searched through
// 100.64.0.0/10 and fd97::/48 respectively.
func TransitSubnets(subnets, join []netip.Prefix, cfg config.Cluster) ([]netip.Prefix, error) {
	used := append(append([]netip.Prefix{}, subnets...), join...)
	for _, r := range cfg.Reserved() {
		used = append(used, r.Prefix)
	}
	conflict := false
	for _, t := range cfg.TransitSubnets {
		if overlapsAny(t, subnets) || overlapsAny(t, join) {
			conflict = true
		}
	}
	if !conflict {
		return nil, nil
	}
	fams := map[int]bool{}
	for _, f := range families(subnets) {
		fams[f] = true
	}
	var out []netip.Prefix
	for _, t := range cfg.TransitSubnets {
		if !fams[families([]netip.Prefix{t})[0]] {
			continue // the network does not use this family
		}
		p, ok := firstFree(t, used)
		if !ok {
			return nil, &ConditionError{Reason: v1.ReasonSubnetOverlap,
				Message: fmt.Sprintf("no free transit subnet: the network's subnets overlap the transit subnet %s and every alternative", t)}
		}
		out = append(out, p)
	}
	return out, nil
}

// firstFree walks prefixes of def's size after def inside its search space,
// wrapping around, and returns the first one that overlaps nothing in used.
func firstFree(def netip.Prefix, used []netip.Prefix) (netip.Prefix, bool) {
	space := netip.MustParsePrefix("100.64.0.0/10")
	if def.Addr().Is6() {
		space = netip.PrefixFrom(def.Addr(), 48).Masked()
	}
	if !space.Contains(def.Addr()) || def.Bits() < space.Bits() {
		space = def
	}
	p := def
	for i := 0; i < 1<<12; i++ {
		if !overlapsAny(p, used) {
			return p, true
		}
		p = nextPrefix(p)
		if !space.Contains(p.Addr()) {
			p = netip.PrefixFrom(space.Addr(), def.Bits())
		}
		if p == def {
			break
		}
	}
	return netip.Prefix{}, false
}

// nextPrefix returns the prefix of the same length right after p.
func nextPrefix(p netip.Prefix) netip.Prefix {
	b := p.Addr().AsSlice()
	bit := p.Bits() - 1
	for i := bit / 8; i >= 0; i-- {
		inc := byte(1)
		if i == bit/8 {
			inc = byte(1) << (7 - uint(bit%8))
		}
		old := b[i]
		b[i] += inc
		if b[i] > old {
			break
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, p.Bits())
}

// TransitNote explains, for status messages, a transit subnet chosen because
// the defaults overlap the network; it is empty when the defaults are used.
func TransitNote(c *netconf.NetConf, cfg config.Cluster) string {
	if c == nil || c.TransitSubnet == "" {
		return ""
	}
	return fmt.Sprintf("transit subnet %s is used because the default transit subnet %s overlaps the network",
		c.TransitSubnet, netconf.JoinList(cfg.TransitSubnets))
}

// ConditionError is a failure the controller reports as a condition reason.
type ConditionError struct {
	Reason  string
	Message string
}

func (e *ConditionError) Error() string { return e.Message }

// CheckSubnets makes the subnet checks the API server cannot: the network's
// subnets and join subnets must not overlap the cluster's reserved subnets, and
// its join subnets must not overlap its own subnets.
func CheckSubnets(s v1.UserDefinedNetworkSpec, cfg config.Cluster) error {
	subnets := SubnetPrefixes(s)
	var problems []string
	for _, sn := range subnets {
		for _, r := range cfg.Reserved() {
			if sn.Overlaps(r.Prefix) {
				problems = append(problems, fmt.Sprintf("subnet %s overlaps the %s %s", sn, r.Name, r.Prefix))
			}
		}
	}
	if s.Role == v1.Primary {
		for _, j := range JoinSubnets(s, cfg) {
			for _, r := range cfg.Reserved() {
				if j.Overlaps(r.Prefix) {
					problems = append(problems, fmt.Sprintf("join subnet %s overlaps the %s %s", j, r.Name, r.Prefix))
				}
			}
			for _, sn := range subnets {
				if j.Overlaps(sn) {
					problems = append(problems, fmt.Sprintf("join subnet %s overlaps the network's subnet %s", j, sn))
				}
			}
		}
	}
	if len(problems) > 0 {
		return &ConditionError{Reason: v1.ReasonSubnetOverlap, Message: strings.Join(problems, "; ")}
	}
	return nil
}

// SubnetPrefixes returns the CIDRs of a spec's subnets (host prefixes dropped).
func SubnetPrefixes(s v1.UserDefinedNetworkSpec) []netip.Prefix {
	var out []netip.Prefix
	for _, sn := range s.Subnets {
		parsed, err := netconf.ParseSubnet(string(sn), true)
		if err == nil {
			out = append(out, parsed.CIDR)
		}
	}
	return out
}

func families(ps []netip.Prefix) []int {
	var out []int
	for _, p := range ps {
		f := 6
		if p.Addr().Is4() {
			f = 4
		}
		out = append(out, f)
	}
	return out
}

func overlapsAny(p netip.Prefix, list []netip.Prefix) bool {
	for _, q := range list {
		if p.Overlaps(q) {
			return true
		}
	}
	return false
}

// excludeList renders excludeSubnets for the config: each entry as its masked
// network (the API accepts host bits there, 10.0.0.100/26 meaning
// 10.0.0.64/26, and the config's readers want network addresses).
func excludeList(items []v1.ExcludeCIDR) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = string(it)
		if p, err := netip.ParsePrefix(string(it)); err == nil {
			out[i] = p.Masked().String()
		}
	}
	return strings.Join(out, ",")
}

func joinStrings[T ~string](items []T) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = string(it)
	}
	return strings.Join(s, ",")
}
