package netconf

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// NetworksAnnotation is the Multus/NPWG annotation through which a pod asks for
// secondary networks.
const NetworksAnnotation = "k8s.v1.cni.cncf.io/networks"

// NetworkSelection is one network a pod asks for.
type NetworkSelection struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	// Interface is the requested interface name in the pod.
	Interface string `json:"interface,omitempty"`
	// IPs and MAC are static requests, honoured where the network allows.
	IPs []string `json:"ips,omitempty"`
	MAC string   `json:"mac,omitempty"`
	// IPAMClaimReference names the IPAMClaim holding persistent addresses.
	IPAMClaimReference string `json:"ipam-claim-reference,omitempty"`
	// GatewayRequest is Multus' "default-route": the pod's default route
	// goes through this network for the IP families of the addresses
	// given. ovn-udn takes the families only: the gateway is the
	// network's on the pod's node (a Layer3 network's differs per node).
	// Only networks with an egress gateway take it.
	GatewayRequest []string `json:"default-route,omitempty"`
}

// DefaultRouteFamilies are the IP families (true: IPv4) s asks the pod's
// default route for (GatewayRequest), or nil. ValidateSelections has
// checked the addresses.
func (s NetworkSelection) DefaultRouteFamilies() map[bool]bool {
	var out map[bool]bool
	for _, g := range s.GatewayRequest {
		if a, err := netip.ParseAddr(g); err == nil {
			if out == nil {
				out = map[bool]bool{}
			}
			out[a.Is4()] = true
		}
	}
	return out
}

// Key is "<namespace>/<name>" of the selected NAD.
func (s NetworkSelection) Key() string { return s.Namespace + "/" + s.Name }

// ParseNetworkSelections parses the networks annotation in either of its two
// forms: a comma-separated list of "[namespace/]name[@interface]", or a JSON
// list of selection objects. Selections without a namespace are in the pod's.
func ParseNetworkSelections(annotation, podNamespace string) ([]NetworkSelection, error) {
	annotation = strings.TrimSpace(annotation)
	if annotation == "" {
		return nil, nil
	}
	var out []NetworkSelection
	if strings.HasPrefix(annotation, "[") {
		if err := json.Unmarshal([]byte(annotation), &out); err != nil {
			return nil, fmt.Errorf("%s: not a JSON list of network selections: %w", NetworksAnnotation, err)
		}
	} else {
		for _, item := range strings.Split(annotation, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			var s NetworkSelection
			if at := strings.LastIndex(item, "@"); at >= 0 {
				s.Interface = item[at+1:]
				item = item[:at]
			}
			if slash := strings.Index(item, "/"); slash >= 0 {
				s.Namespace, s.Name = item[:slash], item[slash+1:]
			} else {
				s.Name = item
			}
			out = append(out, s)
		}
	}
	for i := range out {
		if out[i].Name == "" {
			return nil, fmt.Errorf("%s: selection %d has no network name", NetworksAnnotation, i)
		}
		if out[i].Namespace == "" {
			out[i].Namespace = podNamespace
		}
	}
	return out, nil
}

// maxInterfaceName is the longest Linux interface name (IFNAMSIZ - 1).
const maxInterfaceName = 15

// ValidateSelections checks a pod's network selections before anything is
// allocated or plumbed for them: every selected network must be in the pod's
// own namespace (a pod may not join another namespace's network), no network
// is selected twice, requested interface names are valid and distinct, a
// requested MAC is a unicast Ethernet address, and requested IPs are
// addresses or CIDRs.
func ValidateSelections(sels []NetworkSelection, podNamespace string) error {
	seen := map[string]bool{}
	ifaces := map[string]bool{}
	defaultRoute := map[bool]string{} // IP family → the network that has it
	for _, s := range sels {
		for is4 := range s.DefaultRouteFamilies() {
			if other, ok := defaultRoute[is4]; ok {
				return fmt.Errorf("networks %s and %s both ask for the default route (default-route) of one IP family", other, s.Key())
			}
			defaultRoute[is4] = s.Key()
		}
		if s.Namespace != podNamespace {
			return fmt.Errorf("network %s is in namespace %s: a pod may attach only to networks available in its own namespace %s", s.Key(), s.Namespace, podNamespace)
		}
		if seen[s.Key()] {
			return fmt.Errorf("network %s is selected more than once", s.Key())
		}
		seen[s.Key()] = true
		if s.Interface != "" {
			if err := validInterfaceName(s.Interface); err != nil {
				return fmt.Errorf("network %s: %w", s.Key(), err)
			}
			if ifaces[s.Interface] {
				return fmt.Errorf("network %s: interface name %q is requested more than once", s.Key(), s.Interface)
			}
			ifaces[s.Interface] = true
		}
		if s.MAC != "" {
			hw, err := net.ParseMAC(s.MAC)
			if err != nil || len(hw) != 6 {
				return fmt.Errorf("network %s: mac %q is not an Ethernet (EUI-48) address", s.Key(), s.MAC)
			}
			if hw[0]&1 != 0 {
				return fmt.Errorf("network %s: mac %q is a multicast address", s.Key(), s.MAC)
			}
		}
		for _, g := range s.GatewayRequest {
			if _, err := netip.ParseAddr(g); err != nil {
				return fmt.Errorf("network %s: default-route %q is not an address", s.Key(), g)
			}
		}
		for _, ip := range s.IPs {
			if _, err := netip.ParsePrefix(ip); err != nil {
				if _, err := netip.ParseAddr(ip); err != nil {
					return fmt.Errorf("network %s: ip %q is neither an address nor a CIDR", s.Key(), ip)
				}
			}
		}
	}
	return nil
}

// validInterfaceName checks a requested interface name as Linux would.
func validInterfaceName(name string) error {
	switch {
	case len(name) > maxInterfaceName:
		return fmt.Errorf("interface name %q is longer than %d characters", name, maxInterfaceName)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q is not allowed", name)
	case strings.ContainsAny(name, "/: \t\n"):
		return fmt.Errorf("interface name %q holds '/', ':' or white space", name)
	case reservedInterface(name):
		return fmt.Errorf("interface name %q is reserved (lo, eth0, ovn-udn1 and net<N> are given by ovn-udn)", name)
	}
	return nil
}

// reservedInterface reports names ovn-udn gives interfaces itself: the
// default network's eth0, the primary network's ovn-udn1, and net<N> for
// selections without a name.
func reservedInterface(name string) bool {
	switch name {
	case "lo", "eth0", "ovn-udn1":
		return true
	}
	if n, ok := strings.CutPrefix(name, "net"); ok && n != "" {
		_, err := strconv.Atoi(n)
		return err == nil
	}
	return false
}
