// Package podnet defines what a pod's network attachments are: which networks
// a pod is attached to (the default network, its namespace's primary network,
// the secondary networks it asks for), the k8s.ovn.org/pod-networks
// annotation that records each attachment's addresses, MAC, gateways and
// routes for the CNI side, and the logical port names. Everything here is
// pure; cluster-manager, the zone controllers, the node agent and `ovn-udn
// render` share it.
package podnet

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// Annotations on pods.
const (
	// Annotation holds the pod's attachments, by key: "default", and
	// "<namespace>/<nad>" for the others.
	Annotation = "k8s.ovn.org/pod-networks"
	// PrimaryIPAMClaimAnnotation names the IPAMClaim holding the pod's
	// addresses on its namespace's primary network (persistent IPs).
	PrimaryIPAMClaimAnnotation = "k8s.ovn.org/primary-udn-ipamclaim"
)

// DefaultKey is the attachment key of the cluster default network.
const DefaultKey = "default"

// Roles of attachments.
const (
	RolePrimary   = "primary"
	RoleSecondary = "secondary"
	// RoleInfrastructure is the default network of a pod whose namespace has
	// a primary user-defined network: kept for the API server, DNS and probes.
	RoleInfrastructure = "infrastructure-locked"
)

// Route is a route the CNI installs in the pod.
type Route struct {
	Dest    string `json:"dest"`
	NextHop string `json:"nextHop"`
}

// Attachment is one entry of the annotation.
type Attachment struct {
	// IPs are CIDRs: the address with the on-link prefix length.
	IPs      []string `json:"ip_addresses,omitempty"`
	MAC      string   `json:"mac_address"`
	Gateways []string `json:"gateway_ips,omitempty"`
	Routes   []Route  `json:"routes,omitempty"`
	Role     string   `json:"role"`
	// TunnelID is the port's key on a Layer2 network's distributed switch.
	TunnelID int `json:"tunnel_id,omitempty"`
	// VM names the live-migratable VM (package kubevirt) whose attachment
	// this is, on a Layer2 network: its pods share it and one port
	// (VMPortName). cluster-manager decides it at the first allocation, from
	// the pod's KubeVirt labels and annotations; from then on it, not
	// them, decides the port.
	VM string `json:"vm,omitempty"`
}

// Networks is the annotation: attachments by key.
type Networks map[string]Attachment

// Parse reads a pod's annotation (absent: empty).
func Parse(annotations map[string]string) (Networks, error) {
	v := annotations[Annotation]
	out := Networks{}
	if v == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON object of attachments: %w", Annotation, err)
	}
	return out, nil
}

// ParsePod reads a pod's annotation keeping only the attachments a pod can
// legitimately have: the default network's and those of NADs in the pod's
// own namespace (a pod never attaches to another namespace's NAD, see
// netconf.ValidateSelections). A tenant can write its own pods' annotations
// unless an admission policy stops it (config/admission); a forged entry for
// another namespace's network must not give the pod a port, an address or a
// policy peer there.
func ParsePod(pod metav1.Object) (Networks, error) {
	nets, err := Parse(pod.GetAnnotations())
	if err != nil {
		return nil, err
	}
	for k := range nets {
		if k == DefaultKey {
			continue
		}
		if ns, _, ok := strings.Cut(k, "/"); !ok || ns != pod.GetNamespace() {
			delete(nets, k)
		}
	}
	return nets, nil
}

// String renders the annotation value (keys sorted).
func (n Networks) String() string {
	b, _ := json.Marshal(map[string]Attachment(n))
	return string(b)
}

// Prefixes parses an attachment's addresses.
func (a Attachment) Prefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range a.IPs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR", s)
		}
		out = append(out, p)
	}
	return out, nil
}

// Key is the attachment key of a NAD.
func Key(namespace, nad string) string { return namespace + "/" + nad }

// PortName is the logical switch port of a pod's attachment: "<ns>_<pod>" on
// the default network, "<ns>.<nad>_<ns>_<pod>" on others.
func PortName(key, namespace, pod string) string {
	if key == DefaultKey {
		return namespace + "_" + pod
	}
	return strings.Replace(key, "/", ".", 1) + "_" + namespace + "_" + pod
}

// VMPortName is the logical switch port every pod of a live-migratable VM
// shares on a Layer2 network (package kubevirt): "<ns>.<nad>_<ns>_vm_<vm>"
// ("_vm_" cannot be part of a pod's name, so it never names a pod's port).
func VMPortName(key, namespace, vm string) string {
	return strings.Replace(key, "/", ".", 1) + "_" + namespace + "_vm_" + vm
}

