package cli

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/node/cleanup"
	"github.com/ovn-udn/ovn-udn/internal/node/pods"
)

// newNodeCleanupCommand is `ovn-udn node cleanup`, which config/uninstall
// runs on every node once ovn-udn is deleted.
func newNodeCleanupCommand() *cobra.Command {
	o := cleanup.Options{ConfFile: pods.ConfFile, MasqueradeNextHops: config.Default().MasqueradeNextHops()}
	var toolsDir string
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what ovn-udn left on this node once uninstalled (config/uninstall runs it)",
		Long: `Remove what ovn-udn leaves on a node: the CNI plugin and its configuration, the
integration bridge with the pods' host-side interfaces and the management
port, the external bridges' flows and patch ports (each bridge becomes a plain
NORMAL switch again), the host's routes to the service CIDRs through the first
one, the host-isolation nftables table, the chassis settings on Open vSwitch,
and the zone's
databases and sockets. Run it only once ovn-udn's pods are gone: the node
agent and the zone would put everything back. It leaves the operator's
bridges, their uplinks, ovn-bridge-mappings and system-id.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Command, _ = tools(toolsDir)
			return cleanup.Run(o, func(format string, args ...any) {
				fmt.Fprintf(cmd.OutOrStdout(), format+"\n", args...)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.OVSDB, "ovsdb", "unix:/var/run/openvswitch/db.sock", "the node's Open vSwitch database")
	fs.StringVar(&o.Bridge, "bridge", "br-int", "the integration bridge")
	fs.StringSliceVar(&o.ExternalBridges, "external-bridge", []string{"br-ex"}, "the external bridges whose flows the node agent kept (repeat or separate with commas)")
	fs.StringVar(&o.CNIConfDir, "cni-conf-dir", "/etc/cni/net.d", "the node's CNI configuration directory")
	fs.StringVar(&o.CNIBinDir, "cni-bin-dir", "/opt/cni/bin", "the node's CNI plugin directory")
	fs.StringVar(&o.DBDir, "db-dir", "/var/lib/ovn-udn", "the zone's database directory")
	fs.StringVar(&o.RunDir, "run-dir", "/var/run/ovn", "the zone's socket directory")
	fs.StringVar(&toolsDir, "tools-dir", "", "directory holding ip, ovs-vsctl and ovs-ofctl (default: $PATH)")
	fs.Var(&hopsFlag{hops: &o.MasqueradeNextHops}, "masquerade-next-hop", "the next hops of the host's routes to the service CIDRs that the node agent made (repeat; default: the cluster's default masquerade subnets')")
	return cmd
}

// hopsFlag is a repeatable address flag whose first use replaces the
// default.
type hopsFlag struct {
	hops *[]netip.Addr
	set  bool
}

func (f *hopsFlag) String() string {
	var out []string
	for _, a := range *f.hops {
		out = append(out, a.String())
	}
	return strings.Join(out, ",")
}

func (f *hopsFlag) Set(v string) error {
	a, err := netip.ParseAddr(v)
	if err != nil {
		return fmt.Errorf("%q is not an address", v)
	}
	if !f.set {
		*f.hops, f.set = nil, true
	}
	*f.hops = append(*f.hops, a)
	return nil
}

func (f *hopsFlag) Type() string { return "address" }
