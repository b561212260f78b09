// Package podalloc is cluster-manager's pod address management for networks
// that span nodes (Layer2 and Localnet): any node may host a pod, so their
// addresses come from one cluster-wide pool per network, and a pod's port on a
// Layer2 switch gets a cluster-wide tunnel key. Addresses held in IPAMClaims
// (persistent IPs) outlive pods and are freed when the claim goes. The zone
// controllers do the same for Layer3 networks from their node's slice.
package podalloc

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	ipamclaims "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/kubevirt"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/fairqueue"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Controller allocates Layer2 and Localnet attachments of pods.
type Controller struct {
	Client   client.Client
	Reader   client.Reader // direct reads, for recovery
	Cluster  config.Cluster
	Recorder record.EventRecorder

	mu        sync.Mutex
	recovered bool
	nets      map[string]*network
	held      map[string]map[string]bool // pod key (or VM owner) -> networks it holds addresses or keys in
	// vmPods are the live pods of each VM owner (vmOwner), and vmOf the
	// VM owner of a pod: what a VM holds goes with its last pod.
	vmPods map[string]map[string]bool
	vmOf   map[string]string
}

// network is one network's pools.
type network struct {
	ident string // what the pools were made from
	pools []*allocator.IPPool
	// keys are the pod port tunnel keys of a Layer2 network's switch.
	keys *allocator.IDs
}

// spans reports whether a network's attachments are cluster-manager's.
func spans(c *netconf.NetConf) bool {
	return c != nil && (c.Topology == netconf.TopologyLayer2 || c.Topology == netconf.TopologyLocalnet)
}

// networkFor returns (making) the pools of a network's config. Callers hold mu.
func (r *Controller) networkFor(c *netconf.NetConf) (*network, error) {
	ident := c.Topology + "|" + c.Role + "|" + c.Egress + "|" + c.Subnets + "|" + c.ExcludeSubnets
	if n, ok := r.nets[c.Name]; ok && n.ident == ident {
		return n, nil
	}
	n := &network{ident: ident}
	for _, s := range c.ParsedSubnets() {
		// The gateway (the transit router) and management port addresses
		// of a network with a gateway are not the pods'.
		p, err := allocator.NewNetworkPool(s.CIDR, c.ExcludePrefixes(), c.HasGateway())
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", c.Name, err)
		}
		n.pools = append(n.pools, p)
	}
	if c.Topology == netconf.TopologyLayer2 {
		n.keys = allocator.NewIDsKeeping(topology.FirstPodPortKey, topology.MaxPodPortKey, topology.MaxPortKey)
	}
	if r.nets == nil {
		r.nets = map[string]*network{}
	}
	r.nets[c.Name] = n
	return n, nil
}

// claimOwner is the name addresses held by an IPAMClaim are allocated to.
func claimOwner(namespace, claim string) string { return "claim:" + namespace + "/" + claim }

// vmOwner is the name a live-migratable VM's Layer2 addresses and port
// tunnel keys are allocated to ("" for no VM): every pod of the VM shares
// them (package kubevirt), and they outlive the migration's source pod.
func vmOwner(namespace, vm string) string {
	if vm == "" {
		return ""
	}
	return "vm:" + namespace + "/" + vm
}

// SetupWithManager registers the pod and IPAMClaim controllers.
func (r *Controller) SetupWithManager(mgr ctrl.Manager) error {
	podChanges := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return podChanged(e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod))
	}}
	if err := ctrl.NewControllerManagedBy(mgr).Named("pod-allocation").
		For(&corev1.Pod{}, builder.WithPredicates(podChanges)).
		// A pod that waits (its primary network not allocated yet, its
		// namespace's networks changing under its placement) waits for a
		// NAD of its namespace: their events requeue the namespace's
		// scheduled pods. Without it such a pod stayed without its Layer2
		// address until cluster-manager restarted (chaos seed 2026).
		Watches(&nadv1.NetworkAttachmentDefinition{}, handler.EnqueueRequestsFromMapFunc(r.namespacePods)).
		WithOptions(controller.Options{NewQueue: fairqueue.NewQueue}).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(reconcilerFunc(r.ReconcilePod)))); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("ipamclaim-allocation").
		For(&ipamclaims.IPAMClaim{}).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(reconcilerFunc(r.reconcileClaim))))
}

