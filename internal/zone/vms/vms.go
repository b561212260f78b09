// Package vms is the zone feature that gives live-migratable VMs
// (package kubevirt) their ports on Layer2 networks: one logical switch
// port per VM and network, shared by all the VM's virt-launcher pods, so
// that the VM keeps its address, MAC and port tunnel key wherever it runs.
// One key, and one owner ("vm:<ns>/<vm>"), per VM; the ports are
// contributed to the networks' switches, which the networks own. The pods
// feature leaves these attachments alone.
//
// While a migration target exists, the port is bound to the active pod's
// chassis and, as an additional chassis, to the target's, with
// activation-strategy=rarp (topology.Port.MigrationTarget): ovn-controller
// on the target keeps the VM's traffic blocked there until the VM sends a
// RARP from it, then lets it through and marks the binding activated in
// the target zone's Southbound. The target's zone watches for that mark
// (a monitor of only the Port_Bindings with activation-strategy=rarp,
// SBWhere) and records it on the target pod (ActivatedAnnotation); every
// zone then binds the port to the target's chassis alone, without waiting
// for the source pod to end.
package vms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-org/libovsdb/cache"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/kubevirt"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/sbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// VMIndex lists pods by the VMs their attachments name ("<ns>/<vm>",
// podnet.Attachment.VM), and every such pod under AllVMs.
const (
	VMIndex = "kubevirt.vm"
	AllVMs  = "*"
)

// VMExternalID names the VM ("<ns>/<vm>") on its ports (and, as northd
// copies them, on their Port_Bindings).
const VMExternalID = "k8s.ovn.org/vm"

// activatedOption is what ovn-controller sets on a Port_Binding once the
// port's additional chassis saw the RARP: the chassis names, comma
// separated.
const activatedOption = "additional-chassis-activated"

// SBTables are the Southbound tables the feature reads, and SBWhere the
// rows of them it needs: the bindings of ports that wait for an
// activation (a zone has few of those, whatever its number of ports).
var (
	SBTables = []model.Model{&sbdb.PortBinding{}}
	SBWhere  = []ovsdb.Condition{{Table: &sbdb.PortBinding{}, Column: "options", Function: "includes",
		Value: []any{"map", []any{[]any{"activation-strategy", "rarp"}}}}}
)

// Feature renders the VMs' ports.
type Feature struct {
	host *feature.Host
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "vms" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindVM} }

// Shares implements feature.Sharer: the VMs' ports on the networks'
// switches.
func (*Feature) Shares() []feature.Share {
	return []feature.Share{{Table: &nbdb.LogicalSwitch{}, Column: "ports"}}
}

// Indexes implements feature.Indexer.
func (*Feature) Indexes() []kubeobj.Index {
	return []kubeobj.Index{{Object: &corev1.Pod{}, Field: VMIndex, Extract: func(o client.Object) []string {
		if vms := podnet.VMs(o); len(vms) > 0 {
			return append(vms, AllVMs)
		}
		return nil
	}}}
}

// vmChanges passes the pod events that change a VM's ports: its pods'
// attachments, nodes, phases, deletions or activation.
var vmChanges = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Pod)
	n, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 {
		return true
	}
	return feature.AttachmentChanged(o, n) ||
		o.Annotations[kubevirt.ActivatedAnnotation] != n.Annotations[kubevirt.ActivatedAnnotation] ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}}

// Watch implements feature.Feature: a pod requeues the VMs its
// attachments name, before and after.
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	b.Watches(&corev1.Pod{}, feature.KeysBeforeAfter(func(_ context.Context, before, after *corev1.Pod) []feature.Key {
		var out []feature.Key
		for _, p := range []*corev1.Pod{before, after} {
			if p == nil {
				continue
			}
			for _, vm := range podnet.VMs(p) {
				ns, name, _ := strings.Cut(vm, "/")
				out = append(out, feature.VMKey(ns, name))
			}
		}
		return out
	}), builder.WithPredicates(vmChanges))
}

// Keys implements feature.Keyer: every VM with pods, and those only the
// zone's Northbound still remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	keys, err := f.vmKeys(ctx)
	if err != nil {
		return nil, err
	}
	return f.host.WithOwners(keys, feature.KindVM)
}

func (f *Feature) vmKeys(ctx context.Context) ([]feature.Key, error) {
	var list corev1.PodList
	if err := f.host.Client.List(ctx, &list, client.MatchingFields{VMIndex: AllVMs}); err != nil {
		return nil, err
	}
	var out []feature.Key
	for i := range list.Items {
		for _, vm := range podnet.VMs(&list.Items[i]) {
			ns, name, _ := strings.Cut(vm, "/")
			out = append(out, feature.VMKey(ns, name))
		}
	}
	slices.SortFunc(out, feature.CompareKeys)
	return slices.Compact(out), nil
}

