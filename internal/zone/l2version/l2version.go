// Package l2version settles, when a zone controller starts, the topology
// its node renders Layer2 primary networks in, and says it on the node
// (nodeinfo.Layer2TopologyVersionAnnotation), so that every zone renders
// the right ports toward it (internal/rows/topology, layer2_v1.go).
//
// The contract is seed 000's "Upgrade Details": a node moves from the old
// topology (1.0) to the transit router (2.0) only when it runs no pod on a
// Layer2 primary network, since the move changes the pods' gateway MAC and
// the management port's SNAT under their connections. In a rolling
// upgrade a node is drained and restarted; its zone controller then starts
// with no such pod, moves, and renders 2.0 before it serves any pod. A
// zone that starts with pods there keeps 1.0 until a later start finds
// none. The decision is taken once per start, before the controllers run,
// so that no pod comes up while the node's topology changes under it.
//
// A zone told to render 1.0 (the --layer2-topology-version flag) stands
// in for a release that predates the transit router: ovn-udn never shipped
// one, so this is how a cluster at 1.0 is made, to play and test the
// upgrade. A node without the annotation is at 2.0.
package l2version

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/ovsdb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
	"github.com/ovn-udn/ovn-udn/internal/zone/vms"
)

// Decide returns the version a node renders: want when it is 1.0 (the
// zone plays the old release) or when the node is not at 1.0; else 1.0
// while running (the node's pods on Layer2 primary networks) is not 0.
func Decide(want, current string, running int) string {
	if want == nodeinfo.Layer2TopologyV1 {
		return nodeinfo.Layer2TopologyV1
	}
	if current == nodeinfo.Layer2TopologyV1 && running > 0 {
		return nodeinfo.Layer2TopologyV1
	}
	return nodeinfo.Layer2TopologyV2
}

// Valid reports whether v names a version ("" is not one).
func Valid(v string) bool { return v == nodeinfo.Layer2TopologyV1 || v == nodeinfo.Layer2TopologyV2 }

// Running counts the node's workload ports on Layer2 primary networks in
// the zone's Northbound, as the zone last wrote them: local pod and VM
// ports (type "", with a NAD). nb is a client that transacts; it reads
// with one select, so that no cache need be filled. The select names
// _uuid: rows alike in the columns selected would otherwise count once.
func Running(ctx context.Context, nb libovsdb.Client, node string) (int, error) {
	ws, err := Workloads(ctx, nb, node)
	return len(ws), err
}

