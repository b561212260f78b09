package zone

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
	"github.com/ovn-udn/ovn-udn/internal/zone/podaddr"
)

// podKeysIndex is the index of the manager's cache listing pods by their
// attachment keys.
const podKeysIndex = "k8s.ovn.org/pod-networks.keys"

// usableLocalNode is localNode, with a *feature.NotRendered error while the zone's
// node exists but is not usable yet (its annotations incomplete): rows that
// need it stay as they are rather than go.
func (r *Reconciler) usableLocalNode(ctx context.Context) (nodeinfo.Info, bool, error) {
	local, ok, err := r.localNode(ctx)
	if err != nil || ok {
		return local, ok, err
	}
	nodes, bad, err := r.nodes.nodes(ctx, r.Client)
	if err != nil {
		return nodeinfo.Info{}, false, err
	}
	if r.hasLocalNode(nodes, bad) {
		return nodeinfo.Info{}, false, &feature.NotRendered{Reason: "the zone's node is not ready"}
	}
	return nodeinfo.Info{}, false, nil
}

// localNode returns the zone's node.
func (r *Reconciler) localNode(ctx context.Context) (nodeinfo.Info, bool, error) {
	nodes, _, err := r.nodes.nodes(ctx, r.Client)
	if err != nil {
		return nodeinfo.Info{}, false, err
	}
	n, ok := r.localIn(nodes)
	return n, ok, nil
}

// localIn is localNode among nodes (a list of them just read).
func (r *Reconciler) localIn(nodes []nodeinfo.Info) (nodeinfo.Info, bool) {
	for _, n := range nodes {
		if n.Zone == r.Zone {
			if p := r.localName.Load(); p == nil || *p != n.Name {
				name := n.Name
				r.localName.Store(&name)
			}
			return n, true
		}
	}
	return nodeinfo.Info{}, false
}

// recoverPods rebuilds the node's Layer3 allocations from the annotations of
// the pods on the node, once, before anything is allocated.
func (r *Reconciler) recoverPods(ctx context.Context, local nodeinfo.Info) error {
	m := &r.ipam
	if m.Recovered() {
		return nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.MatchingFields{feature.PodNodeIndex: local.Name}); err != nil {
		return err
	}
	// Oldest first: when two annotations claim one address (one of them
	// edited by hand), the pod that had it first keeps it.
	kubeobj.SortOldestFirst(pods.Items)
	logger := log.FromContext(ctx)
	for _, p := range pods.Items {
		if feature.PodDone(&p) {
			continue
		}
		nets, err := podnet.ParsePod(&p)
		if err != nil {
			continue
		}
		for key, a := range nets {
			network, exclude, ok := r.layer3Network(ctx, key)
			if !ok || len(local.Subnets[network]) == 0 {
				continue
			}
			pools, err := m.Pools(network, local.Subnets[network], exclude)
			if err != nil {
				continue
			}
			addrs, _ := a.Prefixes()
			for _, err := range podaddr.Recover(pools, p.Namespace+"/"+p.Name, addrs) {
				logger.Error(err, "pod address not recovered; the pod will get another", "pod", p.Namespace+"/"+p.Name)
			}
		}
	}
	m.MarkRecovered()
	return nil
}

// layer3Network maps an attachment key to its network when that network is
// Layer3 (the default network, or a Layer3 NAD), with its exclusions.
func (r *Reconciler) layer3Network(ctx context.Context, key string) (string, []netip.Prefix, bool) {
	if key == podnet.DefaultKey {
		return nodeinfo.DefaultNetwork, nil, true
	}
	ns, name, _ := strings.Cut(key, "/")
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		return "", nil, false
	}
	c, err := netconf.Parse(nad)
	if err != nil || c == nil || c.Topology != netconf.TopologyLayer3 {
		return "", nil, false
	}
	return c.Name, c.ExcludePrefixes(), true
}

