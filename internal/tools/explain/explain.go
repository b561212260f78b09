package explain

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os/exec"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// maxSegments bounds how many zones one trace may cross (source zone,
// destination zone, and some slack for a path through a third).
const maxSegments = 4

// srcPort is the source port of traced TCP and UDP packets.
const srcPort = 40000

// Explainer explains reachability in one cluster.
type Explainer struct {
	// Kube reads pods, nodes and NetworkPolicies.
	Kube client.Reader
	// Zones are the zones' databases by node name.
	Zones map[string]Zone
	// Command runs an OVN program (ovn-trace, ovn-sbctl).
	Command func(program string, args ...string) *exec.Cmd

	open map[string]*zoneReader
}

// Endpoint is one end of the question, as explain resolved it.
type Endpoint struct {
	// Pod is "<namespace>/<name>", empty for an address.
	Pod string
	// Node is the pod's node.
	Node string
	// Network is the network of the pod's attachment (its port's
	// k8s.ovn.org/network), Port its logical switch port.
	Network, Port string
	MAC           string
	Addr          netip.Addr
	// onLink is the attachment's on-link prefix, gateway its gateway, sw
	// the switch its port is on.
	onLink  netip.Prefix
	gateway netip.Addr
	sw      *nbdb.LogicalSwitch
}

// String names the endpoint for people.
func (e Endpoint) String() string {
	if e.Pod == "" {
		return e.Addr.String()
	}
	return fmt.Sprintf("%s (%s on network %s, node %s)", e.Pod, e.Addr, e.Network, e.Node)
}

// Segment is the part of the path traced in one zone.
type Segment struct {
	// Node is the zone's node; Datapath where the packet entered it.
	Node, Datapath string
	Packet         ovntrace.Packet
	Hops           []ovntrace.Hop
	// Notes are the notable stages of each hop (parallel to Hops).
	Notes   [][]string
	Verdict ovntrace.Verdict
	// Backends are those of a load balancer the packet hit, where the
	// trace stops.
	Backends string
}

// Outcome says how a trace ended.
type Outcome string

// Outcomes.
const (
	// Delivered: the packet reached the destination pod (or, for an
	// address, left the logical network somewhere, see Report.Delivered).
	Delivered Outcome = "delivered"
	// Elsewhere: the packet reached ports, but not the destination pod's.
	Elsewhere Outcome = "delivered elsewhere"
	// Dropped: the packet was output nowhere.
	Dropped Outcome = "dropped"
	// LoadBalanced: the packet hit a load balancer (a Service's address):
	// ovn-trace leaves its DNAT out, so the trace stops there and names
	// the backends.
	LoadBalanced Outcome = "load balanced"
)

// Report is the answer.
type Report struct {
	From, To Endpoint
	Protocol string
	Port     int
	Segments []Segment
	Outcome  Outcome
	// Delivered describes each port the packet was output to.
	Delivered []string
	// Reason says why the packet was dropped (Outcome Dropped) or went
	// elsewhere.
	Reason string
	// DroppedBy names what dropped the packet, short: the feature behind
	// the row (as Row.Describe says), or northd's reason.
	DroppedBy string
	// Note says when the destination pod was traced at an address on a
	// network other than the source's.
	Note string
}

// Close closes the zones' connections.
func (e *Explainer) Close() {
	for _, z := range e.open {
		z.close()
	}
	e.open = nil
}

func (e *Explainer) zone(ctx context.Context, node string) (*zoneReader, error) {
	if z, ok := e.open[node]; ok {
		return z, nil
	}
	loc, ok := e.Zones[node]
	if !ok {
		return nil, fmt.Errorf("no zone databases known for node %s (known: %s)", node, strings.Join(slices.Sorted(maps.Keys(e.Zones)), ", "))
	}
	z, err := openZone(ctx, node, loc, e.Command)
	if err != nil {
		return nil, err
	}
	if e.open == nil {
		e.open = map[string]*zoneReader{}
	}
	e.open[node] = z
	return z, nil
}

