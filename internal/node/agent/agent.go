// Package agent is `ovn-udn node`: the per-node agent, assembled from its
// parts. Parts lists them, in the order they are set up; each lives in its
// own package under internal/node and declares its own watches:
//
//   - annotations: the node's annotations the controllers read (chassis,
//     zone, addresses, gateway);
//   - pods: ovn-udn's CNI plugin served to the node's container runtime
//     (an ADD plumbs a pod's interfaces into the namespace the runtime made
//     once its pod-networks annotation is complete, and returns when
//     ovn-controller has installed them; a DEL, or the pod's going away,
//     unplumbs them);
//   - mgmtport: the node's side of the default network's management port;
//   - gatewayflows: each external bridge's flows (shared gateway mode);
//   - egresshealth: the answer to cluster-manager's egress-node probes;
//   - vmmigration: the gateways' announcements to a VM that just migrated
//     here;
//   - hostisolation: only the kubelet reaches the default interface of a
//     pod with a primary user-defined network, and host-network pods of
//     such a namespace reach only their networks' ClusterIPs.
//
// The kubelet and the runtime own everything else of a pod: its namespace,
// containers and status.
package agent

import (
	"context"
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/annotations"
	"github.com/ovn-udn/ovn-udn/internal/node/egresshealth"
	"github.com/ovn-udn/ovn-udn/internal/node/gatewayflows"
	"github.com/ovn-udn/ovn-udn/internal/node/hostisolation"
	"github.com/ovn-udn/ovn-udn/internal/node/mgmtport"
	"github.com/ovn-udn/ovn-udn/internal/node/pods"
	"github.com/ovn-udn/ovn-udn/internal/node/vmmigration"
)

// Parts are the agent's features.
var Parts = []node.Part{
	{Name: "annotations", Setup: annotations.Setup},
	{Name: "pods", Setup: pods.Setup},
	{Name: "management-port", Setup: mgmtport.Setup},
	{Name: "gateway-flows", Enabled: gatewayflows.Enabled, Setup: gatewayflows.Setup},
	{Name: "egressip-health", Enabled: egresshealth.Enabled, Setup: egresshealth.Setup},
	{Name: "vm-migration", Setup: vmmigration.Setup},
	{Name: "host-isolation", Setup: hostisolation.Setup},
}

// Scheme returns the scheme the agent needs.
func Scheme() *runtime.Scheme { return kubeobj.NewScheme(nadv1.AddToScheme, v1.AddToScheme) }

// Run runs the agent until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts node.Options) error {
	mgr, err := Build(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Build returns a manager with every enabled part set up, not started. Its
// cache holds the node's own pods and its own Node only.
func Build(cfg *rest.Config, opts node.Options) (ctrl.Manager, error) {
	if opts.Node == "" {
		return nil, fmt.Errorf("node agent: the node name is required")
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: kubeobj.ListenAddr(opts.MetricsAddr)},
		HealthProbeBindAddress: kubeobj.ListenAddr(opts.HealthAddr),
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr(true)},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", opts.Node)},
			// The agent reads and writes its own Node only.
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.Node)},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("node agent: %w", err)
	}
	for _, p := range Parts {
		if p.Enabled != nil && !p.Enabled(opts) {
			continue
		}
		if err := p.Setup(mgr, opts); err != nil {
			return nil, fmt.Errorf("node agent: %s: %w", p.Name, err)
		}
	}
	if err := kubeobj.AddHealthChecks(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
}

func ptr[T any](v T) *T { return &v }
