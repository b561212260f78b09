// Package clustermanager assembles ovn-udn's cluster-wide controllers into one
// leader-elected controller-runtime manager: network definitions
// (internal/udncontroller), cluster-wide allocation (internal/netalloc), and
// the addresses of pods on networks spanning nodes (internal/podalloc).
package clustermanager

import (
	"context"
	"fmt"

	ipamclaims "github.com/k8snetworkplumbingwg/ipamclaims/pkg/crd/ipamclaims/v1alpha1"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/netalloc"
	"github.com/ovn-udn/ovn-udn/internal/podalloc"
	"github.com/ovn-udn/ovn-udn/internal/udncontroller"
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
}

// Scheme returns a scheme with every type the cluster-manager reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, nadv1.AddToScheme, ipamclaims.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
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
		Metrics:                 metricsserver.Options{BindAddress: orDisabled(opts.MetricsAddr)},
		HealthProbeBindAddress:  orDisabled(opts.HealthAddr),
		// Tests and the sandbox run several managers in one process; controller
		// names then repeat, which only matters for metric names.
		Controller:                    ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	recorder := mgr.GetEventRecorderFor("ovn-udn-cluster-manager")
	networks := netalloc.NewNetworks(opts.Cluster.MaxNetworks)
	recovery := &netalloc.Recovery{Reader: mgr.GetAPIReader(), Networks: networks, Log: mgr.GetLogger().WithName("recovery")}
	c := &udncontroller.Controller{
		Client:   mgr.GetClient(),
		Config:   opts.Cluster,
		Networks: networks,
		Recovery: recovery,
		Recorder: recorder,
	}
	if err := c.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up network controllers: %w", err)
	}
	nads := &netalloc.NADController{Client: mgr.GetClient(), Networks: networks, Recovery: recovery, Recorder: recorder}
	if err := nads.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up NAD allocation: %w", err)
	}
	nodes := &netalloc.NodeController{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		Config:   opts.Cluster,
		Nodes:    netalloc.NewNodes(opts.Cluster.MaxNodeID()),
		Recorder: recorder,
		Reporter: &netalloc.SubnetReporter{Client: mgr.GetClient(), Recorder: recorder},
	}
	if err := nodes.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up node allocation: %w", err)
	}
	pods := &podalloc.Controller{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Cluster: opts.Cluster, Recorder: recorder}
	if err := pods.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up pod address allocation: %w", err)
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := New(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func orDisabled(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}
