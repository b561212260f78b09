package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

func newRenderCommand() *cobra.Command {
	opts := render.Options{Cluster: config.Default()}
	var files []string
	var output string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "render -f FILE|DIR... [--zone NODE] [-o yaml|json|nbctl|dot|svg]",
		Short: "Show what manifests become: NADs, allocations, conditions, pod addresses and OVN rows, offline",
		Long: `Render reads Namespaces, Nodes, UserDefinedNetworks, ClusterUserDefinedNetworks,
NetworkAttachmentDefinitions, ClusterNetworkConnects, Pods, Services,
EndpointSlices and NetworkPolicies from manifests and runs the controllers'
own code over them, with no API server and no OVN: validation (the CRDs' schemas
and CEL rules), cluster-manager's allocation, and each zone's pod addressing and
topology. It prints the NADs that would be created with their allocation, the
Node and Pod annotations, the networks' and connects' conditions, the Events,
and each zone's Northbound rows grouped by network (then connects, policies). -o dot draws each zone's networks (routers,
switches, their ports and addresses) as a Graphviz graph; -o svg runs Graphviz's
dot command on it.

Values already in the input (a Node's node-id or subnets, a NAD's network-id, a
Pod's addresses) are kept; the rest are allocated deterministically: the same
input gives the same output. Nodes no node agent has annotated get assumed
agent annotations (reported as warnings).

Objects that the API server would refuse are reported with their file and the
reason, and the rest is still rendered; the exit status is then 1.`,
		Example: `  ovn-udn render -f examples/
  ovn-udn render -f examples/tenant-layer3.yaml --zone node1 -o nbctl
  ovn-udn render -f examples/tenant-layer3.yaml --zone node1 -o svg > node1.svg
  ovn-udn render -f examples/tenant-layer2.yaml --zone node1 -o nbctl --layer2-topology-version 1.0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("-f is required: manifest files or directories")
			}
			if verbose {
				opts.Log = zap.New(zap.WriteTo(cmd.ErrOrStderr()), zap.UseDevMode(true))
			}
			ctrl.SetLogger(opts.Log) // controller-runtime's own logs, if any
			in, err := render.Load(files...)
			if err != nil {
				return err
			}
			res, err := render.Run(cmd.Context(), in, opts)
			if err != nil {
				return err
			}
			render.WriteProblems(cmd.ErrOrStderr(), res)
			if err := render.Write(cmd.OutOrStdout(), res, output); err != nil {
				return err
			}
			if res.Invalid() {
				return exitCode(1)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVarP(&files, "filename", "f", nil, "manifest files or directories (repeat, or separate with commas)")
	fs.StringSliceVar(&opts.Zones, "zone", nil, "render only these zones' Northbound rows (node names); every zone when empty")
	fs.StringSliceVar(&opts.Nodes, "nodes", nil, "node names to add to the input's Nodes (those pods run on are added anyway)")
	fs.StringVarP(&output, "output", "o", "yaml", "output format: "+strings.Join(render.Formats, ", "))
	fs.BoolVarP(&verbose, "verbose", "v", false, "print the controllers' logs on stderr")
	fs.StringVar(&opts.Layer2TopologyVersion, "layer2-topology-version", "", "the Layer2 topology of nodes whose manifests say none (k8s.ovn.org/layer2-topology-version): 1.0 shows the old topology, 2.0 (the default) the transit router; a Node manifest with the annotation mixes them and shows the upgrade ports")
	fs.BoolVar(&opts.RenderEverywhere, "render-everywhere", false, "render every network in every zone, as zone controllers with --render-everywhere do; by default a primary user-defined network is rendered only in the zones of nodes its pods (or a node-port service) use")
	opts.Cluster.AddFlags(fs)
	// The zone controllers' default-route policy: give render the same.
	gw := config.DefaultGateway()
	opts.Gateway = &gw
	gw.AddFlags(fs)
	return cmd
}
