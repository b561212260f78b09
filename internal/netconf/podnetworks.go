package netconf

import (
	"encoding/json"
	"fmt"
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
