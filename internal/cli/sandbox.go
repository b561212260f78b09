package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

func newSandboxCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local multi-node cluster with a real API server and real OVN",
		Long: `Run a local cluster on this machine: a real kube-apiserver and etcd, and per node
an OVN zone, Open vSwitch (userspace datapath) and ovn-controller in the node's
own network namespace, a containerd (with runc) and a kubelet, the node agent
(serving ovn-udn's CNI plugin to containerd) and the zone controller; one
cluster-manager, kube-controller-manager and kube-scheduler. The images pods
run (pause, agnhost, CoreDNS) are built here and imported at up: there is no
registry. docs/sandbox.md has the details.

Needs root (network namespaces) and the components make deps installs.`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", sandbox.DefaultDir(), "state directory (kubeconfig, logs, PIDs); $"+sandbox.DirEnv+" sets the default")

	opts := sandbox.Options{Nodes: 3, Uplinks: 1}
	var files []string
	up := &cobra.Command{
		Use:   "up",
		Short: "Start a sandbox in the background and wait until it is ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Dir = dir
			if err := sandbox.Up(opts, cmd.OutOrStdout()); err != nil {
				return err
			}
			if len(files) > 0 {
				if err := sandbox.Apply(cmd.Context(), dir, cmd.OutOrStdout(), files...); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", sandbox.NewLayoutMust(dir).Kubeconfig())
			return nil
		},
	}
	up.Flags().IntVar(&opts.Nodes, "nodes", opts.Nodes, "number of nodes (1-9)")
	addUplinkFlags(up.Flags(), &opts)
	up.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifests (files or directories) to apply once ready")

	down := &cobra.Command{
		Use:   "down",
		Short: "Stop the sandbox and remove its processes, namespaces and state (also after a crash)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sandbox.Down(dir, cmd.OutOrStdout())
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the sandbox's nodes and processes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sandbox.Status(dir, cmd.OutOrStdout())
		},
	}
	kubeconfig := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the path of the administrator's kubeconfig",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := sandbox.NewLayoutMust(dir)
			if _, err := sandbox.ReadState(l); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), l.Kubeconfig())
			return nil
		},
	}
	var applyFiles []string
	apply := &cobra.Command{
		Use:   "apply -f FILE|DIR...",
		Short: "Create or update the objects of manifests (namespaces and networks first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(applyFiles) == 0 {
				return fmt.Errorf("-f is required")
			}
			return sandbox.Apply(cmd.Context(), dir, cmd.OutOrStdout(), applyFiles...)
		},
	}
	apply.Flags().StringSliceVarP(&applyFiles, "filename", "f", nil, "manifests (files or directories)")
	var external bool
	var onNode string
	exec := &cobra.Command{
		Use:   "exec {NAMESPACE/POD | --external | --node NODE} -- COMMAND [ARG...]",
		Short: "Run a command in a pod's network namespace, the outside world's, or a node's",
		Long: `Run a command in a pod's network namespace; with --external, in the outside
world's (the nodes' next hop ` + sandbox.ExternalRouterIP + `, with echo servers on ` + sandbox.ExternalServerIP + `
port ` + fmt.Sprint(sandbox.ExternalPort) + ` answering with the client address they saw); with --node, in
a node's (its host network).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if external || onNode != "" {
				if external && onNode != "" {
					return fmt.Errorf("--external and --node exclude each other")
				}
				return exited(sandbox.ExecNetns(cmd.Context(), dir, onNode, args, os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()))
			}
			if len(args) < 2 {
				return fmt.Errorf("want NAMESPACE/POD -- COMMAND")
			}
			return exited(sandbox.Exec(cmd.Context(), dir, args[0], args[1:], os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
	exec.Flags().BoolVar(&external, "external", false, "run in the outside world's network namespace")
	exec.Flags().StringVar(&onNode, "node", "", "run in this node's network namespace (host network)")
	supervise := &cobra.Command{
		Use:    "supervise",
		Short:  "Run a sandbox in the foreground (up starts this detached)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Dir = dir
			return sandbox.Supervise(cmd.Context(), opts)
		},
	}
	supervise.Flags().IntVar(&opts.Nodes, "nodes", opts.Nodes, "number of nodes")
	addUplinkFlags(supervise.Flags(), &opts)
	kubectl := &cobra.Command{
		Use:   "kubectl -- [ARG...]",
		Short: "Run the real kubectl (installed by make deps) against the sandbox",
		Long: `Run kubectl, as make deps installed it, with the sandbox administrator's
kubeconfig: ovn-udn sandbox kubectl -- get pods -A -o wide (the -- keeps
kubectl's flags from being read as this command's).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return exited(sandbox.Kubectl(dir, args, os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()))
		},
	}
	env := &cobra.Command{
		Use:   "env",
		Short: "Print shell exports that point kubectl (PATH) and KUBECONFIG at the sandbox",
		Long:  `eval "$(ovn-udn sandbox env)" then use kubectl as usual.`,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sandbox.Env(dir, cmd.OutOrStdout())
		},
	}
	demo := sandboxDemoCommand(&dir)
	cmd.AddCommand(up, down, status, kubeconfig, apply, exec, kubectl, env, supervise, demo, sandboxServeCommand(), sandboxProbeCommand(), sandboxProbeEveryCommand(), sandboxProbeManyCommand(), sandboxHoldCommand(), sandboxBulkCommand(), sandboxAnnounceCommand())
	return cmd
}

