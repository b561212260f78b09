package render_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/manifest"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/netpol"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var examples = filepath.Join("..", "..", "..", "examples")

func run(t *testing.T, docs []manifest.Document, opts render.Options) *render.Result {
	t.Helper()
	in, err := render.Check(docs)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Cluster.ClusterSubnets == nil {
		opts.Cluster = config.Default()
	}
	res, err := render.Run(context.Background(), in, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func output(t *testing.T, res *render.Result, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := render.Write(&b, res, format); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func read(t testing.TB, paths ...string) []manifest.Document {
	t.Helper()
	docs, err := manifest.Read(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenFile(t, filepath.Join("testdata", name), got)
}

// goldenFile compares got with the file at path, or rewrites it with -update.
func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/tools/render -update to create it)", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got; if the change is intended, run go test ./internal/tools/render -update):\n%s", path, d)
	}
}

// TestExamplesGolden renders every example, as YAML and as nbctl text.
func TestExamplesGolden(t *testing.T) {
	res := run(t, read(t, examples), render.Options{})
	if res.Invalid() {
		t.Fatalf("the examples have problems: %v", res.Problems)
	}
	golden(t, "examples.yaml", output(t, res, "yaml"))
	golden(t, "examples.nbctl", output(t, res, "nbctl"))
	node1 := run(t, read(t, filepath.Join(examples, "tenant-layer3.yaml")), render.Options{Zones: []string{"node3"}})
	golden(t, "tenant-layer3-node3.nbctl", output(t, node1, "nbctl"))
}

// TestEachExampleRenders: every example renders alone, without problems, and
// every network in it gets NetworkCreated True and rows in every zone (with
// --render-everywhere).
func TestEachExampleRenders(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(examples, "*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res := run(t, read(t, f), render.Options{RenderEverywhere: true})
			if res.Invalid() {
				t.Fatalf("problems: %v", res.Problems)
			}
			for _, n := range append(res.UserDefinedNetworks, res.ClusterUserDefinedNetworks...) {
				for _, c := range n.Conditions {
					if c.Type == "NetworkCreated" && c.Status != "True" {
						t.Errorf("%s/%s: %+v", n.Namespace, n.Name, c)
					}
				}
			}
			for _, z := range res.Zones {
				for _, n := range z.Networks {
					if n.NotRendered != "" || len(n.Rows) == 0 {
						t.Errorf("zone %s network %s not rendered: %q", z.Name, n.Network, n.NotRendered)
					}
				}
			}
		})
	}
}

// TestDeterministic: the same objects in another order render the same.
func TestDeterministic(t *testing.T) {
	docs := read(t, examples)
	first := output(t, run(t, docs, render.Options{}), "yaml")
	reversed := slices.Clone(docs)
	slices.Reverse(reversed)
	if d := cmp.Diff(first, output(t, run(t, reversed, render.Options{}), "yaml")); d != "" {
		t.Fatalf("output depends on input order (-first +reversed):\n%s", d)
	}
}