// allVMs asks for every VM to be planned again (a network's rows or a
// node's chassis changed).
func (f *Feature) allVMs() {
	f.host.Queue.Later(func(ctx context.Context) []feature.Key {
		keys, _ := f.vmKeys(ctx)
		return keys
	})
}

// NetworkChanged implements feature.NetworkDependent: a network's switch
// made again, or its nodes changed, replans the VMs.
func (f *Feature) NetworkChanged(_ context.Context, c feature.NetworkChange) {
	if c.RowsChanged || c.Moved || !c.Known {
		f.allVMs()
	}
}

// RemoteNodeKeys implements feature.RemoteNodeDependent: another node's
// chassis may be one a VM's port is bound to.
func (f *Feature) RemoteNodeKeys(ctx context.Context, _ string, _ func(string) bool) []feature.Key {
	keys, _ := f.vmKeys(ctx)
	return keys
}

// Outcome is a VM's rows in the zone.
type Outcome struct {
	Rows          []model.Model
	Contributions []ovsdbsync.Contribution
	// Active and Target are the VM's active pod and migration target
	// (kubevirt.Roles).
	Active, Target *corev1.Pod
	// Migrating are the ports bound to the target as well.
	Migrating []string
}

// Reconcile implements feature.Feature: a VM's ports in one transaction,
// then, in the migration target's zone, the activation OVN saw recorded
// on the target pod.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("vm", key.Namespace+"/"+key.Name, "zone", f.host.Zone)
	out, err := f.Desired(ctx, key)
	var held *feature.NotRendered
	if errors.As(err, &held) {
		logger.V(1).Info("VM ports not rendered", "reason", held.Reason)
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Syncer.Sync(ctx, key.String(), out.Rows, out.Contributions...)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("VM %s/%s: ports: %w", key.Namespace, key.Name, err)
	}
	res := feature.Settled(logger, "VM ports", p, nil)
	if p.Inserted > 0 && f.host.PortsWritten != nil {
		f.host.PortsWritten(ctx) // policies waiting for the port
	}
	return res, f.activate(ctx, out)
}

// vmPort is a VM's port on one network.
type vmPort struct {
	network topology.Network
	port    topology.Port
}

// Desired returns a VM's ports in the zone: on each Layer2 network its
// active pod is attached to, bound as the pods' roles say.
func (f *Feature) Desired(ctx context.Context, key feature.Key) (Outcome, error) {
	out, ports, err := f.ports(ctx, key)
	if err != nil || len(ports) == 0 {
		return out, err
	}
	nodes, _, err := f.host.Networks.Nodes(ctx)
	if err != nil {
		return Outcome{}, err
	}
	for _, vp := range ports {
		on := []string{vp.port.Node}
		if vp.port.MigrationTarget != "" {
			on = append(on, vp.port.MigrationTarget)
			out.Migrating = append(out.Migrating, vp.port.Name)
		}
		active, err := f.host.Networks.ActiveNodes(ctx, vp.network)
		if err != nil {
			return Outcome{}, err
		}
		if !active.All() {
			// The VM's nodes use the network whether or not its last
			// plan knew it yet.
			active = active.Union(activity.On(on...))
		}
		res, err := topology.RenderPorts(topology.Input{Network: vp.network, Nodes: nodes, Zone: f.host.Zone, Cluster: f.host.Cluster,
			Ports: []topology.Port{vp.port}, Active: active})
		switch {
		case errors.Is(err, topology.ErrNotReady):
			if _, ok, lerr := f.host.Networks.UsableLocalNode(ctx); lerr != nil || ok {
				return Outcome{}, &feature.NotRendered{Reason: err.Error()}
			}
			continue // the zone has no node: nothing is rendered here
		case err != nil:
			return Outcome{}, err
		}
		out.Rows = append(out.Rows, res.Rows...)
		out.Contributions = append(out.Contributions, res.Contributions...)
	}
	return out, nil
}

// Port returns a VM's port on the network of attachment key k, as the
// zone renders it (`ovn-udn render` merges it into the network's rows).
func (f *Feature) Port(ctx context.Context, vm feature.Key, k string) (topology.Port, bool, error) {
	_, ports, err := f.ports(ctx, vm)
	for _, vp := range ports {
		if vp.port.ExternalIDs[feature.NADExternalID] == k {
			return vp.port, true, err
		}
	}
	return topology.Port{}, false, err
}