// reconcilePod gives a pod on the zone's node its Layer3 attachments
// (attachPod), then makes the pod's own rows in the zone's Northbound (its
// ports, podports.go) equal to its attachments, for a pod on any node.
func (r *Reconciler) reconcilePod(ctx context.Context, key string) (ctrl.Result, error) {
	pod, res, err := r.attachPod(ctx, key)
	if errors.Is(err, errNoLocalNode) {
		return ctrl.Result{}, nil // the node's annotations will requeue it
	}
	if err != nil {
		return res, err
	}
	ports, err := r.syncPodPorts(ctx, key, pod)
	if ports.RequeueAfter > 0 && (res.RequeueAfter == 0 || ports.RequeueAfter < res.RequeueAfter) {
		res.RequeueAfter = ports.RequeueAfter
	}
	return res, err
}

// attachPod gives a pod on the zone's node its Layer3 attachments (the
// default network, Layer3 user-defined networks) and records them in the
// pod-networks annotation. Layer2 and Localnet attachments are
// cluster-manager's; refusals become Events and leave the pod alone. It
// returns the pod as it is now (nil when it is gone), or errNoLocalNode.
func (r *Reconciler) attachPod(ctx context.Context, key string) (*corev1.Pod, ctrl.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	r.ipam.Lock()
	defer r.ipam.Unlock()
	logger := log.FromContext(ctx).WithValues("pod", key, "zone", r.Zone)
	local, ok, err := r.localNode(ctx)
	if err != nil || !ok {
		logger.V(1).Info("pod waits for its node's annotations", "error", err)
		if err == nil {
			err = errNoLocalNode
		}
		return nil, ctrl.Result{}, err // the node's annotations will requeue it
	}
	if err := r.recoverPods(ctx, local); err != nil {
		return nil, ctrl.Result{}, err
	}
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.ipam.Release(key)
			r.forgetPod(key)
			return nil, ctrl.Result{}, nil
		}
		return nil, ctrl.Result{}, err
	}
	if pod.Spec.NodeName != local.Name {
		// Not (or no longer) this node's: an address held here under its
		// name is a deleted pod's whose deletion this reconcile did not
		// see (deleted and created again elsewhere in between).
		r.ipam.Release(key)
		return pod, ctrl.Result{}, nil
	}
	if feature.PodDone(pod) {
		r.ipam.Release(key)
		return pod, ctrl.Result{}, nil
	}
	reqs, placed, err := r.podRequests(ctx, pod, local)
	var waiting *podnet.Waiting
	if errors.As(err, &waiting) {
		logger.V(1).Info("pod waits", "reason", waiting.Reason, "message", waiting.Message)
		r.notePod(pod, waiting.Reason, waiting.Message)
		return pod, ctrl.Result{}, nil
	}
	if err != nil {
		return pod, ctrl.Result{}, err
	}
	current, err := podnet.ParsePod(pod)
	if err != nil {
		r.notePod(pod, "InvalidAnnotation", err.Error())
		current = podnet.Networks{}
	}
	desired := current.Clone()
	for _, req := range reqs {
		if req.Topology() != netconf.TopologyLayer3 {
			continue
		}
		if len(local.Subnets[req.Network]) == 0 {
			logger.V(1).Info("pod waits for the node's subnet", "network", req.Network)
			return pod, ctrl.Result{}, nil // the node's slice is coming; its Node update requeues the pod
		}
		if req.Key == podnet.DefaultKey && req.Role == podnet.RoleInfrastructure {
			// Routes are the pod's from its first attachment on: the running
			// pod has those, whatever infrastructure services appear later.
			if cur, ok := current[req.Key]; ok {
				req.ServiceRoutes = serviceRoutes(cur, r.Cluster.ServiceCIDRs)
			} else if req.ServiceRoutes, err = r.infrastructureRoutes(ctx); err != nil {
				return pod, ctrl.Result{}, err
			}
		}
		if req.Key == podnet.DefaultKey && len(req.DefaultRouteElsewhere) > 0 {
			// As the service routes: a running pod keeps the routes it
			// started with (one attached before these routes has none).
			if cur, ok := current[req.Key]; ok {
				req.NodeAddresses = hostRoutes(cur)
			} else if local.Gateway != nil {
				req.NodeAddresses = local.Gateway.Addresses()
			}
		}
		entry, err := r.attachLayer3(ctx, pod, local, req, current)
		if err != nil {
			r.notePod(pod, "AddressAllocationFailed", fmt.Sprintf("network %s: %v", req.Key, err))
			return pod, ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		desired[req.Key] = entry
	}
	wrote, err := podnet.PatchPlaced(ctx, r.Client, pod, desired, placed)
	if wrote {
		logger.V(1).Info("annotated pod", "placedOn", placed)
		if len(current) == 0 {
			r.observeAnnotation(pod)
		}
	}
	return pod, ctrl.Result{}, err
}

