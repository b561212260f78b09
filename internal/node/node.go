// Package node holds what the node agent's parts share: the agent's options
// (one struct every part reads from) and the shape of a part. The parts
// live in the packages below it (annotations, pods, mgmtport,
// gatewayflows, ...), and package agent lists them in one place. A part
// never imports another part: what two parts share goes here or lower.
package node

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
)

// Part is one feature of the node agent. Setup registers its controllers
// and runnables with the agent's manager; Enabled (nil: always) says
// whether the options ask for it.
type Part struct {
	Name    string
	Enabled func(Options) bool
	Setup   func(mgr ctrl.Manager, opts Options) error
}

// Options configure a node agent: every part reads what it needs.
type Options struct {
	// Node is the Node object's name.
	Node string
	// Host is where pods are plumbed: the node's OVS database and bridge.
	Host cni.Host
	// Info is what the agent publishes; the chassis comes from OVS when
	// Info.ChassisID is empty, and the zone is the node's name when empty.
	Info    nodeinfo.Info
	Cluster config.Cluster
	// Workers is how many pods' changes the agent handles at once (default
	// 4); ADDs are served each on its own.
	Workers int
	// HealthAddr serves /healthz and /readyz (ready: caches synced); "" or
	// "0" disables it.
	HealthAddr string
	// MetricsAddr serves /metrics (controller-runtime's and the agent's own,
	// see docs/metrics.md); "" or "0" disables it.
	MetricsAddr string
	// Gateway is the external bridge the agent keeps the flows of (shared
	// gateway mode); off when Gateway.Bridge is empty or Info.Gateway nil.
	Gateway GatewayOptions
	// CNI says where the agent serves ovn-udn's CNI plugin and installs
	// its configuration (package pods).
	CNI CNIOptions
	// EgressIPHealthPort answers cluster-manager's egress-node probes
	// (package egresshealth); 0: off.
	EgressIPHealthPort int
	// KubeletCgroup is the kubelet's cgroup, a path in the cgroup v2
	// hierarchy (package hostisolation): only it reaches the default
	// interface of pods with a primary user-defined network. "": host
	// isolation is off, and the agent says so.
	KubeletCgroup string
	// PodsCgroup is the parent of the kubelet's pod cgroups, a path in the
	// cgroup v2 hierarchy (package hostisolation confines host-network pods
	// by them); "": kubepods.slice or kubepods, whichever exists.
	PodsCgroup string
}

// GatewayOptions configure the external bridge the agent keeps (shared
// gateway mode): see internal/rows/gateway.
type GatewayOptions struct {
	// Bridge is the external bridge (br-ex); "" leaves it alone.
	Bridge string
	// Interface is the uplink port on Bridge (eth0).
	Interface string
	// Netns is the network namespace holding Bridge's host interface, for
	// the host's routes to the service CIDRs ("" for the agent's own).
	Netns string
	// Resync is how often the bridge is checked without any event (patch
	// ports come and go with ovn-controller); default 5 s.
	Resync time.Duration
	// Extra are the bridges of the node's further uplinks, in the order of
	// Info.Gateway.Extra.
	Extra []UplinkBridge
}

// UplinkBridge is a further uplink's bridge and its uplink port.
type UplinkBridge struct {
	Bridge, Interface string
}

// CNIOptions say where the agent meets the node's container runtime (the
// kubelet's), which creates pods' network namespaces and calls ovn-udn's
// CNI plugin; the agent answers the plugin on Socket.
type CNIOptions struct {
	// Socket is where the agent serves the plugin (cniserver.DefaultSocket
	// when empty).
	Socket string
	// ConfDir is the node's CNI configuration directory (/etc/cni/net.d):
	// once the agent serves, it writes ConfFile there, which makes the
	// runtime report the node's network ready.
	ConfDir string
	// BinDir is the node's CNI plugin directory (/opt/cni/bin): the agent
	// installs its own binary there as netconf.CNIType ("" leaves it).
	BinDir string
	// PluginSocket is Socket as the runtime on the host sees it, which the
	// configuration written into ConfDir names; it differs from Socket only
	// when the agent runs in a container that mounts the socket's directory
	// at another path ("": Socket).
	PluginSocket string
}

// PluginSocketPath is PluginSocket, or SocketPath when empty.
func (o CNIOptions) PluginSocketPath() string {
	if o.PluginSocket != "" {
		return o.PluginSocket
	}
	return o.SocketPath()
}