// TestRespectsAllocations: values in the input survive; the rest is
// allocated around them.
func TestRespectsAllocations(t *testing.T) {
	docs := docsFrom(t, `
apiVersion: v1
kind: Node
metadata:
  name: n1
  annotations: {k8s.ovn.org/node-id: "7", k8s.ovn.org/node-subnets: '{"default":["10.244.9.0/24"],"blue.net":["10.10.5.0/24"]}'}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: v1
kind: Namespace
metadata: {name: blue, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec: {topology: Layer3, role: Primary, subnets: [10.10.0.0/16/24]}
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: extra
  namespace: blue
  annotations: {k8s.ovn.org/network-id: "42"}
spec:
  config: '{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"blue.extra","netAttachDefName":"blue/extra","topology":"layer2","role":"secondary","subnets":"10.20.0.0/24","mtu":1400}'
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: blue}
spec: {nodeName: n1, containers: [{name: c, image: x}]}
`)
	res := run(t, docs, render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	nodes := map[string]render.Node{}
	for _, n := range res.Nodes {
		nodes[n.Name] = n
	}
	if id := nodes["n1"].Annotations[nodeinfo.NodeIDAnnotation]; id != "7" {
		t.Errorf("n1 node-id %s, want the input's 7", id)
	}
	if id := nodes["n2"].Annotations[nodeinfo.NodeIDAnnotation]; id == "" || id == "7" {
		t.Errorf("n2 node-id %q, want a new one", id)
	}
	subnets, err := nodeinfo.ParseSubnets(nodes["n1"].Annotations[nodeinfo.NodeSubnetsAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	if got := subnets["blue.net"]; len(got) != 1 || got[0].String() != "10.10.5.0/24" {
		t.Errorf("n1 slice of blue.net %v, want the input's 10.10.5.0/24", got)
	}
	if got := subnets["default"]; len(got) == 0 || got[0].String() != "10.244.9.0/24" {
		t.Errorf("n1 default slice %v, want the input's 10.244.9.0/24", got)
	}
	// n2 has no pod of blue.net: no slice of it (cluster-manager allocates
	// a primary network's slices only where used).
	if n2, err := nodeinfo.ParseSubnets(nodes["n2"].Annotations[nodeinfo.NodeSubnetsAnnotation]); err != nil || n2["blue.net"] != nil || n2["default"] == nil {
		t.Errorf("n2 subnets %v (%v), want the default network's and none of blue.net", n2, err)
	}
	ids := map[string]string{}
	for _, n := range res.NetworkAttachmentDefinitions {
		ids[n.Name] = n.Annotations["k8s.ovn.org/network-id"]
	}
	if ids["extra"] != "42" || ids["net"] == "" || ids["net"] == "42" {
		t.Errorf("network IDs %v: want extra=42 kept and net another", ids)
	}
}

func docsFrom(t testing.TB, text string) []manifest.Document {
	t.Helper()
	f := filepath.Join(t.TempDir(), "input.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return read(t, f)
}

// TestInvalidInput: each bad object is reported with its place and reason;
// the good ones still render.
func TestInvalidInput(t *testing.T) {
	docs := docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: red, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: good, namespace: red}
spec: {topology: Layer2, role: Primary, subnets: [10.1.0.0/24]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: no-subnets, namespace: red}
spec: {topology: Layer3, role: Secondary}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: typo, namespace: red}
spec: {topology: Layer2, role: Secondary, subnets: [10.2.0.0/24], mtuu: 1400}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata: {name: long-vrf}
spec:
  namespaceSelector: {matchLabels: {a: b}}
  vrf: a-very-long-vrf-name
  template: {topology: Layer2, role: Primary, subnets: [10.3.0.0/24]}
---
apiVersion: v1
kind: Pod
metadata: {name: lost, namespace: nowhere}
spec: {nodeName: n1, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: Bad_Name, namespace: red}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: good, namespace: red}
spec: {topology: Layer2, role: Primary, subnets: [10.9.0.0/24]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: red}
`)
	res := run(t, docs, render.Options{})
	var got []string
	for _, p := range res.Problems {
		got = append(got, p.String())
	}
	want := []string{
		"#3: UserDefinedNetwork red/no-subnets: [spec: Invalid value: \"object\": subnets is required for Layer3 topology",
		"#4: UserDefinedNetwork red/typo: strict decoding error: unknown field \"spec.mtuu\"",
		// As the API server says it: a too-long string keeps it from
		// evaluating the CEL rules, and it says so.
		"#5: ClusterUserDefinedNetwork long-vrf: [spec.vrf: Too long: may not be more than 15 bytes, <nil>: Invalid value: null: some validation rules were not checked",
		"#6: Pod nowhere/lost: namespaces \"nowhere\" not found",
		"#7: Pod red/Bad_Name: metadata.name: Invalid value: \"Bad_Name\"",
		"#8: UserDefinedNetwork red/good: already defined at",
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d like:\n%s", strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant it to contain %s", i, got[i], want[i])
		}
	}
	if !res.Invalid() {
		t.Error("Invalid() false with problems")
	}
	var warned bool
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w.String(), "apps/v1, Kind=Deployment is not rendered; ignored")
	}
	if !warned {
		t.Errorf("no warning about the Deployment: %v", res.Warnings)
	}
	if len(res.NetworkAttachmentDefinitions) != 1 || res.NetworkAttachmentDefinitions[0].Name != "good" ||
		!strings.Contains(string(res.NetworkAttachmentDefinitions[0].Config), "10.1.0.0/24") {
		t.Errorf("the valid network (its first definition) was not rendered: %+v", res.NetworkAttachmentDefinitions)
	}
}

// TestTerminatingObject: an object read back while being deleted is
// rendered as it is until then, with a warning.
func TestTerminatingObject(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: plain}
---
apiVersion: v1
kind: Pod
metadata: {name: going, namespace: plain, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [example.com/hold]}
spec: {nodeName: n1, containers: [{name: c, image: busybox}]}
`), render.Options{})
	if res.Invalid() || len(res.Pods) != 1 || res.Pods[0].Networks["default"].MAC == "" {
		t.Fatalf("terminating pod not rendered: problems %v, pods %+v", res.Problems, res.Pods)
	}
	var warned bool
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w.String(), "Pod plain/going: is being deleted")
	}
	if !warned {
		t.Errorf("no warning about the terminating pod: %v", res.Warnings)
	}
}

