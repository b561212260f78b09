package cni

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// Interface names in pods.
const (
	DefaultInterface = "eth0"
	PrimaryInterface = "ovn-udn1"
)

// Interfaces maps a pod's annotation to its interfaces: the default network's
// attachment is eth0, the primary user-defined network's ovn-udn1, and the
// secondaries take their requested names or net1, net2, ... in the order the
// pod lists them. mtu gives each attachment's MTU (0: 1400).
func Interfaces(pod *corev1.Pod, nets podnet.Networks, mtu func(key string) int) ([]Interface, error) {
	var out []Interface
	add := func(key, name string) error {
		a := nets[key]
		i := Interface{Name: name, Port: podnet.PortNameOf(key, pod, a), MAC: a.MAC, Routes: a.Routes, MTU: mtu(key)}
		ips, err := a.Prefixes()
		if err != nil {
			return fmt.Errorf("attachment %s: %w", key, err)
		}
		i.IPs = ips
		for _, g := range a.Gateways {
			gw, err := netip.ParseAddr(g)
			if err != nil {
				return fmt.Errorf("attachment %s: gateway %q", key, g)
			}
			i.Gateways = append(i.Gateways, gw)
		}
		out = append(out, i)
		return nil
	}
	if _, ok := nets[podnet.DefaultKey]; ok {
		if err := add(podnet.DefaultKey, DefaultInterface); err != nil {
			return nil, err
		}
	}
	for key, a := range nets {
		if key != podnet.DefaultKey && a.Role == podnet.RolePrimary {
			if err := add(key, PrimaryInterface); err != nil {
				return nil, err
			}
		}
	}
	sels, err := netconf.ParseNetworkSelections(pod.Annotations[netconf.NetworksAnnotation], pod.Namespace)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, s := range sels {
		if _, ok := nets[s.Key()]; !ok {
			continue // another plugin's network, or not attached yet
		}
		n++
		name := s.Interface
		if name == "" {
			name = fmt.Sprintf("net%d", n)
		}
		if err := add(s.Key(), name); err != nil {
			return nil, err
		}
	}
	return out, nil
}
