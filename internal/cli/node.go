package cli

import (
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager/egressip"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/memlimit"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/agent"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
	"github.com/ovn-udn/ovn-udn/internal/node/pods"
)

func newNodeCommand() *cobra.Command {
	opts := node.Options{Cluster: config.Default(), Host: cni.Host{Bridge: "br-int"}}
	var kube kubeFlags
	var toolsDir, nodeIP, encapIP string
	var gw node.GatewayFlags
	var ecmp, bfd bool
	var extraUplinks []string
	memoryLimit := memlimit.Auto
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run the node agent: node annotations, the management port, and ovn-udn's CNI plugin",
		Long: `Run the agent of one node: it publishes the node's annotations (chassis name from
OVS, zone, addresses, gateway), keeps the node's side of the management port
(ovn-k8s-mp0) and the external bridge's flows, and serves ovn-udn's CNI plugin to
the node's container runtime. An ADD plumbs the pod into the namespace the runtime
made — a veth per attachment of its k8s.ovn.org/pod-networks annotation, plugged
into br-int with the attachment's logical port as iface-id — and returns once
ovn-controller has installed it; a DEL, or the pod's going away, unplumbs it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Node == "" || opts.Host.OVSDB == "" || nodeIP == "" {
				return fmt.Errorf("--node, --ovsdb and --node-ip are required")
			}
			ip, err := node.ParseAddress(nodeIP)
			if err != nil {
				return err
			}
			opts.Info.PrimaryIPs = []netip.Prefix{ip}
			if encapIP != "" {
				if opts.Info.EncapIP, err = netip.ParseAddr(encapIP); err != nil {
					return fmt.Errorf("--encap-ip %q is not an address", encapIP)
				}
			}
			if cmd.Flags().Changed("default-route-ecmp") {
				gw.ECMP = &ecmp
			}
			if cmd.Flags().Changed("default-route-bfd") {
				gw.BFD = &bfd
			}
			if len(extraUplinks) > 0 && opts.Gateway.Bridge == "" {
				// Without a bridge the agent keeps no flows: the uplinks
				// would be published and rendered, and carry nothing.
				return fmt.Errorf("--extra-uplink needs --external-bridge (the agent keeps every uplink bridge's flows, the first's included)")
			}
			for _, v := range extraUplinks {
				u, err := node.ParseUplinkFlag(v)
				if err != nil {
					return err
				}
				gw.Extra = append(gw.Extra, u)
				opts.Gateway.Extra = append(opts.Gateway.Extra, node.UplinkBridge{Bridge: u.Bridge, Interface: u.Interface})
			}
			if opts.Info.Gateway, err = gw.Parse(); err != nil {
				return err
			}
			opts.Host.Command, opts.Host.Path = tools(toolsDir)
			opts.Gateway.Netns = opts.Host.Netns
			ctrl.SetLogger(daemonLogger())
			if err := applyMemoryLimit(memoryLimit); err != nil {
				return err
			}
			cfg, err := kube.config()
			if err != nil {
				return err
			}
			return agent.Run(cmd.Context(), cfg, opts)
		},
	}
	fs := cmd.Flags()
	kube.add(fs)
	fs.StringVar(&memoryLimit, "memory-limit", memoryLimit, memlimit.Flag)
	fs.StringVar(&opts.Node, "node", "", "the Node's name")
	fs.StringVar(&opts.Info.Zone, "zone", "", "the node's OVN interconnect zone (default: the node's name)")
	fs.StringVar(&opts.Host.OVSDB, "ovsdb", "", "the node's Open vSwitch database, e.g. unix:/run/openvswitch/db.sock")
	fs.StringVar(&opts.Host.Bridge, "bridge", opts.Host.Bridge, "the integration bridge")
	fs.StringVar(&opts.Host.Netns, "netns", "", "network namespace of the node's OVS bridges (default: the agent's own)")
	fs.StringVar(&nodeIP, "node-ip", "", "the node's primary address with prefix length, e.g. 192.168.100.11/24")
	fs.StringVar(&encapIP, "encap-ip", "", "the node's Geneve endpoint (default: the node address)")
	fs.StringVar(&gw.IP, "gateway-ip", "", "address with prefix length of the node's external interface for gateway routers (none: no gateway)")
	fs.StringSliceVar(&gw.NextHops, "gateway-next-hop", nil, "the external next hops of gateway routers, in order (repeat or separate with commas; with ECMP off only the first of each family is used)")
	fs.BoolVar(&ecmp, "default-route-ecmp", true, "override the zone controllers' --default-route-ecmp for this node (only when given)")
	fs.BoolVar(&bfd, "default-route-bfd", false, "override the zone controllers' --default-route-bfd for this node (only when given)")
	fs.StringVar(&gw.MAC, "gateway-mac", "", "the MAC address of gateway routers' external ports")
	fs.StringVar(&opts.Gateway.Bridge, "external-bridge", "", "the external bridge whose OpenFlow table the agent owns (shared gateway mode: egress, node ports, host to services; e.g. br-ex; empty: leave it alone)")
	fs.StringVar(&opts.Gateway.Interface, "external-interface", "eth0", "the uplink port of --external-bridge")
	fs.StringArrayVar(&extraUplinks, "extra-uplink", nil, "a further uplink on a bridge of its own (repeat for several): bridge=BR,interface=IF,physical-network=NAME,ip=ADDR/LEN,mac=MAC,next-hop=IP (next-hop may repeat); every network's gateway router gets an external port on it, and the agent keeps BR's flows as --external-bridge's")
	fs.StringVar(&opts.KubeletCgroup, "kubelet-cgroup", "", "the kubelet's cgroup, a path in the cgroup v2 hierarchy (e.g. system.slice/kubelet.service): only it may reach the default interface of pods with a primary user-defined network (nftables cgroup v2 socket matching); empty: host isolation is off, which the agent reports")
	fs.StringVar(&opts.PodsCgroup, "pods-cgroup", "", "the parent of the kubelet's pod cgroups, a path in the cgroup v2 hierarchy: host-network pods of namespaces with a primary user-defined network are found there and confined to their networks' ClusterIPs; empty: kubepods.slice or kubepods")
	fs.StringVar(&toolsDir, "tools-dir", "", "directory holding ip, ethtool and ovs-vsctl (default: $PATH)")
	fs.IntVar(&opts.Workers, "workers", 4, "pods plumbed at once")
	fs.StringVar(&opts.HealthAddr, "health-addr", "0", "/healthz and /readyz listen address (0 disables)")
	fs.StringVar(&opts.MetricsAddr, "metrics-addr", "0", "/metrics listen address, e.g. 127.0.0.1:9414 (0 disables; see docs/metrics.md)")
	fs.StringVar(&opts.CNI.Socket, "cni-socket", cniserver.DefaultSocket, "serve ovn-udn's CNI plugin to the node's container runtime on this unix socket")
	fs.StringVar(&opts.CNI.ConfDir, "cni-conf-dir", "", "the node's CNI configuration directory (e.g. /etc/cni/net.d), where the agent writes "+pods.ConfFile+" once it serves (empty: none)")
	fs.StringVar(&opts.CNI.BinDir, "cni-bin-dir", "", "the node's CNI plugin directory (e.g. /opt/cni/bin), where the agent installs itself as "+netconf.CNIType+" (empty: none)")
	fs.StringVar(&opts.CNI.PluginSocket, "cni-plugin-socket", "", "--cni-socket as the container runtime on the host sees it, written into the CNI configuration (default: --cni-socket; set it when the agent's container mounts the socket's directory at another path)")
	fs.IntVar(&opts.EgressIPHealthPort, "egressip-health-port", egressip.DefaultHealthPort, "answer cluster-manager's egress-node reachability probes on this TCP port, on every address of the node (0: off; cluster-manager then moves egress IPs off this node only when it is not Ready)")
	opts.Cluster.AddFlags(fs)
	cmd.AddCommand(newNodeCleanupCommand())
	return cmd
}

// tools returns how to run the programs the agent drives: from dir, or from
// $PATH when dir is empty.
func tools(dir string) (func(string, ...string) *exec.Cmd, func(string) string) {
	path := func(p string) string {
		if dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	return func(p string, args ...string) *exec.Cmd { return exec.Command(path(p), args...) }, path
}