// podChanged reports whether a pod's update can change its attachments:
// its node, its phase, its annotation of attachments, its selection of
// secondary networks, the primary network it asks for, or the one its zone
// placed it on. The last is written alone when the zone places a pod of a
// namespace that gained a second primary network while the pod waited for
// its Layer2 attachment, which only cluster-manager writes; filtering it out
// left such a pod waiting for good (chaos seed 2026 with nodes, operation
// 2450).
func podChanged(o, n *corev1.Pod) bool {
	return o.Spec.NodeName != n.Spec.NodeName || o.Status.Phase != n.Status.Phase ||
		o.Annotations[podnet.Annotation] != n.Annotations[podnet.Annotation] ||
		o.Annotations[netconf.NetworksAnnotation] != n.Annotations[netconf.NetworksAnnotation] ||
		o.Annotations[podnet.PlacementAnnotation] != n.Annotations[podnet.PlacementAnnotation] ||
		o.Annotations[podnet.RequestedPrimaryAnnotation] != n.Annotations[podnet.RequestedPrimaryAnnotation]
}

// namespacePods returns the scheduled pods of a NAD's namespace.
func (r *Controller) namespacePods(ctx context.Context, nad client.Object) []reconcile.Request {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(nad.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && !done(&p) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&p)})
		}
	}
	return out
}

type reconcilerFunc func(context.Context, ctrl.Request) (ctrl.Result, error)

func (f reconcilerFunc) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return f(ctx, req)
}

// recover rebuilds the pools from IPAMClaims and pod annotations, once,
// before the first allocation. Callers hold mu.
func (r *Controller) recover(ctx context.Context) error {
	if r.recovered {
		return nil
	}
	logger := log.FromContext(ctx)
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Reader.List(ctx, &nads); err != nil {
		return fmt.Errorf("recovering pod addresses: %w", err)
	}
	confs := map[string]*netconf.NetConf{} // by NAD key and by network name
	for i := range nads.Items {
		n := &nads.Items[i]
		if c, err := netconf.Parse(n); err == nil && spans(c) {
			confs[podnet.Key(n.Namespace, n.Name)], confs[c.Name] = c, c
		}
	}
	var claims ipamclaims.IPAMClaimList
	if err := r.Reader.List(ctx, &claims); err != nil {
		return fmt.Errorf("recovering pod addresses: listing IPAMClaims: %w", err)
	}
	for _, cl := range claims.Items {
		c, ok := confs[cl.Spec.Network]
		if !ok {
			continue
		}
		n, err := r.networkFor(c)
		if err != nil {
			continue
		}
		for _, s := range cl.Status.IPs {
			if err := reserve(n, claimOwner(cl.Namespace, cl.Name), s); err != nil {
				logger.Error(err, "IPAMClaim address not recovered", "claim", cl.Namespace+"/"+cl.Name)
			}
		}
	}
	var pods corev1.PodList
	if err := r.Reader.List(ctx, &pods); err != nil {
		return fmt.Errorf("recovering pod addresses: listing pods: %w", err)
	}
	// Oldest first: when two annotations claim one address (one of them
	// edited by hand), the pod that had it first keeps it.
	kubeobj.SortOldestFirst(pods.Items)
	for _, p := range pods.Items {
		if done(&p) {
			continue
		}
		nets, err := podnet.ParsePod(&p)
		if err != nil {
			continue
		}
		podKey := p.Namespace + "/" + p.Name
		for key, a := range nets {
			c, ok := confs[key]
			if !ok {
				continue
			}
			n, err := r.networkFor(c)
			if err != nil {
				continue
			}
			owner := podKey
			if vm := vmOwner(p.Namespace, a.VM); vm != "" && n.keys != nil {
				if err := r.vmHolds(n, vm, a); err != nil {
					logger.Error(err, "pod address not recovered", "pod", podKey)
					continue
				}
				owner = vm
				r.joinVM(podKey, vm, c.Name)
			}
			for _, s := range a.IPs {
				if err := reserve(n, owner, s); err != nil && !strings.Contains(err.Error(), "by claim:") {
					logger.Error(err, "pod address not recovered", "pod", podKey)
				}
			}
			if n.keys != nil && a.TunnelID != 0 {
				if err := n.keys.Reserve(owner, a.TunnelID); err != nil {
					logger.Error(err, "pod tunnel key not recovered", "pod", podKey)
				}
			}
			r.hold(podKey, c.Name)
		}
	}
	r.recovered = true
	logger.Info("recovered pod addresses", "pods", len(pods.Items), "claims", len(claims.Items))
	return nil
}

