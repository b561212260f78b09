// Package annotations is the node agent's part that keeps the node's own
// annotations on its Node.
package annotations

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// annotationKeeper keeps the node's own annotations (its chassis name,
// encapsulation address, zone and gateway: nodeinfo.Info.Annotations) on its
// Node: written once the Node exists, and again whenever they differ, so
// that someone editing or deleting them, or the Node being deleted and
// registered anew (a node leaving the cluster and joining it again), is
// repaired without restarting the agent. The keys cluster-manager writes
// (node ID, subnets) are not its business, and neither are the gateway's
// default-route overrides once the annotation has them: an operator sets
// them there (docs/annotations.md); the agent's --default-route-ecmp /
// --default-route-bfd only give them where the annotation has none.
type annotationKeeper struct {
	client client.Client
	opts   node.Options
	// info is what is published; its chassis name is read from OVS on the
	// first reconcile that can (Options.Info.ChassisID when given).
	info *nodeinfo.Info
}

// Setup registers the annotations part.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	return (&annotationKeeper{client: mgr.GetClient(), opts: opts}).SetupWithManager(mgr)
}

// SetupWithManager watches the agent's own Node.
func (k *annotationKeeper) SetupWithManager(mgr ctrl.Manager) error {
	own := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == k.opts.Node })
	return ctrl.NewControllerManagedBy(mgr).
		Named("node-annotations").
		For(&corev1.Node{}, builder.WithPredicates(own)).
		Complete(k)
}

// Reconcile writes the annotations that differ; a missing Node waits for
// its creation event.
func (k *annotationKeeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := k.client.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	info, err := k.published()
	if err != nil {
		return ctrl.Result{}, err
	}
	wrote, err := kubeobj.PatchAnnotations(ctx, k.client, node, keepOverrides(info.Annotations(), node.Annotations))
	if err != nil {
		return ctrl.Result{}, err
	}
	if wrote {
		ctrl.LoggerFrom(ctx).Info("published node annotations", "chassis", info.ChassisID, "encapIP", info.EncapIP.String())
	}
	return ctrl.Result{}, nil
}

// published returns the node's information as published, reading the
// chassis name from OVS once.
func (k *annotationKeeper) published() (nodeinfo.Info, error) {
	if k.info != nil {
		return *k.info, nil
	}
	info := k.opts.Info
	info.Name = k.opts.Node
	if info.Zone == "" {
		info.Zone = k.opts.Node
	}
	if info.ChassisID == "" {
		id, err := node.SystemID(k.opts.Host)
		if err != nil {
			return nodeinfo.Info{}, fmt.Errorf("node %s: %w", k.opts.Node, err)
		}
		info.ChassisID = id
	}
	k.info = &info
	return info, nil
}

// keepOverrides returns the annotations to publish with the default-route
// overrides the Node's gateway annotation holds put into want's: an
// operator changes them on the annotation (docs/annotations.md), and the
// agent's own flags only give them when the annotation has none. An
// annotation that does not parse carries nothing.
func keepOverrides(want, current map[string]string) map[string]string {
	w, c := want[nodeinfo.GatewayAnnotation], current[nodeinfo.GatewayAnnotation]
	if w == "" || c == "" {
		return want
	}
	var wg, cg nodeinfo.Gateway
	if json.Unmarshal([]byte(w), &wg) != nil || json.Unmarshal([]byte(c), &cg) != nil {
		return want
	}
	if cg.DefaultRouteECMP == nil && cg.DefaultRouteBFD == nil {
		return want
	}
	if cg.DefaultRouteECMP != nil {
		wg.DefaultRouteECMP = cg.DefaultRouteECMP
	}
	if cg.DefaultRouteBFD != nil {
		wg.DefaultRouteBFD = cg.DefaultRouteBFD
	}
	b, err := json.Marshal(wg)
	if err != nil {
		return want
	}
	out := maps.Clone(want)
	out[nodeinfo.GatewayAnnotation] = string(b)
	return out
}
