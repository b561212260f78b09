package render_test

import (
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// TestConnect: a ClusterNetworkConnect renders as cluster-manager would
// accept and allocate it and as the zone would write it: the connect router
// with a port per Layer3 node and per Layer2 network, routes, reroutes on
// the networks' routers; with ClusterIPServiceNetwork alone, the tier-0 ACLs
// on both switches, and green's service load balanced on blue's switch. A
// connect selecting one network only is refused, with its reason.
func TestConnect(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata:
  name: blue
  labels: {k8s.ovn.org/primary-user-defined-network: "", connect: "yes", lonely: "yes"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: green
  labels: {k8s.ovn.org/primary-user-defined-network: "", connect: "yes"}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec: {topology: Layer3, role: Primary, subnets: [10.128.0.0/16/24]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: green}
spec: {topology: Layer2, role: Primary, subnets: [10.100.0.0/24]}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterNetworkConnect
metadata: {name: blue-green}
spec:
  networkSelectors:
  - networkSelectionType: PrimaryUserDefinedNetworks
    primaryUserDefinedNetworkSelector:
      namespaceSelector: {matchLabels: {connect: "yes"}}
  connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}]
  connectivityEnabled: [ClusterIPServiceNetwork]
---
apiVersion: k8s.ovn.org/v1
kind: ClusterNetworkConnect
metadata: {name: lonely}
spec:
  networkSelectors:
  - networkSelectionType: PrimaryUserDefinedNetworks
    primaryUserDefinedNetworkSelector:
      namespaceSelector: {matchLabels: {lonely: "yes"}}
  connectSubnets: [{cidr: 192.169.0.0/16, networkPrefix: 24}]
  connectivityEnabled: [PodNetwork]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: green}
spec: {clusterIP: 10.96.0.50, clusterIPs: [10.96.0.50], ports: [{port: 80}]}
`), render.Options{Nodes: []string{"node1", "node2"}, Zones: []string{"node1"}, RenderEverywhere: true})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	for _, want := range []string{
		"## connect blue-green\nrouter connect-router-blue-green {requested-tnl-key=",
		"  port blue-green-to-blue.net_node1 mac 0a:58:c0:a8:01:05 networks 192.168.1.5/31 peer blue.net_node1-to-blue-green {requested-tnl-key=130}",
		"  port blue-green-to-blue.net_node2 mac 0a:58:c0:a8:01:07 networks 192.168.1.7/31 {requested-chassis=chassis-node2 requested-tnl-key=131}",
		"  port blue-green-to-green.net mac 0a:58:c0:a8:00:03 networks 192.168.0.3/31 peer green.net-to-blue-green {requested-tnl-key=1}",
		"  route 10.128.1.0/24 via 192.168.1.6",
		"address-set connected_udn_subnets_b6a156aa3bbff831_v4 [10.128.0.0/16] {k8s.ovn.org/cluster-network-connect=blue-green k8s.ovn.org/network=green.net",
		"adds to Logical_Router green.net_transit_router policies:\n  policy 9001 inport == \"trtos-green.net_ovn_layer2_switch\" && ip4.dst == $connected_udn_subnets_b6a156aa3bbff831_v4 reroute 192.168.0.3\n",
		"adds to Logical_Switch blue.net_node1 acls:\n  acl from-lport tier 0 5000 ip4.dst == 10.96.0.0/16 || ip6.dst == fd00:10:96::/112 pass\n",
		"  acl to-lport tier 0 4900 ip4.src == 10.100.0.2 allow-related\n",
		"switch blue.net_node1\n  lb green.net_Service_green/web_TCP_cluster tcp 10.96.0.50:80 -> []",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendering lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "## connect lonely") {
		t.Errorf("a refused connect has rows:\n%s", out)
	}
	var accepted, refused string
	for _, c := range res.ClusterNetworkConnects {
		for _, cond := range c.Conditions {
			if cond.Type == "Accepted" {
				if c.Name == "blue-green" {
					accepted = cond.Status + " " + cond.Reason
				} else {
					refused = cond.Status + " " + cond.Reason
				}
			}
		}
	}
	if accepted != "True ValidationSucceeded" || refused != "False InsufficientNetworks" {
		t.Errorf("conditions: blue-green %q, lonely %q", accepted, refused)
	}
}
