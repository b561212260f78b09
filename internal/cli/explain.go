package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/tools/explain"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

func newExplainCommand() *cobra.Command {
	var (
		q          explain.Query
		dir        string
		kubeconfig string
		zoneFlags  []string
		verbose    bool
	)
	cmd := &cobra.Command{
		Use:   "explain --from NAMESPACE/POD --to NAMESPACE/POD|ADDRESS[:PORT]",
		Short: "Trace a packet from a pod through OVN and say where it goes and why",
		Long: `explain builds the packet a pod would send (TCP or UDP with a destination port,
an ICMP echo request without), traces it with ovn-trace in the source pod's zone,
follows it through a remote port into the next node's zone, and prints the path
hop by hop: each logical switch and router, the route taken, load balancers, and
every ACL or routing policy of ovn-udn that admitted or dropped it, named by the
NetworkPolicy, namespace default deny or network it belongs to. It ends with
DELIVERED, NOT DELIVERED (the packet reached other ports: another network's pod
with the same address, the way out of the node) or DROPPED and why.

A destination pod is reached at its address on the source's network when it has
one there, else at its primary network's address.

The zones' databases come from the sandbox (--sandbox, the default) or, on any
other cluster, from --zone NODE=NB,SB for each node involved. ovn-trace and
ovn-sbctl are taken from the OVN that make deps installs, else from PATH.`,
		Example: `  ovn-udn explain --from l3-blue/a --to l3-blue/c:8080
  ovn-udn explain --from shop/b --to shop/echo-0:8080 -v
  ovn-udn explain --from plain/a --to 8.8.8.8:53 --protocol udp
  ovn-udn explain --kubeconfig kc --zone node1=tcp:10.0.0.1:6641,tcp:10.0.0.1:6642 \
      --zone node2=tcp:10.0.0.2:6641,tcp:10.0.0.2:6642 --from ns/a --to ns/b:80`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if q.From == "" || q.To == "" {
				return fmt.Errorf("--from and --to are required")
			}
			e := &explain.Explainer{Command: ovnCommand}
			var err error
			if len(zoneFlags) > 0 {
				if e.Zones, err = parseZoneFlags(zoneFlags); err != nil {
					return err
				}
				cfg, err := restConfig(kubeconfig)
				if err != nil {
					return err
				}
				if e.Kube, err = client.New(cfg, client.Options{Scheme: kubeobj.NewScheme()}); err != nil {
					return err
				}
			} else {
				st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
				if err != nil {
					return fmt.Errorf("%w (give --zone NODE=NB,SB for a cluster other than a sandbox)", err)
				}
				e.Zones = map[string]explain.Zone{}
				for _, n := range st.Nodes {
					e.Zones[n.Name] = explain.Zone{NB: n.NB, SB: n.SB}
				}
				if e.Kube, err = sandbox.Client(dir); err != nil {
					return err
				}
			}
			defer e.Close()
			r, err := e.Explain(cmd.Context(), q)
			if err != nil {
				return err
			}
			return r.Write(cmd.OutOrStdout(), verbose)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&q.From, "from", "", "source pod, NAMESPACE/NAME")
	fs.StringVar(&q.To, "to", "", "destination pod (NAMESPACE/NAME) or address, each with an optional :PORT ([IPv6]:PORT)")
	fs.StringVar(&q.Protocol, "protocol", "", "tcp, udp or icmp (default: tcp with a port, icmp without)")
	fs.StringVar(&q.Attachment, "attachment", "", `the source pod's attachment to send from, by key ("default", "NAMESPACE/NAD"; default: its primary network)`)
	fs.StringVar(&dir, "sandbox", sandbox.DefaultDir(), "sandbox state directory whose cluster to explain (when no --zone is given)")
	fs.StringArrayVar(&zoneFlags, "zone", nil, "a node's zone databases, NODE=NB_REMOTE,SB_REMOTE (repeatable; instead of --sandbox)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with --zone (default: in-cluster or $KUBECONFIG)")
	fs.BoolVarP(&verbose, "verbose", "v", false, "also print each zone's ovn-trace input and whole output")
	return cmd
}

// parseZoneFlags reads --zone NODE=NB,SB values.
func parseZoneFlags(values []string) (map[string]explain.Zone, error) {
	out := map[string]explain.Zone{}
	for _, v := range values {
		node, dbs, ok := strings.Cut(v, "=")
		nb, sb, ok2 := strings.Cut(dbs, ",")
		if !ok || !ok2 || node == "" || nb == "" || sb == "" {
			return nil, fmt.Errorf("--zone %q: want NODE=NB_REMOTE,SB_REMOTE", v)
		}
		if _, dup := out[node]; dup {
			return nil, fmt.Errorf("--zone: node %s given twice", node)
		}
		out[node] = explain.Zone{NB: nb, SB: sb}
	}
	return out, nil
}

// ovnCommand runs an OVN program: the one make deps installed, else the one
// on PATH.
func ovnCommand(program string, args ...string) *exec.Cmd {
	if p := deps.OVNProgram(program); fileExists(p) {
		return exec.Command(p, args...)
	}
	return exec.Command(program, args...)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
