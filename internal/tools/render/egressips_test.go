package render_test

import (
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// TestEgressIP: an EgressIP renders as cluster-manager would assign it and
// as the zones would write it: node1 reroutes its blue pod to node2, the
// egress-assignable node (the network rendered there for it, though no
// pod of blue runs there), which SNATs the pod to the egress IP; the
// nodes, without status in the input, are assumed Ready, with a warning.
func TestEgressIP(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata:
  name: blue
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec: {topology: Layer3, role: Primary, subnets: [10.128.0.0/16/24]}
---
apiVersion: v1
kind: Node
metadata: {name: node1}
---
apiVersion: v1
kind: Node
metadata:
  name: node2
  labels: {k8s.ovn.org/egress-assignable: ""}
---
apiVersion: k8s.ovn.org/v1
kind: EgressIP
metadata: {name: prod}
spec:
  egressIPs: [172.18.0.50]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: blue}}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: blue}
spec: {nodeName: node1, containers: [{name: app, image: pause}]}
`), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	for _, want := range []string{
		"## EgressIPs of network blue.net\nadds to Logical_Router blue.net_ovn_cluster_router policies:\n  policy 100 ip4.src == 10.128.1.3 reroute 100.88.0.3\n",
		"  policy 102 ip4.src == {10.128.0.0/16} && ip4.dst == {100.65.0.0/16} allow",
		"# zone node2\n## network blue.net\nrouter GR_blue.net_node2",
		"adds to Logical_Router GR_blue.net_node2 nat:\n  nat snat 10.128.1.3/32 -> 172.18.0.50 priority 100 match outport == \"rtoe-GR_blue.net_node2\"\n",
		"adds to Logical_Router blue.net_ovn_cluster_router static_routes:\n  route src-ip 10.128.0.0/16 via 100.65.0.3\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendering lacks %q:\n%s", want, out)
		}
	}
	var warned bool
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w.String(), "assumed Ready")
	}
	if !warned {
		t.Errorf("no warning that the nodes were assumed Ready: %v", res.Warnings)
	}
}

// TestEgressIPSeveralPrimaries: for a namespace with two primary networks
// (seed 003: "egress IP routes and policies must exist on each router"),
// node1 reroutes each pod on its own network's router: the Layer3 pod on
// trees' cluster router, the Layer2 pod on rows' transit router.
func TestEgressIPSeveralPrimaries(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata:
  name: orchard
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: trees, namespace: orchard}
spec: {topology: Layer3, role: Primary, subnets: [10.136.0.0/16/24]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: rows, namespace: orchard}
spec: {topology: Layer2, role: Primary, subnets: [10.137.0.0/24]}
---
apiVersion: v1
kind: Node
metadata: {name: node1}
---
apiVersion: v1
kind: Node
metadata:
  name: node2
  labels: {k8s.ovn.org/egress-assignable: ""}
---
apiVersion: k8s.ovn.org/v1
kind: EgressIP
metadata: {name: orchard}
spec:
  egressIPs: [172.18.0.51]
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: orchard}}
---
apiVersion: v1
kind: Pod
metadata:
  name: a
  namespace: orchard
  annotations: {k8s.ovn.org/requested-primary-udn: trees}
spec: {nodeName: node1, containers: [{name: app, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: c
  namespace: orchard
  annotations: {k8s.ovn.org/requested-primary-udn: rows}
spec: {nodeName: node1, containers: [{name: app, image: pause}]}
`), render.Options{Zones: []string{"node1"}})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	for _, want := range []string{
		"## EgressIPs of network orchard.rows\nadds to Logical_Router orchard.rows_transit_router policies:\n  policy 100 ip4.src == 10.137.0.",
		"## EgressIPs of network orchard.trees\nadds to Logical_Router orchard.trees_ovn_cluster_router policies:\n  policy 100 ip4.src == 10.136.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendering lacks %q:\n%s", want, out)
		}
	}
}