// Workloads names what Running counts: each port's pod or VM
// ("<namespace>/<name>", one per port).
func Workloads(ctx context.Context, nb libovsdb.Client, node string) ([]string, error) {
	op := ovsdb.Operation{Op: ovsdb.OperationSelect, Table: nbdb.LogicalSwitchPortTable,
		Where: []ovsdb.Condition{{Column: "type", Function: ovsdb.ConditionEqual, Value: ""}}, Columns: []string{"_uuid", "external_ids"}}
	res, err := nb.Transact(ctx, op)
	if err == nil {
		_, err = ovsdb.CheckOperationResults(res, []ovsdb.Operation{op})
	}
	if err != nil {
		return nil, fmt.Errorf("listing the node's Layer2 ports: %w", err)
	}
	var out []string
	for _, row := range res[0].Rows {
		x := stringMap(row["external_ids"])
		if x[topology.NodeKey] == node && x[topology.TopologyKey] == netconf.TopologyLayer2 &&
			x[topology.RoleKey] == netconf.RolePrimary && x[feature.NADExternalID] != "" {
			w := x[feature.PodExternalID]
			if w == "" {
				w = "vm " + x[vms.VMExternalID]
			}
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out, nil
}

// stringMap reads a map column of strings as a select returns it.
func stringMap(v any) map[string]string {
	out := map[string]string{}
	switch m := v.(type) {
	case ovsdb.OvsMap:
		for k, v := range m.GoMap {
			ks, _ := k.(string)
			vs, _ := v.(string)
			out[ks] = vs
		}
	case []any: // ["map", [[k, v], ...]]
		if len(m) == 2 {
			pairs, _ := m[1].([]any)
			for _, p := range pairs {
				if kv, ok := p.([]any); ok && len(kv) == 2 {
					ks, _ := kv[0].(string)
					vs, _ := kv[1].(string)
					out[ks] = vs
				}
			}
		}
	}
	return out
}

// PodsOnLayer2 names the node's pods, as the API server has them, that are
// not finished, not on the host's network, and attached to a Layer2
// primary network (their pod-networks annotation names its NAD): what a
// Northbound that is new or empty would not show.
func PodsOnLayer2(ctx context.Context, c client.Reader, node string) ([]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := c.List(ctx, &nads); err != nil {
		return nil, fmt.Errorf("listing NADs: %w", err)
	}
	layer2 := map[string]bool{}
	for i := range nads.Items {
		nc, err := netconf.Parse(&nads.Items[i])
		if err == nil && nc != nil && nc.Topology == netconf.TopologyLayer2 && nc.IsPrimary() {
			layer2[podnet.Key(nads.Items[i].Namespace, nads.Items[i].Name)] = true
		}
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, fmt.Errorf("listing node %s's pods: %w", node, err)
	}
	var out []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		nets, err := podnet.ParsePod(p)
		if err != nil {
			continue
		}
		for key := range nets {
			if layer2[key] {
				out = append(out, p.Namespace+"/"+p.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Settle decides the node's version (Decide, with Running) and writes it
// on the node when it differs from the annotation (a node without it and
// at 2.0 is left alone). It returns the version.
func Settle(ctx context.Context, c client.Client, nb libovsdb.Client, node, want string, log logr.Logger) (string, error) {
	if !Valid(want) {
		return "", fmt.Errorf("layer2 topology version %q is neither %s nor %s", want, nodeinfo.Layer2TopologyV1, nodeinfo.Layer2TopologyV2)
	}
	var n corev1.Node
	for {
		err := c.Get(ctx, client.ObjectKey{Name: node}, &n)
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("reading node %s: %w", node, err)
		}
		if want == nodeinfo.Layer2TopologyV2 {
			return want, nil // a node not registered yet runs no pod, and no annotation is 2.0
		}
		log.Info("waiting for the node to say its layer2 topology", "node", node)
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for node %s: %w", node, ctx.Err())
		case <-time.After(time.Second):
		}
	}
	current := n.Annotations[nodeinfo.Layer2TopologyVersionAnnotation]
	// Only a node at 1.0 that is to move depends on what runs. Both the
	// zone's last rows and the API server's pods count: either alone can
	// miss a running pod (a Northbound rebuilt from scratch, a pod whose
	// annotation is not written yet).
	var workloads []string
	if current == nodeinfo.Layer2TopologyV1 && want == nodeinfo.Layer2TopologyV2 {
		var err error
		if workloads, err = Workloads(ctx, nb, node); err != nil {
			return "", err
		}
		pods, err := PodsOnLayer2(ctx, c, node)
		if err != nil {
			return "", err
		}
		for _, p := range pods {
			if !slices.Contains(workloads, p) {
				workloads = append(workloads, p)
			}
		}
	}
	running := len(workloads)
	v := Decide(want, current, running)
	if v == current || v == nodeinfo.Layer2TopologyV2 && current == "" {
		if v != want {
			log.Info("layer2 topology kept: the node runs pods on Layer2 primary networks; it moves at a start with none (drain it, then restart this controller)",
				"version", v, "wanted", want, "runningPods", running, "pods", workloads)
		} else {
			log.Info("layer2 topology", "version", v)
		}
		return v, nil
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[nodeinfo.Layer2TopologyVersionAnnotation] = v
	if err := c.Patch(ctx, &n, patch); err != nil {
		return "", fmt.Errorf("writing node %s's %s: %w", node, nodeinfo.Layer2TopologyVersionAnnotation, err)
	}
	log.Info("layer2 topology moved", "from", current, "to", v, "runningPods", running)
	return v, nil
}
