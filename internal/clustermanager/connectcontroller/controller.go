// Package connectcontroller is cluster-manager's ClusterNetworkConnect
// controller (seed 001, "Cluster Manager"): it resolves the networks a
// connect selects, validates the selection (internal/contract/connect), allocates
// the connect router's tunnel key and the networks' slices of the connect
// subnets, stores them in the connect's annotations for the zones, and
// keeps its Accepted condition and summary status.
package connectcontroller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/registry"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Controller reconciles ClusterNetworkConnects (keys are their names).
type Controller struct {
	Client   client.Client
	Cluster  config.Cluster
	Networks *registry.Networks
	Recovery *registry.Recovery
	Recorder record.EventRecorder

	mu sync.Mutex
	// remembered are slices networks held before they were unselected, by
	// connect: a network selected again gets its slice back while this
	// process lives (not persisted: after a restart it gets any free one).
	remembered map[string]connect.Subnets
}

// Reconcile implements reconcile.Reconciler.
func (c *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := c.Recovery.Ensure(ctx); err != nil {
		return ctrl.Result{}, err
	}
	name := req.Name
	logger := log.FromContext(ctx).WithValues("clusterNetworkConnect", name)
	var cnc v1.ClusterNetworkConnect
	if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &cnc); err != nil {
		if apierrors.IsNotFound(err) {
			c.Networks.ReleaseKey(registry.ConnectRouterKeyHolder(name))
			c.mu.Lock()
			delete(c.remembered, name)
			c.mu.Unlock()
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if cnc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	view, err := c.view(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	refusal, err := c.decide(ctx, &cnc, view)
	if err != nil {
		return ctrl.Result{}, err
	}
	if refusal != nil {
		logger.Info("connect refused", "reason", refusal.Reason, "message", refusal.Message)
	}
	return ctrl.Result{}, c.writeStatus(ctx, &cnc, refusal, view.nodes)
}

// decide validates the selection and, when it is valid, writes the
// allocation annotations; it returns the refusal.
func (c *Controller) decide(ctx context.Context, cnc *v1.ClusterNetworkConnect, view *view) (*connect.Refusal, error) {
	layout, err := connect.NewLayout(cnc.Spec.ConnectSubnets)
	if err != nil {
		return &connect.Refusal{Reason: v1.ReasonConnectSubnetConflict, Message: err.Error()}, nil
	}
	nets, err := view.selected(cnc)
	if err != nil {
		return &connect.Refusal{Reason: v1.ReasonUnsupportedNetworkType, Message: err.Error()}, nil
	}
	if r := connect.Validate(layout, nets, c.Cluster, view.peers(cnc)); r != nil {
		return r, nil
	}
	if r := connect.CheckFit(layout, nets, view.maxNodeID); r != nil {
		return r, nil
	}
	key, err := c.Networks.AllocateKey(registry.ConnectRouterKeyHolder(cnc.Name))
	if err != nil {
		return &connect.Refusal{Reason: v1.ReasonConnectTunnelKeysExhausted, Message: err.Error()}, nil
	}
	held, _, err := connect.ParseAllocation(cnc.Annotations)
	if err != nil {
		log.FromContext(ctx).Info("allocation annotations unreadable; allocating afresh", "error", err.Error())
	}
	keys := make([]connect.Key, len(nets))
	for i, n := range nets {
		keys[i] = n.Key()
	}
	c.mu.Lock()
	remembered := c.remembered[cnc.Name]
	c.mu.Unlock()
	subnets, err := connect.Allocate(layout, held.Subnets, remembered, keys)
	var full *connect.ExhaustedError
	if errors.As(err, &full) {
		return &connect.Refusal{Reason: v1.ReasonConnectSubnetExhausted, Message: fmt.Sprintf(
			"Insufficient IP addresses in connect subnet %s: no %s left for network '%s' (%d blocks of %d links; each Layer3 network takes a block, Layer2 networks share blocks)",
			layout, full.What, view.byKey[full.Network], layout.Blocks, layout.LinksPerBlock)}, nil
	}
	if err != nil {
		return nil, err
	}
	c.remember(cnc.Name, held.Subnets, subnets)
	alloc := connect.Allocation{TunnelKey: key, Subnets: subnets}
	if _, err := kubeobj.PatchAnnotations(ctx, c.Client, cnc, alloc.Annotations()); err != nil {
		return nil, fmt.Errorf("writing the allocation of ClusterNetworkConnect %s: %w", cnc.Name, err)
	}
	return nil, nil
}

// remember records the slices networks held and lose now.
func (c *Controller) remember(cnc string, held, now connect.Subnets) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.remembered == nil {
		c.remembered = map[string]connect.Subnets{}
	}
	r := c.remembered[cnc]
	if r == nil {
		r = connect.Subnets{}
		c.remembered[cnc] = r
	}
	for k, s := range held {
		if _, kept := now[k]; !kept {
			r[k] = s
		}
	}
	for k := range now {
		delete(r, k)
	}
}

// writeStatus sets the Accepted condition, drops zone conditions of nodes
// that are gone, and sums the conditions up in status.status: Failure when
// refused or some zone failed, Success when every node's zone is ready,
// empty while zones are still setting up.
func (c *Controller) writeStatus(ctx context.Context, cnc *v1.ClusterNetworkConnect, refusal *connect.Refusal, nodes []string) error {
	cond := metav1.Condition{Type: v1.ConditionAccepted, Status: metav1.ConditionTrue, Reason: v1.ReasonValidationSucceeded,
		Message: "All validation checks passed successfully", ObservedGeneration: cnc.Generation}
	if refusal != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, refusal.Reason, refusal.Message
	}
	before := meta.FindStatusCondition(cnc.Status.Conditions, v1.ConditionAccepted)
	changed := meta.SetStatusCondition(&cnc.Status.Conditions, cond)
	if changed && refusal != nil && (before == nil || before.Reason != refusal.Reason || before.Message != refusal.Message) {
		c.Recorder.Event(cnc, corev1.EventTypeWarning, refusal.Reason, refusal.Message)
	}
	live := map[string]bool{}
	for _, n := range nodes {
		live[v1.ConditionReadyInZonePrefix+n] = true
	}
	kept := cnc.Status.Conditions[:0]
	for _, cd := range cnc.Status.Conditions {
		if strings.HasPrefix(cd.Type, v1.ConditionReadyInZonePrefix) && !live[cd.Type] {
			changed = true
			continue
		}
		kept = append(kept, cd)
	}
	cnc.Status.Conditions = kept
	status := Summary(cnc.Status.Conditions, nodes)
	if status != cnc.Status.Status {
		cnc.Status.Status = status
		changed = true
	}
	if !changed {
		return nil
	}
	return c.Client.Status().Update(ctx, cnc)
}

