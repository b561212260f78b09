// Package topology computes, as pure functions, the OVN Northbound rows one
// zone needs for a network: network + nodes + zone → rows. The zone controller
// writes them with internal/ovsdbsync; `ovn-udn render` prints them. Names
// follow the OVN-Kubernetes conventions operators know (GR_<net>_<node>,
// rtos-/stor-, <net>_ovn_cluster_router, ...); docs/topology.md lists them.
package topology

import (
	"fmt"
	"net/netip"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// Network is a network as a zone renders it: its definition plus what
// cluster-manager allocated for it.
type Network struct {
	// Name is the network name; nodeinfo.DefaultNetwork for the cluster
	// default network.
	Name     string
	ID       int
	Topology string // netconf.TopologyLayer3, TopologyLayer2, TopologyLocalnet
	Role     string // netconf.RolePrimary or RoleSecondary
	Subnets  []netconf.Subnet
	Exclude  []netip.Prefix
	Join     []netip.Prefix
	Transit  []netip.Prefix
	MTU      int
	// TunnelKeys are the network's central tunnel keys (a Layer2 primary
	// network's transit router key first).
	TunnelKeys          []int
	PersistentIPs       bool
	PhysicalNetworkName string
	VLANID              int
	// Egress is a secondary network's netconf.NetConf.Egress.
	Egress string
}

// IsDefault reports whether this is the cluster default network.
func (n Network) IsDefault() bool { return n.Name == nodeinfo.DefaultNetwork }

// IsPrimary reports whether pods use the network as their default route.
func (n Network) IsPrimary() bool { return n.Role == netconf.RolePrimary }

// HasGateway reports whether the network has a join switch and a gateway
// router per node: primary networks, and secondary Layer3 and Layer2 ones
// that ask for egress (netconf.EgressGateway). A secondary network's
// gateway carries egress only: no load balancers, no management port, no
// EgressIP.
func (n Network) HasGateway() bool {
	return n.IsPrimary() || n.Egress == netconf.EgressGateway && (n.Topology == netconf.TopologyLayer3 || n.Topology == netconf.TopologyLayer2)
}

// DefaultNetwork is the cluster default network: a Layer3 primary network
// with ID 0, from the cluster configuration.
func DefaultNetwork(cfg config.Cluster) Network {
	return Network{
		Name: nodeinfo.DefaultNetwork, ID: 0, Topology: netconf.TopologyLayer3, Role: netconf.RolePrimary,
		Subnets: cfg.ClusterSubnets, Join: cfg.DefaultJoinSubnets, Transit: cfg.TransitSubnets, MTU: cfg.MTU,
	}
}

// FromNetConf builds the Network of a NAD config and its allocation, filling
// defaults from the cluster configuration.
func FromNetConf(c *netconf.NetConf, id int, keys []int, cfg config.Cluster) (Network, error) {
	n := Network{
		Name: c.Name, ID: id, Topology: c.Topology, Role: c.Role, Subnets: c.ParsedSubnets(),
		Exclude: c.ExcludePrefixes(), Join: c.JoinPrefixes(), Transit: c.TransitPrefixes(), MTU: c.MTU,
		TunnelKeys: keys, PersistentIPs: c.PersistentIPs, PhysicalNetworkName: c.PhysicalNetworkName, VLANID: c.VLANID,
		Egress: c.Egress,
	}
	if n.MTU == 0 {
		n.MTU = cfg.MTU
	}
	if id < 1 || id > config.MaxNetworkID {
		return n, fmt.Errorf("network %s: network ID %d outside 1..%d", n.Name, id, config.MaxNetworkID)
	}
	if len(n.Transit) == 0 {
		n.Transit = sameFamilies(cfg.TransitSubnets, n.Subnets)
	}
	if n.HasGateway() && len(n.Join) == 0 {
		n.Join = sameFamilies(cfg.UDNJoinSubnets, n.Subnets)
	}
	if n.Topology == netconf.TopologyLayer2 && n.HasGateway() && len(keys) == 0 {
		return n, fmt.Errorf("network %s: a Layer2 network with a gateway needs a transit-router tunnel key, and has none yet", n.Name)
	}
	return n, nil
}

// FromNAD builds the Network a NAD defines with what cluster-manager
// allocated for it (its network ID and tunnel keys annotations). ok is
// false for a NAD that is not ovn-udn's or not allocated yet; err is a
// definition or allocation that does not parse or does not fit.
func FromNAD(nad *nadv1.NetworkAttachmentDefinition, cfg config.Cluster) (n Network, ok bool, err error) {
	c, err := netconf.Parse(nad)
	if err != nil || c == nil {
		return Network{}, false, err
	}
	id, keys, ok, err := netconf.ParseAllocation(nad.Annotations)
	if err != nil || !ok {
		return Network{}, false, err
	}
	n, err = FromNetConf(c, id, keys, cfg)
	return n, err == nil, err
}

// sameFamilies returns the prefixes of list whose IP family some subnet has.
func sameFamilies(list []netip.Prefix, subnets []netconf.Subnet) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range list {
		for _, s := range subnets {
			if s.CIDR.Addr().Is4() == p.Addr().Is4() {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// prefix is what starts the names of the network's OVN objects: nothing for
// the default network (operators know ovn_cluster_router, GR_<node>), else
// "<network>_".
func (n Network) prefix() string {
	if n.IsDefault() {
		return ""
	}
	return n.Name + "_"
}

// Names of the network's objects.

// ClusterRouter is the Layer3 network's distributed router.
func (n Network) ClusterRouter() string { return n.prefix() + "ovn_cluster_router" }

// NodeSwitch is the Layer3 network's switch on a node.
func (n Network) NodeSwitch(node string) string { return n.prefix() + node }

// TransitSwitch is the Layer3 network's switch shared by all zones.
func (n Network) TransitSwitch() string { return n.prefix() + "transit_switch" }

// JoinSwitch joins a Layer3 network's cluster router and gateway router.
func (n Network) JoinSwitch() string { return n.prefix() + "join" }

// GatewayRouter is the network's gateway router on a node.
func (n Network) GatewayRouter(node string) string { return "GR_" + n.prefix() + node }

// ExternalSwitch connects a gateway router to the physical network.
func (n Network) ExternalSwitch(node string) string { return "ext_" + n.prefix() + node }

// ManagementPort is the node's port on the network (ovn-k8s-mp* on the host).
func (n Network) ManagementPort(node string) string { return "k8s-" + n.prefix() + node }

// Layer2Switch is a Layer2 network's distributed switch.
func (n Network) Layer2Switch() string { return n.prefix() + Layer2SwitchSuffix }

// Layer2SwitchSuffix ends every Layer2 network's switch name.
const Layer2SwitchSuffix = "ovn_layer2_switch"

// TransitRouter is a Layer2 primary network's router shared by all zones.
func (n Network) TransitRouter() string { return n.prefix() + "transit_router" }

// LocalnetSwitch is a Localnet network's switch.
func (n Network) LocalnetSwitch() string { return n.prefix() + "ovn_localnet_switch" }

// ClusterLBGroup is the primary network's Load_Balancer_Group in a zone: its
// pod switch and gateway router use it, and every service of the network puts
// its load balancers in it (a service change is then one small transaction,
// whatever the number of datapaths using them).
func (n Network) ClusterLBGroup() string { return n.prefix() + "clusterLBGroup" }

// ServiceLoadBalancer is the network's load balancer of a service's cluster
// IPs for one protocol ("TCP", "UDP", "SCTP") in a zone.
func (n Network) ServiceLoadBalancer(namespace, name, protocol string) string {
	return n.prefix() + "Service_" + namespace + "/" + name + "_" + protocol + "_cluster"
}

// NodeServiceLoadBalancer is the load balancer of a service's protocol that
// serves it from outside on one node's gateway router (node ports, external
// IPs), as OVN-Kubernetes names its per-node router load balancers.
func (n Network) NodeServiceLoadBalancer(namespace, name, protocol, node string) string {
	return n.prefix() + "Service_" + namespace + "/" + name + "_" + protocol + "_node_router_" + node
}

// GatewayLocalnetPort is the localnet port of the network's external switch
// on a node; ovn-controller names the patch port to the external bridge
// after it (external_ids:ovn-localnet-port on the OVS interface).
func (n Network) GatewayLocalnetPort(node string) string { return localnetPort(n, node) }

// UplinkLocalnetPort is the localnet port of the network's external switch
// on a node's i-th uplink (from 0) on physical network physnet: the first
// is GatewayLocalnetPort, a further one is suffixed "_<physnet>".
func (n Network) UplinkLocalnetPort(node string, i int, physnet string) string {
	return localnetPort(n, node) + uplinkSuffix(i, physnet)
}

// GatewayExternalPort is the gateway router's external port on node
// (rtoe-GR_...): it holds the node's address, and for the default network
// the node's BFD sessions.
func (n Network) GatewayExternalPort(node string) string {
	return routerToExternal(n.GatewayRouter(node))
}

// UplinkExternalPort is the gateway router's external port on a node's i-th
// uplink (from 0) on physical network physnet: the first is
// GatewayExternalPort, a further one is suffixed "_<physnet>".
func (n Network) UplinkExternalPort(node string, i int, physnet string) string {
	return n.GatewayExternalPort(node) + uplinkSuffix(i, physnet)
}

// PodRouterPort is the router port facing the network's pods on node: the
// cluster router's rtos- port of the node's switch (Layer3), the transit
// router's trtos- port of the distributed switch (Layer2). Traffic from
// pods enters the network's router through it.
func (n Network) PodRouterPort(node string) string {
	if n.Topology == netconf.TopologyLayer2 {
		return "trtos-" + n.Layer2Switch()
	}
	return routerToSwitch(n.NodeSwitch(node))
}

// PodSwitch is the switch the network's pods on node plug into: the node's
// switch of a Layer3 network, the distributed switch of a Layer2 network,
// the zone's localnet switch of a Localnet network.
func (n Network) PodSwitch(node string) string {
	switch n.Topology {
	case netconf.TopologyLayer2:
		return n.Layer2Switch()
	case netconf.TopologyLocalnet:
		return n.LocalnetSwitch()
	}
	return n.NodeSwitch(node)
}

// HasServices reports whether the network load-balances Kubernetes services:
// primary Layer3 and Layer2 networks (the default network included).
func (n Network) HasServices() bool {
	return n.IsPrimary() && (n.Topology == netconf.TopologyLayer3 || n.Topology == netconf.TopologyLayer2)
}

// Port name conventions between two datapaths.
func routerToSwitch(sw string) string                     { return "rtos-" + sw }
func switchToRouter(sw string) string                     { return "stor-" + sw }
func routerToTransitSwitch(n Network, node string) string { return "rtots-" + n.prefix() + node }
func transitSwitchToRouter(n Network, node string) string { return "tstor-" + n.prefix() + node }
func routerToJoin(router string) string                   { return "rtoj-" + router }
func joinToRouter(router string) string                   { return "jtor-" + router }
func routerToExternal(gr string) string                   { return "rtoe-" + gr }
func externalToRouter(gr string) string                   { return "etor-" + gr }
func localnetPort(n Network, node string) string          { return n.prefix() + "breth0_" + node }

// ManagementAddresses returns the addresses of the node's management port on
// the network (where kubelet probes and other node traffic come from): the
// second address of each of the node's slices on a Layer3 network, of each
// subnet on a Layer2 network. Nothing for other topologies, or a node without
// a slice yet.
func ManagementAddresses(n Network, local nodeinfo.Info) []netip.Addr {
	var prefixes []netip.Prefix
	switch n.Topology {
	case netconf.TopologyLayer3:
		prefixes = local.Subnets[n.Name]
	case netconf.TopologyLayer2:
		for _, s := range n.Subnets {
			prefixes = append(prefixes, s.CIDR)
		}
	}
	var out []netip.Addr
	for _, p := range prefixes {
		if _, m, err := gatewayAndManagement(p); err == nil {
			out = append(out, m.Addr())
		}
	}
	return out
}