// TestSeedCUDNExample: the seed's CUDN example selects namespaces by the
// label the API server gives every namespace (kubernetes.io/metadata.name),
// and excludes a range written with host bits: render selects the namespace
// as the API server would and writes the masked exclusion.
func TestSeedCUDNExample(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: mynamespace}
---
apiVersion: k8s.ovn.org/v1
kind: ClusterUserDefinedNetwork
metadata: {name: db-network}
spec:
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: In, values: [mynamespace, theirnamespace]}
  template:
    topology: Layer2
    role: Secondary
    subnets: [10.0.0.0/24]
    excludeSubnets: [10.0.0.100/26]
`), render.Options{})
	if res.Invalid() {
		t.Fatalf("problems: %v", res.Problems)
	}
	if len(res.NetworkAttachmentDefinitions) != 1 {
		t.Fatalf("%d NADs, want the one of mynamespace:\n%s", len(res.NetworkAttachmentDefinitions), output(t, res, "yaml"))
	}
	if out := output(t, res, "json"); !strings.Contains(out, `"excludeSubnets": "10.0.0.64/26"`) {
		t.Errorf("the NAD's config lacks the masked exclusion:\n%s", out)
	}
}

// TestNetworkPolicy: render shows a policy's rows in the zone of the pods it
// selects, with the ports by name and the peer's addresses on the
// namespace's network (not the peer pod's default-network address).
func TestNetworkPolicy(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: shop}
spec: {topology: Layer3, role: Primary, subnets: [10.132.0.0/16/24]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {role: frontend}}
spec: {nodeName: n2, containers: [{name: c, image: busybox}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {role: frontend}}}], ports: [{port: 80}]}]
`), render.Options{})
	var b strings.Builder
	if err := render.Write(&b, res, "nbctl"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	n1, n2, _ := strings.Cut(out, "# zone n2")
	pg := netpol.PortGroupName("shop.net", "shop", "web")
	peer, err := netpol.ParsePeerKey("ns:shop;pods:role=frontend")
	if err != nil {
		t.Fatal(err)
	}
	as := netpol.AddressSetName("shop.net", peer, false)
	for _, want := range []string{
		"port-group " + pg + " [shop.net_shop_web]",
		"acl to-lport 1001 outport == @" + pg + " && (ip4.src == {$" + as + "}) && (tcp.dst == 80) allow-related",
		"address-set " + as + " [10.132.",
	} {
		if !strings.Contains(n1, want) {
			t.Errorf("zone n1 lacks %q:\n%s", want, n1)
		}
	}
	if strings.Contains(n2, "port-group "+pg) {
		t.Errorf("zone n2 has the policy's port group, and no pod it selects:\n%s", n2)
	}
	if !strings.Contains(n2, "address-set "+as+" [10.132.") {
		t.Errorf("zone n2 lacks the peer's address set (its pods are everywhere's peers):\n%s", n2)
	}
}

