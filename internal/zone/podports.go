package zone

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// A pod's ports are its own rows: the owner is the pod's reconcile key
// ("pod:<namespace>/<name>"), and each port is a member its owner
// contributes to the network's pod switch (and, for an isolated
// default-network port, to the isolation port group). A network's plan
// renders none of them, so a pod added, changed or deleted costs one small
// transaction whatever the number of pods and networks in the zone
// (docs/topology.md "Who owns what").

// errNoLocalNode: the zone's node is not known (or not annotated) yet.
var errNoLocalNode = errors.New("the zone's node is not ready")

// syncPodPorts makes the pod's rows equal to its attachments: a port on
// every network it is attached to that has one in this zone (its own node's
// networks; on a Layer2 network, a remote port for a pod elsewhere). A nil
// pod (deleted) holds nothing. While one of its networks cannot be rendered
// (malformed, not allocated, the zone's node not ready) its rows stay as
// they are.
func (r *Reconciler) syncPodPorts(ctx context.Context, key string, pod *corev1.Pod) (ctrl.Result, error) {
	if r.Syncer == nil {
		return ctrl.Result{}, nil // no Northbound (render: Desired shows the ports)
	}
	logger := log.FromContext(ctx).WithValues("pod", key, "zone", r.Zone)
	rows, contribs, wait, err := r.desiredPodPorts(ctx, pod)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait != "" {
		logger.V(1).Info("pod ports wait", "reason", wait)
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	p, err := r.Syncer.Sync(ctx, PodOwner(key), rows, contribs...)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("pod %s: ports: %w", key, err)
	}
	if !p.Empty() {
		logger.V(1).Info("synced pod ports", "inserted", p.Inserted, "updated", p.Updated, "deleted", p.Deleted, "missing", p.Missing)
	}
	if p.Inserted > 0 {
		r.portsWritten(ctx) // policies waiting for the port
	}
	if len(p.Missing) > 0 {
		// The network's switch is not there yet: its insert replans the
		// network's pods (replanPods); this retry covers a dropped event.
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// desiredPodPorts returns a pod's rows and its contributions to its
// networks' rows, or why they must stay as they are.
func (r *Reconciler) desiredPodPorts(ctx context.Context, pod *corev1.Pod) ([]model.Model, []ovsdbsync.Contribution, string, error) {
	if pod == nil || feature.PodDone(pod) || pod.Spec.NodeName == "" {
		return nil, nil, "", nil
	}
	nets, err := podnet.ParsePod(pod)
	if err != nil || len(nets) == 0 {
		return nil, nil, "", nil
	}
	nodes, bad, err := r.nodes.nodes(ctx, r.Client)
	if err != nil {
		return nil, nil, "", err
	}
	var rows []model.Model
	var contribs []ovsdbsync.Contribution
	keys := make([]string, 0, len(nets))
	for k := range nets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		port, ok := portOf(pod, k, nets[k])
		if !ok {
			continue
		}
		network, ok := r.networkOfKey(ctx, k)
		if !ok {
			continue // its NAD is gone: so is the network's switch here
		}
		n, exists, err := r.network(ctx, network)
		if err != nil {
			return nil, nil, fmt.Sprintf("network %s: %v", network, err), nil
		}
		if !exists {
			continue
		}
		active, err := r.activeNodes(ctx, n)
		if err != nil {
			return nil, nil, "", err
		}
		if !active.All() {
			// Its node uses the network (it runs there), whether or not
			// the network's last plan knew it yet: a Layer2 remote port
			// only needs the network here.
			active = active.Union(activity.On(pod.Spec.NodeName))
		}
		res, err := topology.RenderPorts(topology.Input{Network: n, Nodes: nodes, Zone: r.Zone, Cluster: r.Cluster, Ports: []topology.Port{port}, Active: active})
		switch {
		case errors.Is(err, topology.ErrNotReady) && !r.hasLocalNode(nodes, bad):
			continue // the zone has no node: nothing is rendered here
		case errors.Is(err, topology.ErrNotReady):
			return nil, nil, err.Error(), nil
		case err != nil:
			return nil, nil, "", err
		}
		for _, p := range res.Skipped {
			r.notePod(pod, "PortNotRendered", fmt.Sprintf("zone %s: network %s: %s", r.Zone, network, p.Reason))
		}
		rows = append(rows, res.Rows...)
		contribs = append(contribs, res.Contributions...)
	}
	return rows, contribs, "", nil
}

// portOf is a pod's workload port on the network of attachment key k; ok
// is false when it has none of its own: a live-migratable VM's port on a
// Layer2 network is the VM's (internal/zone/vms).
func portOf(p *corev1.Pod, k string, a podnet.Attachment) (topology.Port, bool) {
	if podnet.PortNameOf(k, p, a) != podnet.PortName(k, p.Namespace, p.Name) {
		return topology.Port{}, false
	}
	addrs, err := a.Prefixes()
	if err != nil {
		return topology.Port{}, false
	}
	return topology.Port{Name: podnet.PortName(k, p.Namespace, p.Name), Node: p.Spec.NodeName, MAC: a.MAC, IPs: addrs, TunnelKey: a.TunnelID,
		Isolated:    a.Role == podnet.RoleInfrastructure,
		ExternalIDs: map[string]string{PodExternalID: p.Namespace + "/" + p.Name, NADExternalID: k}}, true
}

// replanPods asks for the ports of a network's pods to be planned again
// (its pod switch was just made, or made again): one event, mapped to the
// pods' keys by podsOfNetwork.
func (r *Reconciler) replanPods(network string) {
	r.queue.Later(func(ctx context.Context) []feature.Key { return r.podsOfNetwork(ctx, network) })
}

// podsOfNetwork returns the reconcile keys of the pods with ports on a
// network in this zone: those attached through its NADs (every node's on
// a Layer2 network, whose remote ports the zone holds too); for the default
// network, the pods of the zone's node.
func (r *Reconciler) podsOfNetwork(ctx context.Context, network string) []feature.Key {
	var pods []corev1.Pod
	if network == nodeinfo.DefaultNetwork {
		local, ok, err := r.localNode(ctx)
		if err != nil || !ok {
			return nil
		}
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.MatchingFields{feature.PodNodeIndex: local.Name}); err != nil {
			return nil
		}
		pods = list.Items
	} else {
		keys, err := r.networkKeys(ctx, network)
		if err != nil {
			return nil
		}
		for _, k := range keys {
			var list corev1.PodList
			if err := r.Client.List(ctx, &list, client.MatchingFields{podKeysIndex: k}); err != nil {
				return nil
			}
			pods = append(pods, list.Items...)
		}
	}
	out := make([]feature.Key, 0, len(pods))
	for _, p := range pods {
		out = append(out, feature.PodKey(p.Namespace, p.Name))
	}
	slices.SortFunc(out, feature.CompareKeys)
	return slices.Compact(out)
}

