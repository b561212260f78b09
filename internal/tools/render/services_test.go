package render_test

import (
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// TestServices: a Service with its EndpointSlice renders as the zone would
// write it: one load balancer per protocol in its network's group, backends
// of ready endpoints only; the API server's Service also opens the default
// network's isolation; a Service without a cluster IP is reported.
func TestServices(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: default}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop}
spec: {nodeName: node1, containers: [{name: app, image: x}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIP: 10.96.0.50
  clusterIPs: [10.96.0.50]
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}, {name: dns, port: 53, protocol: UDP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}, {name: dns, port: 5353, protocol: UDP}]
endpoints:
- {addresses: [10.244.0.5], conditions: {ready: true}, nodeName: node1}
- {addresses: [10.244.1.5], conditions: {ready: false}, nodeName: node2}
---
apiVersion: v1
kind: Service
metadata: {name: kubernetes, namespace: default}
spec:
  clusterIP: 10.96.0.1
  clusterIPs: [10.96.0.1]
  ports: [{name: https, port: 443, targetPort: 6443}]
---
apiVersion: v1
kind: Service
metadata: {name: np, namespace: shop}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  clusterIP: 10.96.0.60
  clusterIPs: [10.96.0.60]
  externalIPs: [172.30.0.10]
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, nodePort: 30080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: np-abc, namespace: shop, labels: {kubernetes.io/service-name: np}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.0.5], conditions: {ready: true}, nodeName: node1}
- {addresses: [10.244.1.6], conditions: {ready: true}, nodeName: node2}
---
apiVersion: v1
kind: Service
metadata: {name: pending, namespace: shop}
spec: {ports: [{port: 80}]}
`), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	for _, want := range []string{
		`  lb Service_shop/web_TCP_cluster tcp 10.96.0.50:80 -> [10.244.0.5:8080]`,
		`  lb Service_shop/web_UDP_cluster udp 10.96.0.50:53 -> [10.244.0.5:5353]`,
		`  lb Service_default/kubernetes_TCP_cluster tcp 10.96.0.1:443 -> []`,
		`  acl from-lport 1001 inport == @udn_isolated_pods && ip4.dst == 10.96.0.1 && tcp.dst == 443 allow-related`,
		"## service shop/pending\n(not rendered: no cluster IP",
		// From outside: on node1's gateway router only, node1's endpoint
		// only (externalTrafficPolicy Local), keeping the client address.
		"router GR_node1 ",
		`  lb Service_shop/np_TCP_node_router_node1 tcp 172.18.0.10:30080 -> [10.244.0.5:8080] {event=false neighbor_responder=none reject=true skip_snat=true}`,
		`  lb Service_shop/np_TCP_node_router_node1 tcp 172.30.0.10:80 -> [10.244.0.5:8080] {event=false neighbor_responder=none reject=true skip_snat=true}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the rendering lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "10.244.1.5") {
		t.Errorf("a not-ready endpoint is a backend:\n%s", out)
	}
}