// podRequests returns the attachments a pod needs and, for a pod this zone
// places on one of its namespace's several primary networks, that
// network's NAD name to record (placement.go).
func (r *Reconciler) podRequests(ctx context.Context, pod *corev1.Pod, local nodeinfo.Info) ([]podnet.Request, string, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return nil, "", err
	}
	nads, err := podnet.NADsFor(ctx, r.Client, pod)
	if err != nil {
		return nil, "", err
	}
	return podnet.PlaceRequests(pod, ns, nads, v1.PrimaryNetworkLabel, r.roomFor(ctx, local))
}

// attachLayer3 returns the pod's attachment to a Layer3 network: its current
// one when still valid, else new addresses (the pod's requested ones when it
// asks) from the node's slice. A current address the pod did not ask for
// that is no longer its to keep (another pod holds it, recovered first, or
// it is outside the node's slice now) is replaced by a new one, with an
// AddressReassigned Event; a requested one is refused instead.
func (r *Reconciler) attachLayer3(ctx context.Context, pod *corev1.Pod, local nodeinfo.Info, req podnet.Request, current podnet.Networks) (podnet.Attachment, error) {
	slices := local.Subnets[req.Network]
	if len(slices) == 0 {
		return podnet.Attachment{}, fmt.Errorf("node %s has no subnet of the network yet", local.Name)
	}
	var exclude []netip.Prefix
	if req.Conf != nil {
		exclude = req.Conf.ExcludePrefixes()
	}
	pools, err := r.ipam.Pools(req.Network, slices, exclude)
	if err != nil {
		return podnet.Attachment{}, err
	}
	podKey := pod.Namespace + "/" + pod.Name
	var want []netip.Addr
	requested := req.Selection != nil && len(req.Selection.IPs) > 0
	if cur, ok := current[req.Key]; ok {
		addrs, _ := cur.Prefixes()
		for _, a := range addrs {
			want = append(want, a.Addr())
		}
	} else if req.Selection != nil {
		for _, s := range req.Selection.IPs {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return podnet.Attachment{}, fmt.Errorf("requested address %q is not an address", s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			want = append(want, p.Addr())
		}
	}
	addrs, gws, reassigned, err := podaddr.Assign(pools, podKey, want, requested)
	if err != nil {
		return podnet.Attachment{}, err
	}
	mac := ""
	if req.Selection != nil {
		mac = req.Selection.MAC
	}
	if len(reassigned) > 0 {
		log.FromContext(ctx).Info("pod address reassigned", "pod", podKey, "network", req.Key, "was", reassigned, "now", addrs)
		r.notePod(pod, "AddressReassigned", fmt.Sprintf("network %s: %s; now %v", req.Key, strings.Join(reassigned, "; "), addrs))
	}
	return podnet.Attach(req, addrs, gws, mac, podKey, r.Cluster), nil
}

// notePod emits an Event on a pod once per distinct reason and message
// (per pod object: one created again under the name is told again, even
// when its predecessor's deletion was not seen).
func (r *Reconciler) notePod(pod *corev1.Pod, reason, message string) {
	key := "pod/" + pod.Namespace + "/" + pod.Name
	note := string(pod.UID) + "|" + reason + "|" + message
	r.mu.Lock()
	if r.noted == nil {
		r.noted = map[string]string{}
	}
	same := r.noted[key] == note
	r.noted[key] = note
	r.mu.Unlock()
	if !same {
		r.Recorder.Event(pod, corev1.EventTypeWarning, reason, message)
	}
}

// forgetPod drops what notePod last reported of a pod that is gone, so
// that a pod of the same name created later is told of its own problems
// (and the notes do not grow with every pod that ever had one).
func (r *Reconciler) forgetPod(key string) {
	r.mu.Lock()
	delete(r.noted, "pod/"+key)
	r.mu.Unlock()
}

// ports returns a network's workload ports in this zone: its pods on the
// zone's node, and on a Layer2 network every pod (remote elsewhere).
func (r *Reconciler) ports(ctx context.Context, n topology.Network, keys []string, local string) ([]topology.Port, error) {
	// Pods by attachment key (not every pod of the node, whose annotations
	// would each be parsed once per network), but for the default network,
	// to which every pod of the node is attached.
	var pods []corev1.Pod
	if n.IsDefault() {
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.MatchingFields{feature.PodNodeIndex: local}); err != nil {
			return nil, err
		}
		pods = list.Items
	} else {
		for _, k := range keys {
			var list corev1.PodList
			if err := r.Client.List(ctx, &list, client.MatchingFields{podKeysIndex: k}); err != nil {
				return nil, err
			}
			for _, p := range list.Items {
				if n.Topology == netconf.TopologyLayer2 || p.Spec.NodeName == local {
					pods = append(pods, p)
				}
			}
		}
	}
	var out []topology.Port
	seen := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if feature.PodDone(p) || p.Spec.NodeName == "" {
			continue
		}
		nets, err := podnet.ParsePod(p)
		if err != nil {
			continue
		}
		for _, k := range keys {
			a, ok := nets[k]
			if !ok {
				continue
			}
			port, ok := portOf(p, k, a)
			if !ok {
				// A VM's port (internal/zone/vms), once per VM.
				if a.VM == "" {
					continue
				}
				if port, ok, err = r.vmsFeature().Port(ctx, feature.VMKey(p.Namespace, a.VM), k); err != nil || !ok {
					continue
				}
			}
			if seen[port.Name] {
				continue
			}
			seen[port.Name] = true
			out = append(out, port)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// External IDs identifying a pod's port.
const (
	PodExternalID = feature.PodExternalID
	NADExternalID = feature.NADExternalID
)

// networkKeys returns the attachment keys of a network: "default", or the
// "<ns>/<name>" of each of its NADs.
func (r *Reconciler) networkKeys(ctx context.Context, network string) ([]string, error) {
	if network == nodeinfo.DefaultNetwork {
		return []string{podnet.DefaultKey}, nil
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.MatchingFields{feature.NetworkNameIndex: network}); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range nads.Items {
		out = append(out, podnet.Key(n.Namespace, n.Name))
	}
	sort.Strings(out)
	return out, nil
}

// podsFeature attaches the zone's node's pods to their Layer3 networks
// (addresses, pods.go) and writes every pod's ports (podports.go): a
// Layer2 network's remote pods' too.
type podsFeature struct{ r *Reconciler }

func (podsFeature) Name() string          { return "pods" }
func (podsFeature) Kinds() []feature.Kind { return []feature.Kind{feature.KindPod} }

func (f podsFeature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	return f.r.reconcilePod(ctx, key.Namespace+"/"+key.Name)
}

// Shares implements feature.Sharer: a pod's ports go on its networks'
// switches, and an isolated default-network port in the isolation port
// group; other port groups (NetworkPolicy's) are their owners' alone.
func (podsFeature) Shares() []feature.Share {
	return []feature.Share{
		{Table: &nbdb.LogicalSwitch{}, Column: "ports"},
		{Table: &nbdb.PortGroup{}, Column: "ports", Rows: func(m model.Model) bool {
			return m.(*nbdb.PortGroup).Name == topology.IsolatedPortGroup
		}},
	}
}

// Watch implements feature.Feature: a pod requeues itself when its
// attachments or ports may change, and a deleted pod the pods of its
// namespace waiting for room (placement.go); a NAD the pods of its
// namespace, which may wait for it.
func (f podsFeature) Watch(b *builder.TypedBuilder[feature.Key]) {
	r := f.r
	own := func(q workqueue.TypedRateLimitingInterface[feature.Key], pods ...*corev1.Pod) {
		for _, p := range pods {
			if p != nil && p.Spec.NodeName != "" {
				q.Add(feature.PodKey(p.Namespace, p.Name))
			}
		}
	}
	b.Watches(&corev1.Pod{}, feature.BeforeAfter(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[feature.Key], before, after client.Object) {
		o, _ := before.(*corev1.Pod)
		n, _ := after.(*corev1.Pod)
		if n != nil {
			r.sawPod(ctx, n, false)
		}
		own(q, o, n)
		if o != nil && n == nil {
			r.sawPod(ctx, o, true)
			// It freed an address on one of its namespace's primary
			// networks: pods waiting for room may be placed now.
			for _, k := range r.unplacedPods(ctx, o) {
				q.Add(k)
			}
		}
	}), builder.WithPredicates(feature.AttachmentChanges))
	b.Watches(&nadv1.NetworkAttachmentDefinition{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, o client.Object) []feature.Key {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []feature.Key
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				out = append(out, feature.PodKey(p.Namespace, p.Name))
			}
		}
		return out
	}))
}

