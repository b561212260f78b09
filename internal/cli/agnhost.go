package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ovn-udn/ovn-udn/internal/agnhost"
)

func newAgnhostCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agnhost",
		Short: "Test servers like the Kubernetes e2e image agnhost (a sandbox pod's workload)",
		Long: `Test servers like the Kubernetes e2e image agnhost, with its flags: the node
agent runs them in the sandbox for pods whose image is agnhost (no container
runtime there), so a Deployment behind a Service answers.`,
	}
	var port int
	var tcp, udp bool
	serve := &cobra.Command{
		Use:   "serve-hostname",
		Short: "Answer with the pod's name (HTTP; raw TCP with --tcp; UDP with --udp)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return agnhost.ServeHostname(cmd.Context(), port, tcp, udp)
		},
	}
	serve.Flags().IntVar(&port, "port", 9376, "port to serve on")
	serve.Flags().BoolVar(&tcp, "tcp", false, "serve raw TCP")
	serve.Flags().BoolVar(&udp, "udp", false, "serve UDP")
	// Real agnhost serves raw TCP with --tcp --http=false; here --tcp or
	// --udp alone replace HTTP, and --http is accepted for the same manifests.
	serve.Flags().Bool("http", true, "serve HTTP unless --tcp or --udp is given (accepted for agnhost's manifests)")
	var httpPort, udpPort int
	netexec := &cobra.Command{
		Use:   "netexec",
		Short: "Serve HTTP (/hostname, /echo?msg=, /clientip) and a UDP echo",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return agnhost.NetExec(cmd.Context(), httpPort, udpPort)
		},
	}
	netexec.Flags().IntVar(&httpPort, "http-port", 8080, "HTTP port")
	netexec.Flags().IntVar(&udpPort, "udp-port", 8081, "UDP port (0: none)")
	var timeout time.Duration
	get := &cobra.Command{
		Use:   "get URL",
		Short: "Print the body of an HTTP GET (a client for netexec and serve-hostname)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			body, err := agnhost.Get(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), body)
			return nil
		},
	}
	get.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "give up after")
	cmd.AddCommand(serve, netexec, get)
	return cmd
}