// Explain traces q and says what happens to the packet.
func (e *Explainer) Explain(ctx context.Context, q Query) (*Report, error) {
	tgt, err := parseTarget(q.To)
	if err != nil {
		return nil, err
	}
	proto, err := protocol(q.Protocol, tgt.port)
	if err != nil {
		return nil, err
	}
	src, err := e.source(ctx, q.From, q.Attachment, tgt.addr)
	if err != nil {
		return nil, err
	}
	dst, err := e.destination(ctx, tgt, src)
	if err != nil {
		return nil, err
	}
	r := &Report{From: src, To: dst, Protocol: proto, Port: tgt.port}

	z, err := e.zone(ctx, src.Node)
	if err != nil {
		return nil, err
	}
	sw := src.sw
	ethDst, err := e.nextHopMAC(ctx, z, sw, src, dst.Addr)
	if err != nil {
		return nil, err
	}
	pkt := ovntrace.Packet{InPort: src.Port, EthSrc: src.MAC, EthDst: ethDst, IPSrc: src.Addr.String(), IPDst: dst.Addr.String(), Proto: proto}
	if proto != "icmp" {
		pkt.SrcPort, pkt.DstPort = srcPort, tgt.port
	}
	datapath := sw.Name
	for i := 0; i < maxSegments; i++ {
		seg, next, err := e.traceIn(ctx, z, datapath, pkt)
		if err != nil {
			return nil, err
		}
		r.Segments = append(r.Segments, *seg)
		if next == nil {
			return r, e.conclude(ctx, r, z)
		}
		if z, err = e.zone(ctx, next.node); err != nil {
			return nil, err
		}
		datapath, pkt = next.datapath, next.packet
	}
	return nil, fmt.Errorf("the packet crossed more than %d zones; the trace stops there", maxSegments)
}

// conclude sets the report's outcome from its last segment.
func (e *Explainer) conclude(ctx context.Context, r *Report, z *zoneReader) error {
	last := r.Segments[len(r.Segments)-1]
	if r.To.Pod != "" && r.To.Network != r.From.Network {
		r.Note = fmt.Sprintf("%s has no attachment on network %s: traced to its address on network %s (reached only when the networks are connected or linked)",
			r.To.Pod, r.From.Network, r.To.Network)
	}
	if last.Backends != "" {
		r.Outcome = LoadBalanced
		r.Reason = fmt.Sprintf("%s is a load balancer's address with backends %s; ovn-trace does not follow its DNAT, so the trace stops here (explain a backend with --to, knowing the path from a VIP may admit what the backend's own address does not)",
			r.To.Addr, last.Backends)
		return nil
	}
	delivered := last.Verdict.Delivered()
	reached := false
	for _, port := range delivered {
		if port == r.To.Port && last.Node == r.To.Node {
			reached = true
		}
		d, err := describePort(ctx, z, port)
		if err != nil {
			return err
		}
		r.Delivered = append(r.Delivered, d)
	}
	switch {
	case len(delivered) == 0:
		r.Outcome = Dropped
		return e.dropReason(ctx, r, z, last)
	case r.To.Pod == "" || reached:
		r.Outcome = Delivered
	default:
		r.Outcome = Elsewhere
		r.Reason = fmt.Sprintf("%s's port %s was not among them", r.To.Pod, r.To.Port)
		if r.Note != "" {
			r.Reason = fmt.Sprintf("%s is the address of %s on network %s; on network %s it is another place", r.To.Addr, r.To.Pod, r.To.Network, r.From.Network)
		}
	}
	return nil
}