// Keys are the pods holding ports (and those deleted while the controller
// was away), and the node's pods: a change of the node (its slices) may
// let them be attached.
func (f podsFeature) Keys(ctx context.Context) ([]feature.Key, error) {
	r := f.r
	var keys []feature.Key
	if local, ok, err := r.localNode(ctx); err == nil && ok {
		var pods corev1.PodList
		if err := r.Client.List(ctx, &pods, client.MatchingFields{feature.PodNodeIndex: local.Name}); err == nil {
			for _, p := range pods.Items {
				keys = append(keys, feature.PodKey(p.Namespace, p.Name))
			}
		}
	}
	return r.host.WithOwners(keys, feature.KindPod)
}

// RemoteNodeKeys are the node's pods: their remote ports follow its
// chassis.
func (f podsFeature) RemoteNodeKeys(ctx context.Context, node string, _ func(string) bool) []feature.Key {
	return f.r.podsOnNode(ctx, node)
}

// NetworkChanged implements feature.NetworkDependent: the network's pod
// switch was just made, or made again: its pods' ports go on it.
func (f podsFeature) NetworkChanged(_ context.Context, c feature.NetworkChange) {
	if c.RowsChanged {
		f.r.replanPods(c.Network)
	}
}

// infrastructureRoutes returns host routes to the cluster IPs of the
// infrastructure services that exist (pods with a primary user-defined
// network reach them through their default-network interface).
func (r *Reconciler) infrastructureRoutes(ctx context.Context) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range r.Cluster.InfrastructureServices {
		ns, name, _ := strings.Cut(s, "/")
		svc := &corev1.Service{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				out = append(out, netip.PrefixFrom(a, a.BitLen()))
			}
		}
	}
	return out, nil
}

// serviceRoutes returns an attachment's routes to addresses of the service
// ranges (its infrastructure service routes).
func serviceRoutes(a podnet.Attachment, serviceCIDRs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, d := range routeDests(a) {
		for _, c := range serviceCIDRs {
			if c.Contains(d.Addr()) && d.Bits() >= c.Bits() {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// hostRoutes are the addresses an attachment routes one by one (/32,
// /128): on a default attachment whose default route is elsewhere, its
// node's addresses.
func hostRoutes(a podnet.Attachment) []netip.Addr {
	var out []netip.Addr
	for _, d := range routeDests(a) {
		if d.IsSingleIP() {
			out = append(out, d.Addr())
		}
	}
	return out
}

// routeDests are an attachment's routes' destinations (those that parse).
func routeDests(a podnet.Attachment) []netip.Prefix {
	var out []netip.Prefix
	for _, rt := range a.Routes {
		if d, err := netip.ParsePrefix(rt.Dest); err == nil {
			out = append(out, d)
		}
	}
	return out
}