func sandboxDemoCommand(dir *string) *cobra.Command {
	opts := demo.DemoOptions{Options: sandbox.Options{Nodes: 3, Uplinks: 3, UplinkBridges: 1}}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Bring up a sandbox, apply the examples and measure who reaches whom",
		Long: `Bring up a sandbox, apply manifests (default: examples/), wait for their pods,
and print a connectivity matrix measured with real ping and TCP from inside the
pods — same network on one node and across nodes, tenant to tenant, UDN pod to
default-network pod — with the expected verdict beside each. Exits non-zero on
any unexpected result. Tears the sandbox down unless --keep.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Dir = *dir
			return demo.Demo(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().IntVar(&opts.Nodes, "nodes", opts.Nodes, "number of nodes (the examples use 3)")
	cmd.Flags().StringSliceVarP(&opts.Manifests, "filename", "f", []string{"examples"}, "manifests (files or directories)")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "leave the sandbox running afterwards")
	cmd.Flags().StringVar(&opts.HTML, "html", "", "also write the connectivity matrix to this file as a colored HTML table")
	addUplinkFlags(cmd.Flags(), &opts.Options)
	return cmd
}

func sandboxServeCommand() *cobra.Command {
	var listens []string
	var reply string
	cmd := &cobra.Command{
		Use:    "serve",
		Short:  "Answer TCP connections and UDP datagrams with a fixed line (run in a pod by the demo and the tests)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.ServeAll(cmd.Context(), listens, reply)
		},
	}
	cmd.Flags().StringArrayVar(&listens, "listen", []string{fmt.Sprintf("[::]:%d", demo.ProbePort)},
		"where to listen, repeatable: tcp:ADDR, udp:ADDR, or ADDR for TCP")
	cmd.Flags().StringVar(&reply, "reply", "", "the line to answer")
	return cmd
}

func sandboxProbeManyCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe-many",
		Short: "Probe many targets at once (run in a pod by the tests)",
		Long: `Read a JSON list of {"address", "protocol" (tcp or udp), "port"} on standard
input, probe them all at once (TCP: connect and read a line; UDP: send a
datagram, resent twice, and wait for the answer), and print the list with
each "answer" or "error" as JSON.`,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var targets []demo.ReachTarget
			if err := json.NewDecoder(cmd.InOrStdin()).Decode(&targets); err != nil {
				return fmt.Errorf("reading the targets: %w", err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(demo.ProbeMany(cmd.Context(), targets, timeout))
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Second, "how long each probe waits for its answer")
	return cmd
}

func sandboxProbeCommand() *cobra.Command {
	var timeout time.Duration
	var localPort, count int
	var source string
	var dscp bool
	cmd := &cobra.Command{
		Use:    "probe HOST:PORT",
		Short:  "Connect over TCP and print the server's answer (run in a pod by the demo)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dscp {
				d, err := demo.ProbeDSCP(args[0], timeout)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "dscp", d)
				return nil
			}
			if count <= 1 {
				answer, err := demo.ProbeFrom(args[0], source, localPort, timeout)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), answer)
				return nil
			}
			// Several connections at once, one attempt each (unlike
			// probe-many, which tries again): a line each, in order.
			answers := make([]string, count)
			var wg sync.WaitGroup
			for i := range answers {
				wg.Go(func() {
					a, err := demo.ProbeFrom(args[0], source, localPort, timeout)
					if err != nil {
						a = "error: " + err.Error()
					}
					answers[i] = a
				})
			}
			wg.Wait()
			for _, a := range answers {
				fmt.Fprintln(cmd.OutOrStdout(), a)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "connect and read timeout")
	cmd.Flags().IntVar(&localPort, "local-port", 0, "connect from this source port (0: any)")
	cmd.Flags().StringVar(&source, "source", "", "connect from this address (empty: any)")
	cmd.Flags().IntVar(&count, "count", 1, "open this many connections at once (one attempt each), printing each answer or \"error: ...\" on a line")
	cmd.Flags().BoolVar(&dscp, "dscp", false, "send one UDP datagram to a DSCP server (sandbox serve --listen dscp:...) and print the DSCP it saw")
	return cmd
}

func sandboxAnnounceCommand() *cobra.Command {
	var iface string
	var onLine bool
	cmd := &cobra.Command{
		Use:    "announce",
		Short:  "Send the RARP a live-migrated VM sends from its interface (run in a pod by the tests and the demo)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if onLine {
				return demo.AnnounceWhen(iface, cmd.OutOrStdout(), cmd.InOrStdin())
			}
			return demo.Announce(iface)
		},
	}
	cmd.Flags().StringVar(&iface, "iface", "ovn-udn1", "the interface to send it from")
	cmd.Flags().BoolVar(&onLine, "on-line", false, "print \"ready\" once the socket is open, then send when a line comes on standard input")
	return cmd
}

func sandboxProbeEveryCommand() *cobra.Command {
	var interval, timeout, duration time.Duration
	cmd := &cobra.Command{
		Use:    "probe-every HOST:PORT",
		Short:  "Connect over TCP every --interval for --duration, printing each attempt's start (ms) and the server's answer or error (run in a pod by the tests)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), duration)
			defer cancel()
			demo.ProbeEvery(ctx, args[0], interval, timeout, cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 50*time.Millisecond, "time between two attempts")
	cmd.Flags().DurationVar(&timeout, "timeout", 500*time.Millisecond, "each attempt's connect and read timeout")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "how long to go on")
	return cmd
}

func sandboxHoldCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "hold HOST:PORT",
		Short:  "Hold one TCP connection: print the server's answer, then send each line of standard input and print its echo (run in a pod by the tests)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return demo.Hold(args[0], cmd.InOrStdin(), cmd.OutOrStdout(), timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long each answer may take")
	return cmd
}

func sandboxBulkCommand() *cobra.Command {
	var timeout time.Duration
	var bytes int64
	cmd := &cobra.Command{
		Use:    "bulk HOST:PORT",
		Short:  "Send bytes to a sink over one TCP connection and print how long it took, as JSON (run in a pod by the benchmarks)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := demo.Bulk(args[0], bytes, timeout)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
		},
	}
	cmd.Flags().Int64Var(&bytes, "bytes", 256<<20, "how many bytes to send")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long the whole transfer may take")
	return cmd
}

// exited turns a command's exit code into ovn-udn's: nil for 0, exitCode
// otherwise; err when the command could not run.
func exited(code int, err error) error {
	if err != nil {
		return err
	}
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// exitCode is an error that makes ovn-udn exit with a command's exit code.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// ExitCode is the process exit code for an error returned by a command, and
// whether the error is worth printing (a command's own exit status is not).
func ExitCode(err error) (int, bool) {
	var e exitCode
	if errors.As(err, &e) {
		return int(e), false
	}
	return 1, true
}

// addUplinkFlags adds the flags up, supervise and demo share: the outside
// routers', the controllers' timing and deploy mode.
func addUplinkFlags(fs *pflag.FlagSet, opts *sandbox.Options) {
	fs.IntVar(&opts.Uplinks, "uplinks", opts.Uplinks, fmt.Sprintf("outside routers the nodes route through, 192.168.100.1 to .K (1-%d); with 2 or more every gateway router has ECMP default routes and the routers run BFD with every node", sandbox.MaxUplinks))
	fs.IntVar(&opts.UplinkBridges, "uplink-bridges", opts.UplinkBridges, "how many of the routers (the last ones) are each on a segment of their own, 192.168.(100+k).0/24, reached through a further bridge br-ex<k> on every node (0 to --uplinks - 1)")
	fs.DurationVar(&opts.BFDInterval, "bfd-interval", 0, "BFD transmit and receive interval of the routers and gateway routers (0: FRR's 300ms on the routers, OVN's 1s on the gateway routers)")
	fs.BoolVar(&opts.Deploy, "deploy", false, "install ovn-udn from its image (make image) and config/deploy with kubectl apply -k, run by the nodes' kubelets as pods, instead of running its components as the sandbox's processes (docs/sandbox.md)")
	fs.StringVar(&opts.Image, "image", sandbox.DefaultImageArchive, "with --deploy: the OCI archive of ovn-udn's image to import into every node")
	fs.DurationVar(&opts.InactiveGracePeriod, "inactive-grace-period", 0, "the zone controllers' --inactive-grace-period: how long a network stays on a node after its last pod there is gone (0: the controllers' default)")
}
