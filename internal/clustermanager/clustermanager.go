// Package clustermanager assembles ovn-udn's cluster-wide controllers into one
// leader-elected controller-runtime manager: network definitions
// (internal/clustermanager/udncontroller), cluster-wide allocation (internal/clustermanager/netalloc), the
// addresses of pods on networks spanning nodes (internal/clustermanager/podalloc), and the
// EndpointSlices of Services on user-defined networks (internal/clustermanager/epslicemirror),
// ClusterNetworkConnects (internal/clustermanager/connectcontroller), and
// the nodes of EgressIPs' addresses (internal/clustermanager/egressip).
package clustermanager

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	ipamclaims "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/connectcontroller"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressservice"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressstatus"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/epslicemirror"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/registry"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/podalloc"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udncontroller"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/netns"
)

// Options configures the cluster-manager.
type Options struct {
	Cluster config.Cluster
	// LeaderElection makes replicas elect one active cluster-manager through a
	// Lease in LeaderElectionNamespace.
	LeaderElection          bool
	LeaderElectionNamespace string
	// MetricsAddr and HealthAddr are listen addresses; "0" disables them.
	MetricsAddr string
	HealthAddr  string
	// DisableNetworkConnect turns the ClusterNetworkConnect controller off
	// (flag --enable-network-connect=false): connects are then left as they
	// are, neither validated nor allocated.
	DisableNetworkConnect bool
	// RenderEverywhere gives every node a slice of every Layer3 network, for
	// zone controllers started with --render-everywhere. By default a node
	// holds a primary user-defined network's slice only while it uses the
	// network (docs/allocation.md "Slices only where used").
	RenderEverywhere bool
	// InactiveGracePeriod is the zone controllers' --inactive-grace-period:
	// a node keeps a slice of a network it stopped using
	// whereused.ReleaseDelay of it.
	InactiveGracePeriod time.Duration
	// EgressIPHealth probes the egress-assignable nodes' agents (Port 0:
	// off, an egress IP then leaves a node only when it is not Ready).
	EgressIPHealth EgressIPHealth
}

// EgressIPHealth configures egressip.Reachability.
type EgressIPHealth struct {
	// Port is the agents' --egressip-health-port.
	Port int
	// Interval is the time between probes and each probe's timeout;
	// Misses how many unanswered probes in a row move a node's IPs.
	Interval time.Duration
	Misses   int
	// Netns is the network namespace to probe from ("": cluster-manager's
	// own; the sandbox's nodes are reached from theirs).
	Netns string
}

// Scheme returns a scheme with every type the cluster-manager reads or writes.
func Scheme() *runtime.Scheme {
	return kubeobj.NewScheme(v1.AddToScheme, nadv1.AddToScheme, ipamclaims.AddToScheme)
}

// New builds the manager with every cluster-manager controller registered.
func New(cfg *rest.Config, opts Options) (manager.Manager, error) {
	if err := opts.Cluster.Validate(); err != nil {
		return nil, fmt.Errorf("invalid cluster configuration: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  Scheme(),
		LeaderElection:          opts.LeaderElection,
		LeaderElectionID:        "ovn-udn-cluster-manager",
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		Metrics:                 metricsserver.Options{BindAddress: kubeobj.ListenAddr(opts.MetricsAddr)},
		HealthProbeBindAddress:  kubeobj.ListenAddr(opts.HealthAddr),
		// Tests and the sandbox run several managers in one process; controller
		// names then repeat, which only matters for metric names.
		Controller:                    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	c := NewControllers(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorderFor("ovn-udn-cluster-manager"), opts.Cluster, mgr.GetLogger())
	if !opts.RenderEverywhere {
		noEIPs := !kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressIP"))
		c.Nodes.Connects = !opts.DisableNetworkConnect
		c.Nodes.Usage = &whereused.Usage{
			Cache: func(ctx context.Context) activity.NodeView {
				return &whereused.View{Ctx: ctx, Reader: mgr.GetClient(), Pods: mgr.GetClient(), NoConnects: opts.DisableNetworkConnect, NoEgressIPs: noEIPs}
			},
			Live: func(ctx context.Context) activity.NodeView {
				return &whereused.View{Ctx: ctx, Reader: mgr.GetClient(), Pods: mgr.GetAPIReader(), NoConnects: opts.DisableNetworkConnect, NoEgressIPs: noEIPs}
			},
			Delay: whereused.ReleaseDelay(opts.InactiveGracePeriod),
		}
	}
	if !opts.DisableNetworkConnect {
		c.Recovery.Connects = true
		if err := c.Connects.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up ClusterNetworkConnect controller: %w", err)
		}
	}
	if err := c.Networks.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up network controllers: %w", err)
	}
	if err := c.NADs.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up NAD allocation: %w", err)
	}
	if err := c.Nodes.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up node allocation: %w", err)
	}
	if err := c.Pods.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up pod address allocation: %w", err)
	}
	if err := c.Slices.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up EndpointSlice mirroring: %w", err)
	}
	if h := opts.EgressIPHealth; h.Port > 0 {
		c.EgressIPs.Reach = &egressip.Reachability{Port: h.Port, Interval: h.Interval, Misses: h.Misses}
		if h.Netns != "" {
			c.EgressIPs.Reach.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
				return netns.Dial(ctx, h.Netns, network, addr)
			}
		}
	}
	if err := c.EgressIPs.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up EgressIP assignment: %w", err)
	}
	if err := c.Firewalls.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up EgressFirewall status: %w", err)
	}
	if err := c.QoSes.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up EgressQoS status: %w", err)
	}
	if err := c.EgressServices.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up EgressService hosts: %w", err)
	}
	if err := kubeobj.AddHealthChecks(mgr); err != nil {
		return nil, err
	}
	// Served on MetricsAddr with controller-runtime's own (docs/metrics.md).
	metrics.ServeNetworks(mgr.GetClient(), opts.Cluster.MaxNetworks, allocator.LastTunnelKey-allocator.FirstAllocatedKey+1, opts.Cluster.ClusterSubnets)
	return mgr, nil
}

