package render_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

const layer2Versions = `
apiVersion: v1
kind: Namespace
metadata:
  name: blue
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec: {topology: Layer2, role: Primary, subnets: [10.150.0.0/24]}
---
apiVersion: v1
kind: Node
metadata: {name: node1}
---
apiVersion: v1
kind: Node
metadata:
  name: node2
  annotations: {k8s.ovn.org/layer2-topology-version: "1.0"}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: blue}
spec: {nodeName: node1, containers: [{name: app, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: blue}
spec: {nodeName: node2, containers: [{name: app, image: pause}]}
`

// TestLayer2TopologyVersions: render shows each node's Layer2 topology as
// its annotation (or --layer2-topology-version) says: node2 at 1.0 has its
// gateway router on the switch, node1 at 2.0 the upgrade ports toward it;
// every node at 1.0, no transit router at all; an unknown version is
// refused.
func TestLayer2TopologyVersions(t *testing.T) {
	zones := func(opts render.Options) map[string]string {
		t.Helper()
		res := run(t, docsFrom(t, layer2Versions), opts)
		if res.Invalid() {
			t.Fatalf("problems: %v", res.Problems)
		}
		out := map[string]string{}
		for _, part := range strings.Split(output(t, res, "nbctl"), "# zone ")[1:] {
			name, body, _ := strings.Cut(part, "\n")
			out[strings.Fields(name)[0]] = body
		}
		return out
	}
	mixed := zones(render.Options{})
	for zone, want := range map[string][]string{
		"node1": {"port stotr-blue.net_ovn_layer2_switch-upgrade type router", "port stor-GR_blue.net_node2 type remote",
			"route 100.65.0.3/32 via 100.65.0.3 dev trtos-blue.net_ovn_layer2_switch-upgrade"},
		"node2": {"port stor-GR_blue.net_node2 type router", "port stor-GR_blue.net_node1 type remote", "port rtos-GR_blue.net_node2 "},
	} {
		for _, w := range want {
			if !strings.Contains(mixed[zone], w) {
				t.Errorf("zone %s lacks %q:\n%s", zone, w, mixed[zone])
			}
		}
	}
	if strings.Contains(mixed["node2"], "transit_router") {
		t.Errorf("zone node2, at 1.0, has a transit router:\n%s", mixed["node2"])
	}
	old := zones(render.Options{Layer2TopologyVersion: "1.0"})
	for zone, body := range old {
		if strings.Contains(body, "blue.net_transit_router") || strings.Contains(body, "upgrade") {
			t.Errorf("every node at 1.0, yet zone %s has 2.0 rows:\n%s", zone, body)
		}
	}
	in, err := render.Check(docsFrom(t, layer2Versions))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render.Run(context.Background(), in, render.Options{Cluster: config.Default(), Layer2TopologyVersion: "3.0"}); err == nil || !strings.Contains(err.Error(), "3.0") {
		t.Errorf("version 3.0: err = %v, want one naming it", err)
	}
}
