package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/memlimit"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

func newControllerCommand() *cobra.Command {
	opts := zone.Options{Cluster: config.Default()}
	var kube kubeFlags
	connects := true
	memoryLimit := memlimit.Auto
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the zone controller that renders networks into one node's OVN zone",
		Long: `Run the zone controller of one OVN interconnect zone (one node): it keeps the
zone's Northbound equal to the topology of every network (the default network,
and every NetworkAttachmentDefinition with its allocation), and registers the
other nodes' chassis in the zone's Southbound; it also renders the zone's
Services, NetworkPolicies and ClusterNetworkConnects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Zone == "" || opts.NB == "" || opts.SB == "" {
				return fmt.Errorf("--zone, --nb and --sb are required")
			}
			ctrl.SetLogger(daemonLogger())
			if err := applyMemoryLimit(memoryLimit); err != nil {
				return err
			}
			cfg, err := kube.config()
			if err != nil {
				return err
			}
			opts.OVSDBLogger = ctrl.Log.WithName("ovsdb").V(5)
			opts.DisableNetworkConnect = !connects
			return zone.Run(cmd.Context(), cfg, opts)
		},
	}
	fs := cmd.Flags()
	kube.add(fs)
	fs.StringVar(&memoryLimit, "memory-limit", memoryLimit, memlimit.Flag)
	fs.StringVar(&opts.Zone, "zone", "", "the zone's name: the node's name")
	fs.StringVar(&opts.NB, "nb", "", "the zone's Northbound database, e.g. tcp:127.0.0.1:6641")
	fs.StringVar(&opts.SB, "sb", "", "the zone's Southbound database, e.g. tcp:127.0.0.1:6642")
	fs.IntVar(&opts.Workers, "workers", 4, "networks reconciled at once")
	fs.StringVar(&opts.HealthAddr, "health-addr", "0", "/healthz and /readyz listen address (0 disables)")
	fs.BoolVar(&connects, "enable-network-connect", true, "render ClusterNetworkConnects (connect routers) in the zone")
	fs.BoolVar(&opts.RenderEverywhere, "render-everywhere", false, "render every network on this node; by default a primary user-defined network is rendered only on the nodes where it is used (docs/topology.md)")
	fs.DurationVar(&opts.InactiveGracePeriod, "inactive-grace-period", activity.DefaultGracePeriod, "how long a network stays on a node after its last pod there is gone")
	fs.StringVar(&opts.DNSServer, "dns-server", "", "DNS server (host:port) resolving EgressFirewall dnsName rules; default: the first nameserver of /etc/resolv.conf")
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", "0", "/metrics listen address, e.g. 127.0.0.1:9412 (0 disables; see docs/metrics.md)")
	fs.StringVar(&opts.Layer2TopologyVersion, "layer2-topology-version", nodeinfo.Layer2TopologyV2, "the topology to render Layer2 primary networks in on this node: 2.0 (transit router), or 1.0 to play a release before it; the node moves from 1.0 to 2.0 only at a start with no pod on such networks (docs/topology.md, \"Changing a topology\")")
	fs.DurationVar(&opts.ResyncPeriod, "resync-period", zone.DefaultResyncPeriod, "how often every network is reconciled again whole, putting back rows of the zone someone else changed (0 never; docs/reliability.md)")
	opts.Cluster.AddFlags(fs)
	gw := config.DefaultGateway()
	opts.Gateway = &gw
	gw.AddFlags(fs)
	return cmd
}

// applyMemoryLimit sets the runtime's soft memory limit as --memory-limit
// says (package memlimit) and logs it.
func applyMemoryLimit(value string) error {
	limit, why, err := memlimit.Apply(value)
	if err != nil {
		return err
	}
	ctrl.Log.WithName("memory").Info("Go memory limit", "bytes", limit, "why", why)
	return nil
}
