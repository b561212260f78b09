// Package cli defines the ovn-udn command line: one file per subcommand, each
// a thin layer that parses flags and calls the package that does the work.
package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// NewRootCommand returns the ovn-udn command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ovn-udn",
		Short: "User-defined networks for Kubernetes on OVN",
		Long: `ovn-udn gives Kubernetes tenants isolated networks on OVN.

Its parts run as subcommands of this one binary: the cluster-manager (cluster-wide
allocation and network definitions), the per-node zone controller, the node agent,
an offline renderer, and a local sandbox cluster.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newVersionCommand(), newClusterManagerCommand(), newControllerCommand(), newNodeCommand(), newRenderCommand(), newSandboxCommand(), newExplainCommand())
	for _, p := range planned {
		root.AddCommand(p.command())
	}
	return root
}

// plannedCommand is a subcommand whose place in the CLI is fixed but whose
// implementation has not landed yet. It is hidden from help and says so when run.
type plannedCommand struct {
	name, short string
}

var planned = []plannedCommand{}

func (p plannedCommand) command() *cobra.Command {
	return &cobra.Command{
		Use:    p.name,
		Short:  p.short + " (not implemented yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("%s is not implemented yet", p.name)
		},
	}
}