// SocketPath is Socket, or cniserver.DefaultSocket when empty.
func (o CNIOptions) SocketPath() string {
	if o.Socket == "" {
		return cniserver.DefaultSocket
	}
	return o.Socket
}

// SystemID reads the chassis name OVS is configured with
// (Open_vSwitch external_ids:system-id).
func SystemID(h cni.Host) (string, error) {
	out, err := h.Command("ovs-vsctl", "--db="+h.OVSDB, "--timeout=10", "--if-exists", "get", "Open_vSwitch", ".", "external_ids:system-id").Output()
	if err != nil {
		return "", fmt.Errorf("reading the chassis name from %s: %w", h.OVSDB, err)
	}
	id := strings.Trim(strings.TrimSpace(string(out)), `"`)
	if id == "" {
		return "", fmt.Errorf("OVS at %s has no external_ids:system-id (the chassis name)", h.OVSDB)
	}
	return id, nil
}

// GatewayFlags are the node's external interface as flags give it.
type GatewayFlags struct {
	// IP is the interface's address with its prefix length; MAC its MAC.
	IP, MAC string
	// NextHops are the external next hops, the first being the
	// "compatibility gateway" used alone when ECMP is off.
	NextHops []string
	// Extra are further uplinks (--extra-uplink), each on a bridge of its
	// own.
	Extra []UplinkFlags
	// ECMP and BFD override the zone controllers' default-route policy for
	// this node when set.
	ECMP, BFD *bool
}

// UplinkFlags are one further uplink: the bridge the agent keeps the flows
// of, its uplink port, its ovn-bridge-mappings name, and the node's address,
// MAC and next hops on it.
type UplinkFlags struct {
	Bridge, Interface, PhysicalNetwork string
	IP, MAC                            string
	NextHops                           []string
}

// ParseUplinkFlag reads one --extra-uplink value: comma-separated key=value
// pairs bridge, interface, physical-network, ip, mac and next-hop (repeat it
// for several), e.g.
// "bridge=br-ex2,interface=eth2,physical-network=physnet2,ip=192.168.102.11/24,mac=02:00:00:00:02:0b,next-hop=192.168.102.1".
func ParseUplinkFlag(v string) (UplinkFlags, error) {
	var u UplinkFlags
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || val == "" {
			return u, fmt.Errorf("--extra-uplink %q: %q is not key=value", v, kv)
		}
		switch k {
		case "bridge":
			u.Bridge = val
		case "interface":
			u.Interface = val
		case "physical-network":
			u.PhysicalNetwork = val
		case "ip":
			u.IP = val
		case "mac":
			u.MAC = val
		case "next-hop":
			u.NextHops = append(u.NextHops, val)
		default:
			return u, fmt.Errorf("--extra-uplink %q: unknown key %q (bridge, interface, physical-network, ip, mac, next-hop)", v, k)
		}
	}
	for _, req := range [][2]string{{"bridge", u.Bridge}, {"interface", u.Interface}, {"physical-network", u.PhysicalNetwork}, {"ip", u.IP}, {"mac", u.MAC}} {
		if req[1] == "" {
			return u, fmt.Errorf("--extra-uplink %q: %s is required", v, req[0])
		}
	}
	return u, nil
}

// Parse returns the gateway, or nil when no address is given. It checks the
// uplinks as the zone controllers will (nodeinfo.ParseGateway), so an agent
// started with overlapping uplinks says so and stops.
func (g GatewayFlags) Parse() (*nodeinfo.ParsedGateway, error) {
	if g.IP == "" {
		if len(g.Extra) > 0 {
			return nil, fmt.Errorf("--extra-uplink needs --gateway-ip (the first uplink)")
		}
		return nil, nil
	}
	gw := nodeinfo.Gateway{MAC: g.MAC, IPs: []string{g.IP}, NextHops: g.NextHops,
		DefaultRouteECMP: g.ECMP, DefaultRouteBFD: g.BFD}
	for _, u := range g.Extra {
		gw.Uplinks = append(gw.Uplinks, nodeinfo.UplinkConfig{MAC: u.MAC, IPs: []string{u.IP}, NextHops: u.NextHops, PhysicalNetwork: u.PhysicalNetwork})
	}
	v, err := json.Marshal(gw)
	if err != nil {
		return nil, err
	}
	return nodeinfo.ParseGateway(string(v))
}

// ParseAddress parses a node address flag ("192.168.100.11/24").
func ParseAddress(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, fmt.Errorf("node address %q: want an address with its prefix length", s)
	}
	return p, nil
}