func reserve(n *network, owner, cidr string) error {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("%q is not a CIDR", cidr)
	}
	for _, pool := range n.pools {
		if pool.CIDR().Contains(p.Addr()) {
			return pool.Reserve(owner, p.Addr())
		}
	}
	return fmt.Errorf("%s is outside the network's subnets", p.Addr())
}

func (r *Controller) hold(podKey, network string) {
	if r.held == nil {
		r.held = map[string]map[string]bool{}
	}
	if r.held[podKey] == nil {
		r.held[podKey] = map[string]bool{}
	}
	r.held[podKey][network] = true
}

// joinVM records that pod podKey runs VM owner vm, which holds its
// addresses on network.
func (r *Controller) joinVM(podKey, vm, network string) {
	if r.vmPods == nil {
		r.vmPods, r.vmOf = map[string]map[string]bool{}, map[string]string{}
	}
	if r.vmPods[vm] == nil {
		r.vmPods[vm] = map[string]bool{}
	}
	r.vmPods[vm][podKey], r.vmOf[podKey] = true, vm
	r.hold(vm, network)
}

// release frees what a pod holds (not what its IPAMClaims hold), and what
// its VM holds when it was the VM's last pod.
func (r *Controller) release(podKey string) {
	r.releaseOwner(podKey)
	if vm, ok := r.vmOf[podKey]; ok {
		delete(r.vmOf, podKey)
		delete(r.vmPods[vm], podKey)
		if len(r.vmPods[vm]) == 0 {
			delete(r.vmPods, vm)
			r.releaseOwner(vm)
		}
	}
}

// releaseOwner frees what an owner (a pod, a VM) holds.
func (r *Controller) releaseOwner(podKey string) {
	for network := range r.held[podKey] {
		if n, ok := r.nets[network]; ok {
			for _, p := range n.pools {
				p.Release(podKey)
			}
			if n.keys != nil {
				n.keys.Release(podKey)
			}
		}
	}
	delete(r.held, podKey)
}

