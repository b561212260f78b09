// Package nodeagent is `ovn-udn node`: the per-node agent. It publishes the
// node's annotations that the controllers read (chassis, zone, addresses,
// gateway), keeps the node's side of the management port and the external
// bridge's flows, and serves ovn-udn's CNI plugin to the node's container
// runtime: an ADD plumbs a pod's interfaces (package cni) into the
// namespace the runtime made once the pod's pod-networks annotation is
// complete, and returns when ovn-controller has installed them; a DEL, or
// the pod's going away, unplumbs them. The kubelet and the runtime own
// everything else of a pod: its namespace, containers and status.
package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ovn-udn/ovn-udn/internal/cni"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
	"github.com/ovn-udn/ovn-udn/internal/nodeinfo"
)

// Options configures a node agent.
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
	// its configuration (cnimode.go).
	CNI CNIOptions
}

// Scheme returns the scheme the agent needs.
func Scheme() *runtime.Scheme { return kubeobj.NewScheme(nadv1.AddToScheme) }

// Run publishes the node's annotations and runs the pod controller until ctx
// ends.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	mgr, err := Build(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// Build returns a manager with the agent's controller and its publishing of
// the node's annotations, not started.
func Build(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	if opts.Node == "" {
		return nil, fmt.Errorf("node agent: the node name is required")
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: kubeobj.ListenAddr(opts.MetricsAddr)},
		HealthProbeBindAddress: kubeobj.ListenAddr(opts.HealthAddr),
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr(true)},
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", opts.Node)},
			// The agent reads and writes its own Node only.
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.Node)},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("node agent: %w", err)
	}
	r := &PodReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts, Recorder: mgr.GetEventRecorderFor("ovn-udn-node-" + opts.Node)}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	srv := &cniserver.Server{Socket: opts.CNI.socket(), Handler: cniHandler{r: r}, OnListen: opts.CNI.install}
	if err := mgr.Add(srv); err != nil {
		return nil, err
	}
	if err := (&mgmtPortReconciler{client: mgr.GetClient(), opts: opts}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if opts.Gateway.Bridge != "" && opts.Info.Gateway != nil {
		if err := (&GatewayReconciler{Client: mgr.GetClient(), Opts: opts, Recorder: r.Recorder}).SetupWithManager(mgr); err != nil {
			return nil, err
		}
		for i := range opts.Gateway.Extra {
			if err := (&GatewayReconciler{Client: mgr.GetClient(), Opts: opts, Uplink: i + 1}).SetupWithManager(mgr); err != nil {
				return nil, err
			}
		}
	}
	if err := (&annotationKeeper{client: mgr.GetClient(), opts: opts}).SetupWithManager(mgr); err != nil {
		return nil, err
	}
	if err := kubeobj.AddHealthChecks(mgr); err != nil {
		return nil, err
	}
	return mgr, nil
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

// isGone reports a pod that no longer exists.
func isGone(err error) bool { return apierrors.IsNotFound(err) }

func ptr[T any](v T) *T { return &v }