// ports returns a VM's pods' roles and its ports: one on each Layer2
// network its active pod is attached to.
func (f *Feature) ports(ctx context.Context, key feature.Key) (Outcome, []vmPort, error) {
	var list corev1.PodList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(key.Namespace),
		client.MatchingFields{VMIndex: key.Namespace + "/" + key.Name}); err != nil {
		return Outcome{}, nil, err
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	var out Outcome
	out.Active, out.Target = kubevirt.Roles(pods)
	if out.Active == nil {
		return out, nil, nil
	}
	nets, err := podnet.ParsePod(out.Active)
	if err != nil {
		return out, nil, nil // the pods feature tells the pod
	}
	var targetNets podnet.Networks
	if out.Target != nil {
		targetNets, _ = podnet.ParsePod(out.Target)
	}
	var ports []vmPort
	keys := make([]string, 0, len(nets))
	for k := range nets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := nets[k]
		if a.VM != key.Name || k == podnet.DefaultKey {
			continue // the pod's own port (the pods feature's), or another VM's
		}
		name := podnet.PortNameOf(k, out.Active, a)
		n, ok, err := f.network(ctx, k)
		if err != nil || !ok {
			if err != nil {
				return Outcome{}, nil, &feature.NotRendered{Reason: err.Error()}
			}
			continue
		}
		addrs, err := a.Prefixes()
		if err != nil {
			continue
		}
		port := topology.Port{Name: name, Node: out.Active.Spec.NodeName, MAC: a.MAC, IPs: addrs, TunnelKey: a.TunnelID,
			ExternalIDs: map[string]string{VMExternalID: key.Namespace + "/" + key.Name, feature.NADExternalID: k,
				feature.PodExternalID: out.Active.Namespace + "/" + out.Active.Name}}
		if ta, ok := targetNets[k]; ok && ta.VM == a.VM && ta.TunnelID == a.TunnelID && ta.MAC == a.MAC {
			port.MigrationTarget = out.Target.Spec.NodeName
		}
		ports = append(ports, vmPort{network: n, port: port})
	}
	return out, ports, nil
}

// network returns the network of attachment key k (ok false: its NAD or
// network is gone).
func (f *Feature) network(ctx context.Context, k string) (topology.Network, bool, error) {
	ns, name, _ := strings.Cut(k, "/")
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := f.host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		return topology.Network{}, false, client.IgnoreNotFound(err)
	}
	network, ok := netconf.NetworkName(nad.Spec.Config)
	if !ok {
		return topology.Network{}, false, nil
	}
	return f.host.Networks.Network(ctx, network)
}

// activate records, in the migration target's zone, that OVN saw the VM
// announce itself on the target: the target pod gets ActivatedAnnotation,
// which makes it the VM's active pod in every zone.
func (f *Feature) activate(ctx context.Context, out Outcome) error {
	t := out.Target
	if t == nil || len(out.Migrating) == 0 || f.host.Southbound == nil || t.Annotations[kubevirt.ActivatedAnnotation] != "" {
		return nil
	}
	local, ok, err := f.host.Networks.LocalNode(ctx)
	if err != nil || !ok || local.Name != t.Spec.NodeName {
		return err
	}
	activated := false
	for _, name := range out.Migrating {
		var pbs []sbdb.PortBinding
		if err := f.host.Southbound.WhereCache(func(pb *sbdb.PortBinding) bool { return pb.LogicalPort == name }).List(ctx, &pbs); err != nil {
			return err
		}
		for _, pb := range pbs {
			if slices.Contains(strings.Split(pb.Options[activatedOption], ","), local.ChassisID) {
				activated = true
			}
		}
	}
	if !activated {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kubevirt.ActivatedAnnotation, local.Name)
	if err := f.host.Client.Patch(ctx, t, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("recording the activation of a VM on pod %s/%s: %w", t.Namespace, t.Name, err)
	}
	log.FromContext(ctx).Info("VM activated on its migration target", "pod", t.Namespace+"/"+t.Name, "node", local.Name)
	f.host.Recorder.Eventf(t, corev1.EventTypeNormal, "LiveMigrationActivated", "OVN saw the VM announce itself on node %s: its ports move here", local.Name)
	return nil
}

// Start implements feature.Runner: every change of a watched Port_Binding
// requeues its VM (the Southbound's cache is made again on each reconnect;
// the handler follows it).
func (f *Feature) Start(ctx context.Context) error {
	if f.host.Southbound == nil {
		<-ctx.Done()
		return nil
	}
	h := &cache.EventHandlerFuncs{
		AddFunc:    func(_ string, m model.Model) { f.bindingChanged(m) },
		UpdateFunc: func(_ string, _, m model.Model) { f.bindingChanged(m) },
	}
	var seen *cache.TableCache
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if c := f.host.Southbound.Cache(); c != nil && c != seen {
			c.AddEventHandler(h)
			if seen != nil {
				f.allVMs()
			}
			seen = c
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (f *Feature) bindingChanged(m model.Model) {
	pb, ok := m.(*sbdb.PortBinding)
	if !ok || pb.Options[activatedOption] == "" {
		return
	}
	if ns, name, ok := strings.Cut(pb.ExternalIDs[VMExternalID], "/"); ok {
		f.host.Queue.Add(feature.VMKey(ns, name))
	}
}