// Summary is status.status for these conditions and nodes.
func Summary(conds []metav1.Condition, nodes []string) v1.ConnectStatusType {
	if meta.IsStatusConditionFalse(conds, v1.ConditionAccepted) {
		return v1.ConnectFailure
	}
	ready := 0
	for _, cd := range conds {
		if !strings.HasPrefix(cd.Type, v1.ConditionReadyInZonePrefix) {
			continue
		}
		if cd.Status == metav1.ConditionFalse {
			return v1.ConnectFailure
		}
		if cd.Status == metav1.ConditionTrue {
			ready++
		}
	}
	if meta.IsStatusConditionTrue(conds, v1.ConditionAccepted) && ready >= len(nodes) {
		return v1.ConnectSuccess
	}
	return ""
}

// view is what a reconcile reads once: networks by name, namespaces,
// ClusterUserDefinedNetworks, UserDefinedNetworks and other connects.
type view struct {
	networks   map[string]connect.Network // network name -> network (with an ID)
	byKey      map[connect.Key]string     // annotation key -> network name
	namespaces []corev1.Namespace
	cudns      []v1.ClusterUserDefinedNetwork
	udns       []v1.UserDefinedNetwork
	cncs       []v1.ClusterNetworkConnect
	nodes      []string
	maxNodeID  int
}

func (c *Controller) view(ctx context.Context) (*view, error) {
	v := &view{networks: map[string]connect.Network{}, byKey: map[connect.Key]string{}}
	var nads nadv1.NetworkAttachmentDefinitionList
	var nss corev1.NamespaceList
	var cudns v1.ClusterUserDefinedNetworkList
	var udns v1.UserDefinedNetworkList
	var cncs v1.ClusterNetworkConnectList
	var nodes corev1.NodeList
	for _, l := range []client.ObjectList{&nads, &nss, &cudns, &udns, &cncs, &nodes} {
		if err := c.Client.List(ctx, l); err != nil {
			return nil, err
		}
	}
	for i := range nads.Items {
		nad := &nads.Items[i]
		conf, err := netconf.Parse(nad)
		if err != nil || conf == nil || !netconf.Managed(nad) {
			continue
		}
		id, keys, ok, err := netconf.ParseAllocation(nad.Annotations)
		if err != nil || !ok {
			continue
		}
		// The network as zones render it: defaults (join, transit) filled
		// the same way.
		tn, err := topology.FromNetConf(conf, id, keys, c.Cluster)
		if err != nil {
			continue
		}
		n := connect.Network{Name: tn.Name, ID: id, Topology: tn.Topology, Role: tn.Role, Join: tn.Join, Transit: tn.Transit}
		for _, s := range tn.Subnets {
			n.Subnets = append(n.Subnets, s.CIDR)
		}
		v.networks[n.Name] = n
		v.byKey[n.Key()] = n.Name
	}
	v.namespaces, v.cudns, v.udns, v.cncs = nss.Items, cudns.Items, udns.Items, cncs.Items
	for _, n := range nodes.Items {
		v.nodes = append(v.nodes, n.Name)
		if id, ok, err := nodeinfo.NodeID(n.Annotations); err == nil && ok && id > v.maxNodeID {
			v.maxNodeID = id
		}
	}
	sort.Strings(v.nodes)
	return v, nil
}