// TestOverlappingNetworksRefused: a pod whose secondary network overlaps
// its primary network gets no interface on any network (no address
// allocated anywhere, no logical port) and an InvalidNetworkSelection Event
// naming both networks; its neighbour on the primary alone is attached.
func TestOverlappingNetworksRefused(t *testing.T) {
	res := run(t, docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: ov, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: prim, namespace: ov}
spec: {topology: Layer3, role: Primary, subnets: [10.128.0.0/16/24]}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: sec, namespace: ov}
spec: {topology: Layer2, role: Secondary, subnets: [10.128.7.0/24]}
---
apiVersion: v1
kind: Pod
metadata: {name: both, namespace: ov, annotations: {k8s.v1.cni.cncf.io/networks: sec}}
spec: {nodeName: n1, containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: v1
kind: Pod
metadata: {name: alone, namespace: ov}
spec: {nodeName: n1, containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
`), render.Options{})
	nets := map[string]int{}
	for _, p := range res.Pods {
		nets[p.Name] = len(p.Networks)
	}
	if nets["both"] != 0 || nets["alone"] != 2 {
		t.Errorf("networks per pod %v: want none for both, default and primary for alone", nets)
	}
	var refused bool
	for _, e := range res.Events {
		refused = refused || e.Object == "Pod ov/both" && e.Reason == "InvalidNetworkSelection" &&
			strings.Contains(e.Message, "ov/prim") && strings.Contains(e.Message, "ov/sec") && strings.Contains(e.Message, "10.128.7.0/24")
	}
	if !refused {
		t.Errorf("no InvalidNetworkSelection Event naming both networks: %+v", res.Events)
	}
	if nb := output(t, res, "nbctl"); strings.Contains(nb, "ov_both") || !strings.Contains(nb, "ov_alone") {
		t.Errorf("want rows for ov/alone and none for the refused ov/both:\n%s", nb)
	}
}

// TestUserNetworkRoutesShareBFD: with BFD on, a user-defined network's
// gateway-router default routes refer to the default network's BFD session
// with the same next hop, as the zone controller writes them (seed 004:
// one session per node and next hop, shared). Render used to leave the
// reference out.
func TestUserNetworkRoutesShareBFD(t *testing.T) {
	docs := docsFrom(t, `
apiVersion: v1
kind: Namespace
metadata: {name: blue, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: blue}
spec: {topology: Layer3, role: Primary, subnets: [10.128.0.0/16/24]}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: blue}
spec: {nodeName: n1, containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
`)
	for _, bfd := range []bool{true, false} {
		res := run(t, docs, render.Options{Gateway: &config.Gateway{ECMP: true, BFD: bfd}})
		sessions := map[string]bool{} // the default network's BFD rows
		refs := map[string][]string{} // default routes' BFD references, by network
		for _, z := range res.Zones {
			for _, n := range z.Networks {
				for _, m := range n.Models {
					switch row := m.(type) {
					case *nbdb.BFD:
						if n.Network != "default" {
							t.Errorf("network %s renders a BFD row of its own: %+v", n.Network, row)
						}
						sessions[row.UUID] = true
					case *nbdb.LogicalRouterStaticRoute:
						if row.IPPrefix == "0.0.0.0/0" && row.OutputPort != nil && strings.HasPrefix(*row.OutputPort, "rtoe-") {
							ref := ""
							if row.BFD != nil {
								ref = *row.BFD
							}
							refs[n.Network] = append(refs[n.Network], ref)
						}
					}
				}
			}
		}
		user := refs["blue.net"]
		if len(user) == 0 {
			t.Fatalf("BFD %v: no default route on blue.net's gateway router: %v", bfd, refs)
		}
		for _, ref := range user {
			if bfd && !sessions[ref] {
				t.Errorf("BFD on: blue.net's default route refers to %q, not to one of the default network's sessions %v", ref, sessions)
			}
			if !bfd && ref != "" {
				t.Errorf("BFD off: blue.net's default route refers to %q", ref)
			}
		}
		if bfd == (len(sessions) == 0) {
			t.Errorf("BFD %v: the default network has sessions %v", bfd, sessions)
		}
	}
}