func done(p *corev1.Pod) bool {
	return p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ReconcilePod gives a pod its attachments to networks spanning nodes
// (Layer2, Localnet) and records them in its pod-networks annotation.
func (r *Controller) ReconcilePod(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recover(ctx); err != nil {
		return ctrl.Result{}, err
	}
	podKey := req.Namespace + "/" + req.Name
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.release(podKey)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if done(pod) {
		r.release(podKey)
		return ctrl.Result{}, nil
	}
	if pod.Spec.NodeName == "" {
		return ctrl.Result{}, nil // not scheduled yet
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	nads, err := podnet.NADsFor(ctx, r.Client, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	reqs, err := podnet.Requests(pod, ns, nads, v1.PrimaryNetworkLabel)
	var waiting *podnet.Waiting
	if errors.As(err, &waiting) {
		return ctrl.Result{}, nil // the zone controller of the pod's node reports it
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	current, err := podnet.ParsePod(pod)
	if err != nil {
		current = podnet.Networks{}
	}
	desired := current.Clone()
	for _, rq := range reqs {
		if !spans(rq.Conf) {
			continue
		}
		entry, err := r.attach(ctx, pod, rq, current)
		if err != nil {
			r.Recorder.Eventf(pod, corev1.EventTypeWarning, "AddressAllocationFailed", "network %s: %v", rq.Key, err)
			return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
		}
		desired[rq.Key] = entry
	}
	_, err = podnet.Patch(ctx, r.Client, pod, desired)
	return ctrl.Result{}, err
}

// attach returns a pod's attachment to a Layer2 or Localnet network: its
// current addresses, its IPAMClaim's, the ones it requests, or new ones, and
// on a Layer2 network a port tunnel key.
func (r *Controller) attach(ctx context.Context, pod *corev1.Pod, rq podnet.Request, current podnet.Networks) (podnet.Attachment, error) {
	n, err := r.networkFor(rq.Conf)
	if err != nil {
		return podnet.Attachment{}, err
	}
	podKey := pod.Namespace + "/" + pod.Name
	owner := podKey
	// A VM's pods share its attachment on a Layer2 network: a migration
	// target takes the one its VM's other pod has (address, MAC, key).
	// Whether the pod is a VM's is decided once, at its first allocation:
	// its attachment says so from then on, whatever its labels become.
	vmName := ""
	if cur, ok := current[rq.Key]; ok {
		vmName = cur.VM
	} else if name, isVM := kubevirt.VMName(pod); isVM {
		vmName = name
	}
	if n.keys == nil {
		vmName = ""
	}
	vm := vmOwner(pod.Namespace, vmName)
	var sibling *podnet.Attachment
	if vm != "" {
		owner = vm
		if _, ok := current[rq.Key]; !ok {
			if sibling, err = r.siblingAttachment(ctx, pod, vmName, rq.Key); err != nil {
				return podnet.Attachment{}, err
			}
		}
		if sibling != nil {
			current = current.Clone()
			current[rq.Key] = *sibling
		}
		if err := r.vmHolds(n, vm, current[rq.Key]); err != nil {
			return podnet.Attachment{}, err
		}
	}
	var claim *ipamclaims.IPAMClaim
	var want []string
	if rq.Claim != "" {
		claim = &ipamclaims.IPAMClaim{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: rq.Claim}, claim); err != nil {
			return podnet.Attachment{}, fmt.Errorf("IPAMClaim %s/%s: %w", pod.Namespace, rq.Claim, err)
		}
		if claim.Spec.Network != rq.Network {
			return podnet.Attachment{}, fmt.Errorf("IPAMClaim %s/%s is for network %s, not %s", pod.Namespace, rq.Claim, claim.Spec.Network, rq.Network)
		}
		owner, want = claimOwner(pod.Namespace, rq.Claim), claim.Status.IPs
	}
	// Current addresses the pod neither asked for nor holds by claim are
	// replaced when they are no longer its to keep (another pod recovered
	// first holds one); requested and claimed ones are refused instead.
	replaceable := false
	if cur, ok := current[rq.Key]; ok && len(want) == 0 {
		want = cur.IPs
		replaceable = claim == nil && sibling == nil && (rq.Selection == nil || len(rq.Selection.IPs) == 0)
	} else if len(want) == 0 && rq.Selection != nil {
		want = rq.Selection.IPs
	}
	var addrs []netip.Prefix
	var gws []netip.Addr
	var reassigned []string
	for i, pool := range n.pools {
		a, err := take(pool, owner, want)
		if err != nil && replaceable {
			reassigned = append(reassigned, err.Error())
			a, err = take(pool, owner, nil)
		}
		if err != nil {
			if owner == podKey || (owner == vm && len(r.vmPods[vm]) == 0) {
				for _, p := range n.pools[:i] {
					p.Release(owner)
				}
			}
			return podnet.Attachment{}, err
		}
		addrs = append(addrs, netip.PrefixFrom(a, pool.CIDR().Bits()))
		if rq.Conf.HasGateway() {
			gw, _ := allocator.NthAddress(pool.CIDR(), 1)
			gws = append(gws, gw)
		}
	}
	if claim != nil && len(claim.Status.IPs) == 0 {
		claim.Status.IPs = prefixStrings(addrs)
		claim.Status.OwnerPod = &ipamclaims.OwnerPod{Name: pod.Name}
		if err := r.Client.Status().Update(ctx, claim); err != nil {
			return podnet.Attachment{}, fmt.Errorf("recording addresses in IPAMClaim %s/%s: %w", pod.Namespace, rq.Claim, err)
		}
	}
	mac := ""
	if rq.Selection != nil {
		mac = rq.Selection.MAC
	}
	if sibling != nil {
		mac = sibling.MAC // derived from nothing else when IPAM is off
	}
	if len(reassigned) > 0 {
		log.FromContext(ctx).Info("pod address reassigned", "pod", podKey, "network", rq.Key, "was", reassigned, "now", addrs)
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, "AddressReassigned", "network %s: %s; now %v", rq.Key, strings.Join(reassigned, "; "), addrs)
	}
	keyOwner := podKey
	if vm != "" {
		keyOwner = vm
	}
	a := podnet.Attach(rq, addrs, gws, mac, keyOwner, r.Cluster)
	a.VM = vmName
	if n.keys != nil {
		if cur, ok := current[rq.Key]; ok && cur.TunnelID != 0 {
			if err := n.keys.Reserve(keyOwner, cur.TunnelID); err != nil {
				return podnet.Attachment{}, err
			}
			a.TunnelID = cur.TunnelID
		} else {
			k, err := n.keys.Allocate(keyOwner)
			if err != nil {
				return podnet.Attachment{}, fmt.Errorf("port tunnel key: %w", err)
			}
			a.TunnelID = k
		}
	}
	r.hold(podKey, rq.Network)
	if vm != "" {
		r.joinVM(podKey, vm, rq.Network)
	}
	return a, nil
}

// siblingAttachment returns the attachment under key of VM vm held by
// another live pod of the namespace (the oldest that has one), or nil.
func (r *Controller) siblingAttachment(ctx context.Context, pod *corev1.Pod, vm, key string) (*podnet.Attachment, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(pod.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the pods of VM %s/%s: %w", pod.Namespace, vm, err)
	}
	kubeobj.SortOldestFirst(pods.Items)
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.UID == pod.UID || done(p) {
			continue
		}
		nets, err := podnet.ParsePod(p)
		if err != nil {
			continue
		}
		if a, ok := nets[key]; ok && a.VM == vm {
			return &a, nil
		}
	}
	return nil, nil
}

// vmHolds refuses an attachment of VM owner vm other than what the VM
// already holds on network n: reserving it would move the VM's address or
// key away from its running pod (the pools move a holder's address when
// given another).
func (r *Controller) vmHolds(n *network, vm string, a podnet.Attachment) error {
	if len(r.vmPods[vm]) == 0 {
		return nil // nothing held for a pod of the VM yet
	}
	for _, pool := range n.pools {
		held, ok := pool.Get(vm)
		if !ok {
			continue
		}
		same := false
		for _, s := range a.IPs {
			if p, err := netip.ParsePrefix(s); err == nil && p.Addr() == held {
				same = true
			}
		}
		if len(a.IPs) > 0 && !same {
			return fmt.Errorf("VM %s holds %s, not %v: its pods' attachments differ", strings.TrimPrefix(vm, "vm:"), held, a.IPs)
		}
	}
	if id, ok := n.keys.Get(vm); ok && a.TunnelID != 0 && a.TunnelID != id {
		return fmt.Errorf("VM %s holds port key %d, not %d: its pods' attachments differ", strings.TrimPrefix(vm, "vm:"), id, a.TunnelID)
	}
	return nil
}

// take gives owner an address of pool: the wanted one of its family when
// there is one (refused when in use or outside the subnet), else any.
func take(pool *allocator.IPPool, owner string, want []string) (netip.Addr, error) {
	for _, w := range want {
		a, err := netip.ParseAddr(strings.Split(w, "/")[0])
		if err != nil {
			return netip.Addr{}, fmt.Errorf("requested address %q is not an address", w)
		}
		if a.Is4() != pool.CIDR().Addr().Is4() {
			continue
		}
		if err := pool.Reserve(owner, a); err != nil {
			return netip.Addr{}, fmt.Errorf("requested address %s: %w", a, err)
		}
		return a, nil
	}
	return pool.Allocate(owner)
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// reconcileClaim frees a deleted IPAMClaim's addresses.
func (r *Controller) reconcileClaim(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recover(ctx); err != nil {
		return ctrl.Result{}, err
	}
	claim := &ipamclaims.IPAMClaim{}
	err := r.Client.Get(ctx, req.NamespacedName, claim)
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	owner := claimOwner(req.Namespace, req.Name)
	names := make([]string, 0, len(r.nets))
	for name := range r.nets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, p := range r.nets[name].pools {
			p.Release(owner)
		}
	}
	log.FromContext(ctx).Info("released IPAMClaim addresses", "claim", req.String())
	return ctrl.Result{}, nil
}