// Controllers are the cluster-manager's controllers, wired to share their
// allocators; New registers them with a manager, and `ovn-udn render` calls
// their reconcilers directly.
type Controllers struct {
	// Networks reconciles UserDefinedNetworks and ClusterUserDefinedNetworks
	// (udncontroller.UDNReconciler and CUDNReconciler wrap it).
	Networks *udncontroller.Controller
	NADs     *netalloc.NADController
	Nodes    *netalloc.NodeController
	Pods     *podalloc.Controller
	// Slices mirrors the EndpointSlices of Services whose namespace's
	// primary network is a user-defined network.
	Slices *epslicemirror.Controller
	// Connects validates and allocates ClusterNetworkConnects.
	Connects *connectcontroller.Controller
	// EgressIPs gives egress IPs to nodes.
	EgressIPs *egressip.Controller
	// Firewalls merges the zones' EgressFirewall messages into their
	// status.
	Firewalls *egressstatus.Firewalls
	// QoSes merges the zones' EgressQoS conditions into their status.
	QoSes *egressstatus.QoSes
	// EgressServices elects EgressServices' hosts.
	EgressServices *egressservice.Controller
	// Recovery rebuilds the allocators' state from the API once.
	Recovery *registry.Recovery
}

// NewControllers wires the controllers over a client (reads and writes), a
// reader that reads the API directly (recovery at start), and a recorder.
func NewControllers(c client.Client, reader client.Reader, recorder record.EventRecorder, cfg config.Cluster, logger logr.Logger) *Controllers {
	networks := registry.NewNetworks(cfg.MaxNetworks)
	recovery := &registry.Recovery{Reader: reader, Networks: networks, Log: logger.WithName("recovery")}
	return &Controllers{
		Networks: &udncontroller.Controller{Client: c, Config: cfg, Networks: networks, Recovery: recovery, Recorder: recorder},
		NADs:     &netalloc.NADController{Client: c, Networks: networks, Recovery: recovery, Recorder: recorder},
		Nodes: &netalloc.NodeController{Client: c, Reader: reader, Config: cfg, Nodes: netalloc.NewNodes(cfg.MaxNodeID()),
			Recorder: recorder, Reporter: &netalloc.SubnetReporter{Client: c, Recorder: recorder}},
		Pods:           &podalloc.Controller{Client: c, Reader: reader, Cluster: cfg, Recorder: recorder},
		Slices:         &epslicemirror.Controller{Client: c},
		Connects:       &connectcontroller.Controller{Client: c, Cluster: cfg, Networks: networks, Recovery: recovery, Recorder: recorder},
		EgressIPs:      &egressip.Controller{Client: c, Recorder: recorder},
		Firewalls:      &egressstatus.Firewalls{Client: c, Recorder: recorder},
		QoSes:          &egressstatus.QoSes{Client: c, Recorder: recorder},
		EgressServices: &egressservice.Controller{Client: c, Recorder: recorder},
		Recovery:       recovery,
	}
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := New(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
