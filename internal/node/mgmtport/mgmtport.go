// Package mgmtport is the node's side of the default network's management
// port: the host interface ovn-k8s-mp0, plugged into br-int as the logical
// switch port the zone renders for the node (k8s-<node>, package
// topology), with the second address of each of the node's default-network
// slices and routes to the cluster's pod subnets through the slice's
// gateway. Through it the node reaches pods: the kubelet's probes, and any
// host process, come from the management address, which the isolation
// rules of primary networks admit on a pod's default interface.
//
// Desired is pure (a node's slices in, the port out); Ensure makes the
// node's interfaces and routes equal to it, re-creating the interface only
// when its configuration changed (a fingerprint on the OVS interface).
package mgmtport

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Interface is the host interface's name, as operators know it from
// ovn-kubernetes.
const Interface = "ovn-k8s-mp0"

// fingerprintKey records the port's configuration on its OVS interface.
const fingerprintKey = "k8s.ovn.org/management-port"

// Desired returns the node's management port on the default network, or
// false while the node has no slice of it.
func Desired(local nodeinfo.Info, cluster config.Cluster) (cni.Interface, bool, error) {
	slices := local.Subnets[nodeinfo.DefaultNetwork]
	if len(slices) == 0 {
		return cni.Interface{}, false, nil
	}
	n := topology.Network{Name: nodeinfo.DefaultNetwork}
	port := cni.Interface{Name: Interface, Port: n.ManagementPort(local.Name), MTU: cluster.MTU}
	for _, s := range slices {
		// The zone's addresses for the slice (topology): the gateway
		// first, the management port second.
		if err := allocator.CheckNodeSlice(s); err != nil {
			return cni.Interface{}, false, fmt.Errorf("node %s: %w", local.Name, err)
		}
		gw, _ := allocator.NthAddress(s, 1)
		mgmt, _ := allocator.NthAddress(s, 2)
		port.IPs = append(port.IPs, netip.PrefixFrom(mgmt, s.Bits()))
		for _, c := range cluster.ClusterSubnets {
			if c.CIDR.Addr().Is4() == s.Addr().Is4() {
				port.Routes = append(port.Routes, podnet.Route{Dest: c.CIDR.String(), NextHop: gw.String()})
			}
		}
	}
	port.MAC = topology.PortMAC(port.IPs)
	if port.MTU == 0 {
		port.MTU = 1400
	}
	return port, true, nil
}

// Fingerprint summarises the port's configuration.
func Fingerprint(p cni.Interface) string {
	h := sha1.Sum([]byte(p.Fingerprint() + "|mgmt"))
	return hex.EncodeToString(h[:8])
}

// Ensure makes the node's management port equal to p: the veth pair (the
// host end Interface with p's MAC, addresses and MTU, the other plugged
// into the bridge with p's port as iface-id) when missing or configured
// otherwise, and p's routes every time (replace is idempotent, and brings
// back a route removed behind the agent's back).
func Ensure(h cni.Host, p cni.Interface) error {
	fp := Fingerprint(p)
	veth := cni.HostVeth(p.Port)
	out, err := h.Command("ovs-vsctl", "--db="+h.OVSDB, "--timeout=10", "--if-exists", "get", "Interface", veth,
		"external_ids:"+fingerprintKey).Output()
	if err != nil || strings.Trim(strings.TrimSpace(string(out)), `"`) != fp || !h.LinkExists(Interface) {
		if err := recreate(h, p, veth, fp); err != nil {
			return fmt.Errorf("management port %s: %w", Interface, err)
		}
	}
	var lines []string
	for _, r := range p.Routes {
		lines = append(lines, fmt.Sprintf("route replace %s via %s dev %s", r.Dest, r.NextHop, Interface))
	}
	if err := h.Batch(h.Netns, lines); err != nil {
		return fmt.Errorf("management port %s: routes: %w", Interface, err)
	}
	return nil
}

func recreate(h cni.Host, p cni.Interface, veth, fp string) error {
	_ = h.Batch(h.Netns, []string{"link del " + Interface}) // gone with its peer
	_ = h.Command("ovs-vsctl", "--db="+h.OVSDB, "--timeout=10", "--if-exists", "del-port", h.Bridge, veth).Run()
	lines := []string{
		fmt.Sprintf("link add %s type veth peer name %s", Interface, veth),
		fmt.Sprintf("link set %s address %s mtu %d", Interface, p.MAC, p.MTU),
		fmt.Sprintf("link set %s mtu %d up", veth, p.MTU),
	}
	for _, a := range p.IPs {
		if a.Addr().Is6() {
			lines = append(lines, fmt.Sprintf("addr add %s dev %s nodad", a, Interface))
		} else {
			lines = append(lines, fmt.Sprintf("addr add %s dev %s", a, Interface))
		}
	}
	lines = append(lines, "link set "+Interface+" up")
	if err := h.Batch(h.Netns, lines); err != nil {
		return err
	}
	// The userspace datapath leaves checksums to the sender.
	ethtool := []string{h.Program("ethtool"), "-K", Interface, "tx", "off"}
	if h.Netns != "" {
		ethtool = append([]string{"netns", "exec", h.Netns}, ethtool...)
		if out, err := h.Command("ip", ethtool...).CombinedOutput(); err != nil {
			return fmt.Errorf("ethtool: %v: %s", err, out)
		}
	} else if out, err := h.Command(ethtool[0], ethtool[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool: %v: %s", err, out)
	}
	out, err := h.Command("ovs-vsctl", "--db="+h.OVSDB, "--timeout=10", "--may-exist", "add-port", h.Bridge, veth, "--",
		"set", "Interface", veth, "external_ids:iface-id="+p.Port, "external_ids:"+fingerprintKey+"="+fp).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovs-vsctl: %v: %s", err, out)
	}
	return nil
}