// describePort says what an output port is: a pod's port, the way out to a
// physical network, or just its name and type.
func describePort(ctx context.Context, z *zoneReader, name string) (string, error) {
	p, _, err := z.port(ctx, name)
	if err != nil || p == nil {
		return name, err
	}
	if pod := p.ExternalIDs[zone.PodExternalID]; pod != "" {
		return fmt.Sprintf("%s (pod %s on node %s)", name, pod, z.node), nil
	}
	switch p.Type {
	case "localnet":
		return fmt.Sprintf("%s (out of node %s to physical network %s)", name, z.node, p.Options["network_name"]), nil
	case "":
		return fmt.Sprintf("%s (on node %s)", name, z.node), nil
	}
	return fmt.Sprintf("%s (%s port on node %s)", name, p.Type, z.node), nil
}

// dropReason names what dropped the packet in the segment's last hop.
func (e *Explainer) dropReason(ctx context.Context, r *Report, z *zoneReader, seg Segment) error {
	if len(seg.Hops) == 0 {
		r.Reason = "ovn-trace shows no pipeline: the datapath or port is unknown to the zone"
		return nil
	}
	h := seg.Hops[len(seg.Hops)-1]
	s, _ := dropStage(h)
	rows, err := e.rows(ctx, z, []ovntrace.Hop{{Datapath: h.Datapath, Stages: []ovntrace.Stage{s}}})
	if err != nil {
		return err
	}
	where := fmt.Sprintf("in %s of %s (%d. %s, priority %d, match %q)", h.Pipeline, h.Datapath, s.Table, s.Name, s.Priority, s.Match)
	row := rows[h.Datapath+"|"+s.UUID]
	if row == nil || row.Owner() == "" {
		r.DroppedBy = builtinReason(s)
		r.Reason = fmt.Sprintf("%s: %s", r.DroppedBy, where)
		return nil
	}
	r.DroppedBy = row.Describe()
	r.Reason = fmt.Sprintf("by %s: %s, %s", row.Describe(), row.Spelled(), where)
	if strings.HasPrefix(row.Owner(), "npdeny:") {
		selecting, err := e.selectingPolicies(ctx, r, row.ExternalIDs)
		if err != nil {
			return err
		}
		r.Reason += "; " + selecting
	}
	return nil
}

// selectingPolicies names the NetworkPolicies that isolate the pod a
// namespace's default deny dropped the packet for: the destination's
// Ingress policies, or the source's Egress ones.
func (e *Explainer) selectingPolicies(ctx context.Context, r *Report, ids map[string]string) (string, error) {
	dir := ids[netpol.DirectionKey]
	pod := r.To.Pod
	if dir == string(networkingv1.PolicyTypeEgress) {
		pod = r.From.Pod
	}
	if pod == "" {
		return "the destination is isolated by a NetworkPolicy and none admits this packet", nil
	}
	ns, name, _ := splitRef(pod)
	p := &corev1.Pod{}
	if err := e.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		return "", fmt.Errorf("reading pod %s: %w", pod, err)
	}
	var list networkingv1.NetworkPolicyList
	if err := e.Kube.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("listing NetworkPolicies of %s: %w", ns, err)
	}
	names := selecting(list.Items, p, networkingv1.PolicyType(dir))
	if len(names) == 0 {
		return fmt.Sprintf("no %s NetworkPolicy selects %s any more (the deny may be about to go)", dir, pod), nil
	}
	return fmt.Sprintf("%s is isolated for %s by NetworkPolicy %s, and none of them admits this packet", pod, dir, strings.Join(names, ", ")), nil
}

// selecting returns the names of the policies that select pod for
// direction, sorted.
func selecting(policies []networkingv1.NetworkPolicy, pod *corev1.Pod, dir networkingv1.PolicyType) []string {
	var out []string
	for _, np := range policies {
		types := np.Spec.PolicyTypes
		if len(types) == 0 {
			types = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(np.Spec.Egress) > 0 {
				types = append(types, networkingv1.PolicyTypeEgress)
			}
		}
		has := false
		for _, t := range types {
			has = has || t == dir
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if has && err == nil && sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, np.Name)
		}
	}
	sort.Strings(out)
	return out
}
