package render_test

import (
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// TestEgressFirewall: a namespace's EgressFirewall renders where its pod
// runs (node1), not where none does (node2): its port group holds the
// pod's port, its ACLs keep the rules' order, the deny leaves the
// network's subnet out, and the dnsName rule, which render does not
// resolve, is a problem.
func TestEgressFirewall(t *testing.T) {
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
metadata: {name: node2}
---
apiVersion: k8s.ovn.org/v1
kind: EgressFirewall
metadata: {name: default, namespace: blue}
spec:
  egress:
  - {type: Allow, to: {cidrSelector: 198.51.100.10/32}, ports: [{protocol: TCP, port: 9000}]}
  - {type: Allow, to: {dnsName: www.example.com}}
  - {type: Deny, to: {cidrSelector: 0.0.0.0/0}}
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
	pg := egressfirewall.PortGroupName("blue.net", "blue")
	node1, node2, _ := strings.Cut(out, "# zone node2")
	for _, want := range []string{
		"## EgressFirewall of namespace blue\nport-group " + pg + " [blue.net_blue_a]\n",
		"  acl to-lport 10000 (ip4.dst == 198.51.100.10/32) && inport == @" + pg + " && ((tcp && (tcp.dst == 9000))) allow\n",
		"  acl to-lport 9998 (ip4.dst == 0.0.0.0/0 && ip4.dst != 10.128.0.0/16) && inport == @" + pg + " drop\n",
		"(left out: rule 1: dnsName www.example.com: no DNS server is configured (--dns-server))",
	} {
		if !strings.Contains(node1, want) {
			t.Errorf("node1's rendering lacks %q:\n%s", want, node1)
		}
	}
	if strings.Contains(node2, "EgressFirewall") {
		t.Errorf("node2, with no pod of blue, renders its firewall:\n%s", node2)
	}
}

// TestEgressQoS: a namespace's EgressQoS renders on node1, where its pods
// run: a QoS row per rule on the network's switch there, the voice pod's
// address in the first rule only.
func TestEgressQoS(t *testing.T) {
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
apiVersion: k8s.ovn.org/v1
kind: EgressQoS
metadata: {name: default, namespace: blue}
spec:
  egress:
  - {dscp: 46, dstCIDR: 198.51.100.0/24, podSelector: {matchLabels: {app: voice}}}
  - {dscp: 10}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: blue, labels: {app: voice}}
spec: {nodeName: node1, containers: [{name: app, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: blue}
spec: {nodeName: node1, containers: [{name: app, image: pause}]}
`), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	want := "## EgressQoS of namespace blue\nadds to Logical_Switch blue.net_node1 qos_rules:\n" +
		"  qos to-lport 1000 ip4.src == {10.128.0.3} && ip4.dst == 198.51.100.0/24 dscp=46\n" +
		"  qos to-lport 999 ip4.src == {10.128.0.3, 10.128.0.4} dscp=10\n"
	if !strings.Contains(out, want) {
		t.Errorf("the rendering lacks %q:\n%s", want, out)
	}
}

// TestEgressService: render elects the host as cluster-manager would (the
// node of the Service's one endpoint, from its EndpointSlice) and renders
// its rows with the EgressIPs': on node2, the host, the SNAT of the
// endpoint to the load-balancer IP.
func TestEgressService(t *testing.T) {
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
metadata: {name: node2}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: blue, labels: {app: web}}
spec: {nodeName: node2, containers: [{name: app, image: pause}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: blue}
spec: {type: LoadBalancer, selector: {app: web}, clusterIP: 10.96.0.50, ports: [{port: 80, protocol: TCP}]}
status: {loadBalancer: {ingress: [{ip: 172.18.0.50}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: blue, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.128.1.3], nodeName: node2, conditions: {ready: true}}]
ports: [{port: 80, protocol: TCP}]
---
apiVersion: k8s.ovn.org/v1
kind: EgressService
metadata: {name: web, namespace: blue}
spec: {sourceIPBy: LoadBalancerIP}
`), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	_, node2, _ := strings.Cut(out, "# zone node2")
	if want := "nat snat 10.128.1.3/32 -> 172.18.0.50"; !strings.Contains(node2, want) {
		t.Errorf("node2's rendering lacks %q:\n%s", want, node2)
	}
}

// TestVMMigration: a VM's two virt-launcher pods render as one shared port
// on their Layer2 network, bound in the source's and the target's zones to
// both chassis with activation-strategy=rarp; neither pod has a port of its
// own there, and a third node, without pods of the network, renders none.
func TestVMMigration(t *testing.T) {
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
spec: {topology: Layer2, role: Primary, subnets: [10.150.0.0/24]}
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
kind: Node
metadata: {name: node3}
---
apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-vm1-a
  namespace: blue
  creationTimestamp: "2026-11-28T00:00:00Z"
  labels: {kubevirt.io: virt-launcher, vm.kubevirt.io/name: vm1}
  annotations: {kubevirt.io/domain: vm1, kubevirt.io/allow-pod-bridge-network-live-migration: ""}
spec: {nodeName: node1, containers: [{name: compute, image: pause}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: virt-launcher-vm1-b
  namespace: blue
  creationTimestamp: "2026-11-28T00:01:00Z"
  labels: {kubevirt.io: virt-launcher, vm.kubevirt.io/name: vm1}
  annotations: {kubevirt.io/domain: vm1, kubevirt.io/allow-pod-bridge-network-live-migration: ""}
spec: {nodeName: node2, containers: [{name: compute, image: pause}]}
`), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	out := output(t, res, "nbctl")
	zones := map[string]string{}
	for _, part := range strings.Split(out, "# zone ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		zones[strings.Fields(name)[0]] = body
	}
	want := "port blue.net_blue_vm_vm1 addresses [0a:58:0a:96:00:03 10.150.0.3] security [0a:58:0a:96:00:03 10.150.0.3] " +
		"{activation-strategy=rarp requested-chassis=chassis-node1,chassis-node2 requested-tnl-key=16}"
	for _, zone := range []string{"node1", "node2"} {
		body := zones[zone]
		if !strings.Contains(body, want) {
			t.Errorf("zone %s lacks %q:\n%s", zone, want, body)
		}
		if strings.Contains(body, "port blue.net_blue_virt-launcher") {
			t.Errorf("zone %s has a port of a virt-launcher pod's own on the network:\n%s", zone, body)
		}
	}
	if strings.Contains(zones["node3"], "vm_vm1") {
		t.Errorf("zone node3 renders the VM's port without pods of its network:\n%s", zones["node3"])
	}
}