// selected resolves a connect's selectors into networks (sorted by name).
// Networks not yet allocated (no NAD with an ID) are left out until they
// are; a selected ClusterUserDefinedNetwork of a kind that cannot be
// connected is returned as such, for Validate to refuse.
func (v *view) selected(cnc *v1.ClusterNetworkConnect) ([]connect.Network, error) {
	out := map[string]connect.Network{}
	for _, s := range cnc.Spec.NetworkSelectors {
		switch {
		case s.ClusterUserDefinedNetworkSelector != nil:
			sel, err := metav1.LabelSelectorAsSelector(&s.ClusterUserDefinedNetworkSelector.NetworkSelector)
			if err != nil {
				return nil, fmt.Errorf("invalid ClusterUserDefinedNetwork selector: %v", err)
			}
			for _, cu := range v.cudns {
				if !sel.Matches(labels.Set(cu.Labels)) {
					continue
				}
				name := netconf.CUDNNetworkName(cu.Name)
				n, ok := v.networks[name]
				if !ok {
					n, ok = specOnly(name, cu.Spec.FlatTemplate())
				}
				if ok {
					n.Object = "ClusterUserDefinedNetwork " + cu.Name
					out[name] = n
				}
			}
		case s.PrimaryUserDefinedNetworkSelector != nil:
			sel, err := metav1.LabelSelectorAsSelector(&s.PrimaryUserDefinedNetworkSelector.NamespaceSelector)
			if err != nil {
				return nil, fmt.Errorf("invalid namespace selector: %v", err)
			}
			chosen := map[string]bool{}
			for _, ns := range v.namespaces {
				if sel.Matches(labels.Set(ns.Labels)) {
					chosen[ns.Name] = true
				}
			}
			for _, u := range v.udns {
				if !chosen[u.Namespace] || u.Spec.Flat().Role != v1.Primary {
					continue
				}
				name := netconf.UDNNetworkName(u.Namespace, u.Name)
				if n, ok := v.networks[name]; ok {
					n.Object = "UserDefinedNetwork " + u.Namespace + "/" + u.Name
					out[name] = n
				}
			}
		}
	}
	nets := make([]connect.Network, 0, len(out))
	for _, n := range out {
		nets = append(nets, n)
	}
	sort.Slice(nets, func(i, j int) bool { return nets[i].Name < nets[j].Name })
	return nets, nil
}

// specOnly is a selected ClusterUserDefinedNetwork without an allocated
// NAD: returned only when its kind cannot be connected, so that the refusal
// does not wait for a NAD.
func specOnly(name string, t v1.UserDefinedNetworkSpec) (connect.Network, bool) {
	topo := strings.ToLower(string(t.Topology))
	role := strings.ToLower(string(t.Role))
	if role == netconf.RolePrimary && topo != netconf.TopologyLocalnet {
		return connect.Network{}, false
	}
	return connect.Network{Name: name, Topology: topo, Role: role}, true
}

// peers are the connects older than self (creation time, then name): their
// connect subnets and the networks they select now. Only an older connect
// can refuse a younger one (ConnectSubnetOverlap), so the outcome does not
// depend on which is reconciled first, nor flip when one is refused: the
// older keeps its subnets, as it would if the younger had never existed.
func (v *view) peers(self *v1.ClusterNetworkConnect) []connect.Peer {
	var out []connect.Peer
	for i := range v.cncs {
		o := &v.cncs[i]
		if o.Name == self.Name || !older(o, self) {
			continue
		}
		l, err := connect.NewLayout(o.Spec.ConnectSubnets)
		if err != nil {
			continue
		}
		nets, err := v.selected(o)
		if err != nil {
			continue
		}
		p := connect.Peer{Name: o.Name, Ranges: l.Prefixes(), Networks: map[string]bool{}}
		for _, n := range nets {
			p.Networks[n.Name] = true
		}
		out = append(out, p)
	}
	return out
}

// older reports whether a was created before b (by name on a tie).
func older(a, b *v1.ClusterNetworkConnect) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
