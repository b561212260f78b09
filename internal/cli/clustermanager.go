package cli

import (
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/memlimit"
)

func newClusterManagerCommand() *cobra.Command {
	opts := clustermanager.Options{Cluster: config.Default(), MetricsAddr: "0", HealthAddr: "0"}
	var kube kubeFlags
	connects := true
	memoryLimit := memlimit.Auto
	cmd := &cobra.Command{
		Use:   "cluster-manager",
		Short: "Run the cluster-wide controllers: network definitions and allocation",
		Long: `Run the cluster-wide controllers: it renders UserDefinedNetworks and
ClusterUserDefinedNetworks into NetworkAttachmentDefinitions, and allocates what
must be unique across the cluster (network IDs, tunnel keys, node IDs, node
subnets, connect routers), keeping it in the Kubernetes API, and validates
and allocates ClusterNetworkConnects. A node holds a slice of a primary
user-defined network only while it uses the network, as zone controllers
render it (--render-everywhere on both for every node).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctrl.SetLogger(daemonLogger())
			if err := applyMemoryLimit(memoryLimit); err != nil {
				return err
			}
			cfg, err := kube.config()
			if err != nil {
				return err
			}
			opts.DisableNetworkConnect = !connects
			return clustermanager.Run(cmd.Context(), cfg, opts)
		},
	}
	fs := cmd.Flags()
	kube.add(fs)
	fs.StringVar(&memoryLimit, "memory-limit", memoryLimit, memlimit.Flag)
	fs.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect one active cluster-manager among replicas")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", "kube-system", "namespace of the leader-election Lease")
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", opts.MetricsAddr, "metrics listen address (0 disables)")
	fs.StringVar(&opts.HealthAddr, "health-addr", opts.HealthAddr, "health probe listen address (0 disables)")
	fs.BoolVar(&connects, "enable-network-connect", true, "validate and allocate ClusterNetworkConnects (zones connect networks only when this is on)")
	fs.BoolVar(&opts.RenderEverywhere, "render-everywhere", false, "give every node a slice of every Layer3 network, for zone controllers started with --render-everywhere; by default a node holds a primary user-defined network's slice only while it uses the network")
	fs.DurationVar(&opts.InactiveGracePeriod, "inactive-grace-period", activity.DefaultGracePeriod, "the zone controllers' --inactive-grace-period: a node keeps a slice of a network it stopped using a quarter longer than this")
	fs.IntVar(&opts.EgressIPHealth.Port, "egressip-health-port", egressip.DefaultHealthPort, "probe the egress-assignable nodes' agents on this TCP port (their --egressip-health-port), and move egress IPs off a node that stops answering (0: only off a node that is not Ready)")
	fs.DurationVar(&opts.EgressIPHealth.Interval, "egressip-health-interval", 100*time.Millisecond, "time between two probes of an egress node (docs/egressip.md \"Failover\")")
	fs.IntVar(&opts.EgressIPHealth.Misses, "egressip-health-misses", 3, "intervals in a row without an answer after which an egress node's IPs move (and a silence beyond its recent answers' round-trip time, at most 30 intervals)")
	fs.StringVar(&opts.EgressIPHealth.Netns, "egressip-health-netns", "", "network namespace to probe egress nodes from (default: cluster-manager's own)")
	opts.Cluster.AddFlags(fs)
	return cmd
}
