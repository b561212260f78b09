package render_test

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// TestShapesRenderTheSameRows: a cluster whose networks are written in
// ovn-kubernetes' shape (a UDN's layer3 and layer2 blocks, a CUDN's
// network block) renders exactly as the same cluster in the seed's flat
// shape: NADs, allocation, pod annotations, conditions and every zone's
// Northbound rows.
func TestShapesRenderTheSameRows(t *testing.T) {
	const rest = `
apiVersion: v1
kind: Namespace
metadata: {name: blue, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: v1
kind: Namespace
metadata: {name: green, labels: {k8s.ovn.org/primary-user-defined-network: "", tenant: green}}
---
apiVersion: v1
kind: Node
metadata: {name: node1}
---
apiVersion: v1
kind: Node
metadata: {name: node2}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: blue}
spec: {nodeName: node1, containers: [{name: c, image: agnhost}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: green}
spec: {nodeName: node2, containers: [{name: c, image: agnhost}]}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: blue, annotations: {k8s.v1.cni.cncf.io/networks: blue/side}}
spec: {nodeName: node2, containers: [{name: c, image: agnhost}]}
`
	flat := rest + `---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec: {topology: Layer3, role: Primary, mtu: 1300, subnets: [10.20.0.0/16/24, "fd00:20::/48/64"]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: side, namespace: blue}
spec: {topology: Layer2, role: Secondary, subnets: [192.168.7.0/24]}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata: {name: green}
spec:
  namespaceSelector: {matchLabels: {tenant: green}}
  template: {topology: Layer2, role: Primary, subnets: [10.30.0.0/24], excludeSubnets: [10.30.0.0/28], ipam: {lifecycle: Persistent}}
`
	ovnk := rest + `---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec:
  topology: Layer3
  layer3: {role: Primary, mtu: 1300, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: "fd00:20::/48", hostSubnet: 64}]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: side, namespace: blue}
spec: {topology: Layer2, layer2: {role: Secondary, subnets: [192.168.7.0/24]}}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata: {name: green}
spec:
  namespaceSelector: {matchLabels: {tenant: green}}
  network: {topology: Layer2, layer2: {role: Primary, subnets: [10.30.0.0/24], reservedSubnets: [10.30.0.0/28], ipam: {lifecycle: Persistent}}}
`
	a, b := run(t, docsFrom(t, flat), render.Options{}), run(t, docsFrom(t, ovnk), render.Options{})
	for _, res := range []*render.Result{a, b} {
		if res.Invalid() {
			t.Fatalf("refused: %v", res.Problems)
		}
	}
	if len(a.NetworkAttachmentDefinitions) != 3 {
		t.Fatalf("%d NADs rendered, want 3", len(a.NetworkAttachmentDefinitions))
	}
	// The input's own text (where each object was read) differs.
	where := regexp.MustCompile(`(?m)^\s*where: .*$`)
	want, got := where.ReplaceAllString(output(t, a, "yaml"), ""), where.ReplaceAllString(output(t, b, "yaml"), "")
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("render (-flat +ovn-kubernetes' shape):\n%s", d)
	}
}