// PortNameOf is the logical switch port of a pod's attachment a under key:
// the VM's shared port for an attachment of a VM (Attachment.VM), else
// PortName.
func PortNameOf(key string, pod *corev1.Pod, a Attachment) string {
	if a.VM != "" && key != DefaultKey {
		return VMPortName(key, pod.Namespace, a.VM)
	}
	return PortName(key, pod.Namespace, pod.Name)
}

// VMs returns the VMs a pod's attachments name ("<ns>/<vm>"), sorted and
// once each; none when its annotation does not parse.
func VMs(pod metav1.Object) []string {
	if !strings.Contains(pod.GetAnnotations()[Annotation], `"vm"`) {
		return nil // no attachment names a VM: spare the parse
	}
	nets, err := ParsePod(pod)
	if err != nil {
		return nil
	}
	var out []string
	for k, a := range nets {
		if a.VM != "" && k != DefaultKey {
			out = append(out, pod.GetNamespace()+"/"+a.VM)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Request is one network attachment a pod needs.
type Request struct {
	// Key is the attachment key ("default" or "<ns>/<nad>").
	Key string
	// Network is the network name; Conf its config (nil for the default
	// network).
	Network string
	Conf    *netconf.NetConf
	Role    string
	// Selection is the pod's request for a secondary network.
	Selection *netconf.NetworkSelection
	// Claim names the IPAMClaim holding the attachment's persistent
	// addresses ("" when none).
	Claim string
	// ServiceRoutes are host routes through this attachment's gateway to
	// service cluster IPs: the infrastructure services (API server, DNS) on
	// the default attachment of a pod with a primary user-defined network,
	// whose other service traffic goes through the primary network.
	ServiceRoutes []netip.Prefix
	// DefaultRouteElsewhere are the IP families (true: IPv4) whose default
	// route a secondary network with an egress gateway has (the pod's
	// default-route), on the default attachment: it then routes only the
	// cluster's subnets, join subnet and service CIDRs of those families.
	DefaultRouteElsewhere map[bool]bool
	// NodeAddresses are the pod's node's addresses, routed (host routes)
	// through the default attachment for the DefaultRouteElsewhere
	// families: the secondary network's gateway router holds the node's
	// address, so a pod sending to its own node through it would be
	// answered by the router (ping) and not by the host (TCP, UDP).
	NodeAddresses []netip.Addr
}

// Topology is the request's network topology (the default network is Layer3).
func (r Request) Topology() string {
	if r.Conf == nil {
		return netconf.TopologyLayer3
	}
	return r.Conf.Topology
}

// Waiting is returned when a pod cannot be attached yet, and why; the pod is
// left alone (no annotation) until the reason goes away.
type Waiting struct{ Reason, Message string }

func (w *Waiting) Error() string { return w.Message }

// Reasons a pod waits (Event reasons).
const (
	WaitPrimaryNotReady = "PrimaryNetworkNotReady"
	WaitBadSelection    = "InvalidNetworkSelection"
)

// Requests returns the attachments of pod, given its namespace and the NADs
// of the pod's namespace (by "<ns>/<name>"; NADs of other namespaces are
// ignored): the default network, the primary network the pod is placed on
// (placement.go) and the secondary networks it selects. A pod whose
// namespace is labelled for a primary network that is not ready, or whose
// primary network is not chosen yet or cannot be (PlaceRequests), or whose
// selections are invalid (another namespace's network, one network twice, a bad MAC, IP or
// interface name, a NAD refused by netconf.Admit, a primary network), gets a
// *Waiting.
func Requests(pod *corev1.Pod, ns *corev1.Namespace, nads map[string]*nadv1.NetworkAttachmentDefinition, primaryLabel string) ([]Request, error) {
	reqs, _, err := PlaceRequests(pod, ns, nads, primaryLabel, nil)
	return reqs, err
}

// PlaceRequests is Requests for the component that places pods on one of
// their namespace's several primary networks (the zone controller of the
// pod's node): when the pod is not placed yet, it takes the first primary
// network (oldest first) for which room answers true, and returns its NAD
// name as record, to be written in PlacementAnnotation together with the
// pod's attachments. With room nil, an unplaced pod of such a namespace
// waits (WaitPlacementPending).
func PlaceRequests(pod *corev1.Pod, ns *corev1.Namespace, nads map[string]*nadv1.NetworkAttachmentDefinition, primaryLabel string, room HasRoom) ([]Request, string, error) {
	nads, refused := usable(pod.Namespace, nads)
	prims := primaries(nads)
	_, labelled := ns.Labels[primaryLabel]
	out := []Request{{Key: DefaultKey, Network: "default", Role: RolePrimary}}
	record := ""
	switch {
	case len(prims) == 0 && labelled:
		return nil, "", &Waiting{WaitPrimaryNotReady, fmt.Sprintf("namespace %s is labelled for a primary network, which is not ready yet", ns.Name)}
	case len(prims) > 0:
		pl, err := place(pod, prims, func(p Primary) bool { return ready(nads[p.Key]) }, room)
		if err != nil {
			return nil, "", err
		}
		p := pl.chosen
		if !ready(nads[p.Key]) {
			return nil, "", &Waiting{WaitPrimaryNotReady, fmt.Sprintf("primary network %s is not allocated yet", p.Key)}
		}
		record = pl.record
		out[0].Role = RoleInfrastructure
		r := Request{Key: p.Key, Network: p.Network, Conf: p.Conf, Role: RolePrimary}
		if p.Conf.PersistentIPs {
			r.Claim = pod.Annotations[PrimaryIPAMClaimAnnotation]
		}
		out = append(out, r)
	}
	sels, err := netconf.ParseNetworkSelections(pod.Annotations[netconf.NetworksAnnotation], pod.Namespace)
	if err == nil {
		err = netconf.ValidateSelections(sels, pod.Namespace)
	}
	if err != nil {
		return nil, "", &Waiting{WaitBadSelection, err.Error()}
	}
	for i := range sels {
		s := sels[i]
		if why, ok := refused[s.Key()]; ok {
			return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s cannot be attached: %v", s.Key(), why)}
		}
		nad, ok := nads[s.Key()]
		if !ok {
			return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s does not exist", s.Key())}
		}
		c, err := netconf.Parse(nad)
		if err != nil {
			return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s: %v", s.Key(), err)}
		}
		if c == nil {
			continue // another CNI plugin's network: not ours to attach
		}
		if c.IsPrimary() {
			return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s is a primary network; it cannot be requested as a secondary one", s.Key())}
		}
		if fams := s.DefaultRouteFamilies(); fams != nil {
			switch {
			case !c.HasGateway():
				return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s has no egress gateway (its config's \"egress\": %q): it cannot be the pod's default route (default-route)", s.Key(), netconf.EgressGateway)}
			case len(prims) > 0:
				return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s cannot be the pod's default route (default-route): the namespace's primary network is", s.Key())}
			}
			for is4 := range fams {
				if !slices.ContainsFunc(c.ParsedSubnets(), func(sn netconf.Subnet) bool { return sn.CIDR.Addr().Is4() == is4 }) {
					return nil, "", &Waiting{WaitBadSelection, fmt.Sprintf("network %s has no subnet of the IP family of its default-route %v", s.Key(), s.GatewayRequest)}
				}
			}
			out[0].DefaultRouteElsewhere = fams
		}
		if !ready(nad) {
			return nil, "", &Waiting{WaitPrimaryNotReady, fmt.Sprintf("network %s is not allocated yet", s.Key())}
		}
		r := Request{Key: s.Key(), Network: c.Name, Conf: c, Role: RoleSecondary, Selection: &s}
		if c.PersistentIPs {
			r.Claim = s.IPAMClaimReference
		}
		out = append(out, r)
	}
	if err := overlap(out); err != nil {
		return nil, "", err
	}
	return out, record, nil
}

// usable returns the NADs of namespace ns that may be attached (by key) and,
// by key, why the others of ns may not: a NAD that claims a network name
// belonging to another network object is never attached (netconf.Admit).
// NADs of other namespaces are never usable.
func usable(ns string, nads map[string]*nadv1.NetworkAttachmentDefinition) (map[string]*nadv1.NetworkAttachmentDefinition, map[string]error) {
	var local []*nadv1.NetworkAttachmentDefinition
	for _, nad := range nads {
		if nad.Namespace == ns {
			local = append(local, nad)
		}
	}
	admitted, refused := netconf.Admit(local)
	out := make(map[string]*nadv1.NetworkAttachmentDefinition, len(admitted))
	for _, nad := range admitted {
		out[Key(nad.Namespace, nad.Name)] = nad
	}
	why := make(map[string]error, len(refused))
	for _, r := range refused {
		why[Key(r.NAD.Namespace, r.NAD.Name)] = r.Reason
	}
	return out, why
}

func ready(nad *nadv1.NetworkAttachmentDefinition) bool {
	_, _, ok, err := netconf.ParseAllocation(nad.Annotations)
	return ok && err == nil
}

// NADsFor returns the NADs a pod's attachments may involve, by key: those of
// its namespace (a pod may attach only to networks available there: its
// namespace's own NADs, and those a ClusterUserDefinedNetwork put there).
func NADsFor(ctx context.Context, c client.Reader, pod *corev1.Pod) (map[string]*nadv1.NetworkAttachmentDefinition, error) {
	return NamespaceNADs(ctx, c, pod.Namespace)
}

// NamespaceNADs returns the NADs of namespace ns, by key: what NamespacePrimary
// needs, and what the namespace's pods may attach to.
func NamespaceNADs(ctx context.Context, c client.Reader, ns string) (map[string]*nadv1.NetworkAttachmentDefinition, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]*nadv1.NetworkAttachmentDefinition{}
	for i := range list.Items {
		n := &list.Items[i]
		out[Key(n.Namespace, n.Name)] = n
	}
	return out, nil
}

// Patch writes nets as the pod's annotation, unless it already says that, with
// optimistic concurrency: cluster-manager and the zone controller each write
// their own entries, so a write based on a stale copy must fail and be retried.
func Patch(ctx context.Context, c client.Client, pod *corev1.Pod, nets Networks) (bool, error) {
	return PatchPlaced(ctx, c, pod, nets, "")
}

// PatchPlaced is Patch that also records, when placed is not empty, the
// primary network the pod was placed on (PlacementAnnotation), in the same
// write.
func PatchPlaced(ctx context.Context, c client.Client, pod *corev1.Pod, nets Networks, placed string) (bool, error) {
	current, err := Parse(pod.Annotations)
	if err == nil && current.String() == nets.String() && (placed == "" || pod.Annotations[PlacementAnnotation] == placed) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[Annotation] = nets.String()
	if placed != "" {
		pod.Annotations[PlacementAnnotation] = placed
	}
	if err := c.Patch(ctx, pod, patch); err != nil {
		return false, fmt.Errorf("annotating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// Clone returns a copy of the annotation's entries.
func (n Networks) Clone() Networks {
	out := make(Networks, len(n))
	for k, v := range n {
		out[k] = v
	}
	return out
}

// Primary is a namespace's primary network as services and policies see it.
type Primary struct {
	// Key is the attachment key of the network's NAD in the namespace
	// ("default" for the cluster default network).
	Key string
	// Network is the network name ("default" for the cluster default network).
	Network string
	// Conf is the network's config (nil for the default network).
	Conf *netconf.NetConf
	// NAD is the name of the network's NAD in the namespace, Object the
	// name of the UserDefinedNetwork or ClusterUserDefinedNetwork that
	// controls it ("" for the default network and hand-made NADs).
	NAD, Object string
}

// IsDefault reports whether the primary network is the cluster default network.
func (p Primary) IsDefault() bool { return p.Key == DefaultKey }

// None reports whether the namespace has no network to serve on: it is
// labelled for a primary user-defined network of which no NAD exists (not
// made yet, or deleted).
func (p Primary) None() bool { return p.Key == "" }

// primaries returns the primary networks among usable NADs, oldest NAD
// first, then by key.
func primaries(usableNADs map[string]*nadv1.NetworkAttachmentDefinition) []Primary {
	var out []Primary
	for key, nad := range usableNADs {
		c, err := netconf.Parse(nad)
		if err != nil || c == nil || !c.IsPrimary() {
			continue
		}
		out = append(out, Primary{Key: key, Network: c.Name, Conf: c, NAD: nad.Name, Object: objectName(nad)})
	}
	sortPrimaries(out, usableNADs)
	return out
}

// NamespacePrimary returns the home primary network of namespace ns, given
// the NADs its pods may use (NamespaceNADs): its one admitted primary NAD
// or, of several, the oldest (NamespacePrimaries' first), else the default
// network, or None when the namespace is labelled for a primary network that
// has no NAD (its services have nothing to serve on). A namespace's Services
// belong to its home network (their load balancers' names, node ports). ok
// is false while that cannot be told (no primary NAD allocated yet):
// callers leave what they wrote as it is.
func NamespacePrimary(ns *corev1.Namespace, nads map[string]*nadv1.NetworkAttachmentDefinition, primaryLabel string) (Primary, bool) {
	all, ok := NamespacePrimaries(ns, nads, primaryLabel)
	if !ok {
		return Primary{}, false
	}
	if len(all) == 0 {
		return Primary{}, true
	}
	return all[0], true
}

// NamespacePrimaries returns every primary network of namespace ns that
// pods may be placed on (allocated), oldest first, given the NADs its pods
// may use (NamespaceNADs): the admitted primary NADs of the namespace, else
// the default network, or none when the namespace is labelled for a primary
// network that has no NAD. It is the one place services, EndpointSlice
// mirroring, policies and primary-network links learn a namespace's
// networks. ok is false while the namespace has primary NADs of which none
// is allocated yet: callers leave what they wrote as it is.
func NamespacePrimaries(ns *corev1.Namespace, nads map[string]*nadv1.NetworkAttachmentDefinition, primaryLabel string) ([]Primary, bool) {
	usableNADs, _ := usable(ns.Name, nads)
	found := primaries(usableNADs)
	_, labelled := ns.Labels[primaryLabel]
	switch {
	case len(found) > 0:
		var out []Primary
		for _, p := range found {
			if ready(usableNADs[p.Key]) {
				out = append(out, p)
			}
		}
		return out, len(out) > 0
	case labelled:
		return nil, true
	}
	return []Primary{{Key: DefaultKey, Network: "default"}}, true
}