// podsOnNode returns the reconcile keys of a node's pods (their remote
// ports follow the node's chassis).
func (r *Reconciler) podsOnNode(ctx context.Context, node string) []feature.Key {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.MatchingFields{feature.PodNodeIndex: node}); err != nil {
		return nil
	}
	out := make([]feature.Key, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, feature.PodKey(p.Namespace, p.Name))
	}
	return out
}

// DesiredPod returns the rows the pod key ("<namespace>/<name>") holds in
// the zone (owner "pod:<key>") and the members it contributes to its
// networks' rows; a *feature.NotRendered error when they must stay as they are.
// `ovn-udn render` calls it.
func (r *Reconciler) DesiredPod(ctx context.Context, key string) ([]model.Model, []ovsdbsync.Contribution, error) {
	ns, name, _ := strings.Cut(key, "/")
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	rows, contribs, wait, err := r.desiredPodPorts(ctx, pod)
	if err == nil && wait != "" {
		err = &feature.NotRendered{Reason: wait}
	}
	return rows, contribs, err
}

// PodOwner is the owner of a pod's rows, from its "<namespace>/<name>"
// ("pod:" alone, for Owners, with "").
func PodOwner(key string) string { return feature.KindPod.Prefix() + key }

// networkOfKey maps an attachment key to its network name.
func (r *Reconciler) networkOfKey(ctx context.Context, key string) (string, bool) {
	if key == podnet.DefaultKey {
		return nodeinfo.DefaultNetwork, true
	}
	ns, name, _ := strings.Cut(key, "/")
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		return "", false
	}
	return netconf.NetworkName(nad.Spec.Config)
}
