package config_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	manifests "github.com/ovn-udn/ovn-udn/config"
	"github.com/ovn-udn/ovn-udn/internal/cli"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/tools/ovnimage"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// deployImage is the image every container of config/deploy names, so the
// kustomization's one `images:` entry retargets them all.
const deployImage = "ghcr.io/ovn-udn/ovn-udn:latest"

// renderDeploy builds config/deploy.
func renderDeploy(t *testing.T) []*unstructured.Unstructured { return render(t, "deploy") }

// render builds a kustomization with kustomize's library, as `kubectl
// kustomize` does (kubectl v1.34 embeds the same kustomize/api v0.20.1), with
// its default options: files outside a kustomization's directory are refused.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		// Through JSON, so numbers are int64 as in every other Unstructured.
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", r.CurId(), err)
		}
		out = append(out, u)
	}
	return out
}

func objName(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetKind() + " " + u.GetName()
}

func toTyped(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s: %v", objName(u), err)
	}
}

// workload is a Deployment's or DaemonSet's pod template.
type workload struct {
	name string
	pod  corev1.PodTemplateSpec
}

func workloads(t *testing.T, objs []*unstructured.Unstructured) []workload {
	t.Helper()
	var out []workload
	for _, u := range objs {
		switch u.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			toTyped(t, u, &d)
			out = append(out, workload{objName(u), d.Spec.Template})
		case "DaemonSet":
			var d appsv1.DaemonSet
			toTyped(t, u, &d)
			out = append(out, workload{objName(u), d.Spec.Template})
		}
	}
	return out
}

// ovnUDNArgs returns the ovn-udn command line a container runs (subcommand
// first), or nil for a container that runs something else: either the
// binary itself, or a shell script that ends by exec'ing it with the
// container's args ("$@").
func ovnUDNArgs(c corev1.Container) []string {
	switch {
	case len(c.Command) == 1 && c.Command[0] == "ovn-udn":
		return c.Args
	case len(c.Command) == 4 && c.Command[1] == "-c" && strings.Contains(c.Command[2], `exec ovn-udn "$@"`):
		return c.Args
	}
	return nil
}

// TestDeployRBAC: the deploy grants exactly the RBAC of config/rbac (the same
// objects: no role, binding or rule more or less), and each component's pod
// runs as a service account bound to exactly the ClusterRole the sandbox runs
// that component with, so the deploy never grants more than the sandbox
// proves sufficient.
func TestDeployRBAC(t *testing.T) {
	objs := renderDeploy(t)
	isRBAC := func(u *unstructured.Unstructured) bool {
		return u.GroupVersionKind().Group == rbacv1.GroupName
	}
	shipped := map[string]*unstructured.Unstructured{}
	err := fs.WalkDir(manifests.RBAC, "rbac", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := manifests.RBAC.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return fmt.Errorf("%s: %w", path, err)
			}
			if isRBAC(u) {
				shipped[objName(u)] = u
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(shipped) == 0 {
		t.Fatal("no RBAC objects in config/rbac")
	}
	deployed := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if isRBAC(u) {
			deployed[objName(u)] = u
		}
	}
	for name, want := range shipped {
		if d := cmp.Diff(want.Object, deployed[name].Object); deployed[name] == nil || d != "" {
			t.Errorf("%s: the deploy's differs from config/rbac's (-config/rbac +deploy):\n%s", name, d)
		}
	}
	for name := range deployed {
		if shipped[name] == nil {
			t.Errorf("%s: in the deploy, not in config/rbac", name)
		}
	}

	// The ClusterRoles bound to each service account.
	var bindings []rbacv1.ClusterRoleBinding
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			toTyped(t, u, &b)
			bindings = append(bindings, b)
		case "RoleBinding", "Role":
			t.Errorf("%s: the components' roles are ClusterRoles bound cluster-wide; a namespaced grant is not covered by this test", objName(u))
		}
	}
	rolesOf := func(namespace, sa string) []string {
		var out []string
		for _, b := range bindings {
			for _, s := range b.Subjects {
				if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == namespace {
					out = append(out, b.RoleRef.Kind+"/"+b.RoleRef.Name)
				}
			}
		}
		sort.Strings(out)
		return out
	}

	want := sandbox.ComponentRoles()
	seen := map[string]bool{}
	for _, w := range workloads(t, objs) {
		var commands []string
		for _, c := range w.pod.Spec.Containers {
			if args := ovnUDNArgs(c); len(args) > 0 {
				commands = append(commands, args[0])
			}
		}
		if len(commands) == 0 {
			continue
		}
		if len(commands) > 1 {
			t.Errorf("%s runs %v in one pod: they would share one service account, holding the union of their roles", w.name, commands)
			continue
		}
		cmd := commands[0]
		seen[cmd] = true
		role, ok := want[cmd]
		if !ok {
			t.Errorf("%s runs `ovn-udn %s`, which the sandbox does not run under a role of config/rbac", w.name, cmd)
			continue
		}
		sa := w.pod.Spec.ServiceAccountName
		if got := rolesOf("ovn-udn", sa); !slices.Equal(got, []string{"ClusterRole/" + role}) {
			t.Errorf("%s runs `ovn-udn %s` as service account ovn-udn/%s bound to %v; the sandbox runs it with exactly ClusterRole/%s", w.name, cmd, sa, got, role)
		}
	}
	for cmd := range want {
		if !seen[cmd] {
			t.Errorf("the deploy runs no `ovn-udn %s`", cmd)
		}
	}
}

// TestDeployCRDs: the deploy installs the CRDs the sandbox and the tests
// install (config.ParseCRDs, which skips config/crd/kustomization.yaml).
func TestDeployCRDs(t *testing.T) {
	want, err := manifests.ParseCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("config.ParseCRDs found no CRDs")
	}
	got := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, u := range renderDeploy(t) {
		if u.GetKind() == "CustomResourceDefinition" {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			toTyped(t, u, crd)
			got[crd.Name] = crd
		}
	}
	if len(got) != len(want) {
		t.Errorf("the deploy has %d CRDs, config/crd %d", len(got), len(want))
	}
	for _, crd := range want {
		if d := cmp.Diff(crd, got[crd.Name]); d != "" {
			t.Errorf("CRD %s differs (-config/crd +deploy):\n%s", crd.Name, d)
		}
	}
}

// fieldRefPlaceholders stand for the downward API values a pod gets.
var fieldRefPlaceholders = map[string]string{
	"spec.nodeName": "node1",
	"status.podIP":  "192.0.2.10",
	"status.hostIP": "192.0.2.10",
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// containerEnv is a container's environment as the kubelet builds it
// (configMapRef/configMapKeyRef from the rendered ConfigMaps, fieldRef from
// placeholders).
func containerEnv(t *testing.T, c corev1.Container, configMaps map[string]map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("container %s: envFrom other than a ConfigMap", c.Name)
		}
		data, ok := configMaps[from.ConfigMapRef.Name]
		if !ok {
			t.Fatalf("container %s: no ConfigMap %s in the deploy", c.Name, from.ConfigMapRef.Name)
		}
		for k, v := range data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := fieldRefPlaceholders[e.ValueFrom.FieldRef.FieldPath]
			if !ok {
				t.Fatalf("container %s: env %s: no placeholder for %s", c.Name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			v, ok := configMaps[r.Name][r.Key]
			if !ok {
				t.Fatalf("container %s: env %s: no key %s in ConfigMap %s", c.Name, e.Name, r.Key, r.Name)
			}
			env[e.Name] = v
		default:
			t.Fatalf("container %s: env %s: unsupported source", c.Name, e.Name)
		}
	}
	return env
}

// clusterFlagNames are the flags of internal/contract/config, which every component
// must be given alike.
func clusterFlagNames() map[string]bool {
	defaults := config.Default()
	names := map[string]bool{}
	set := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	defaults.AddFlags(set)
	set.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	return names
}

// clusterFlags returns the arguments that set cluster flags, sorted.
func clusterFlags(args []string) []string {
	names := clusterFlagNames()
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if names[name] {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// TestDeployCommandLines: the command lines of config/deploy pass
// checkCommandLines, and its ConfigMap holds the binaries' defaults.
func TestDeployCommandLines(t *testing.T) {
	objs := renderDeploy(t)
	for name, got := range clusterSettings(t, objs) {
		if d := cmp.Diff(config.Default(), got, cmpopts.EquateComparable(netip.Prefix{})); d != "" {
			t.Errorf("ConfigMap %s differs from the binaries' defaults (-default +ConfigMap):\n%s", name, d)
		}
	}
	checkCommandLines(t, objs, deployImage)
}

// TestDeployOverlayFromInstallDoc: the overlay docs/install.md shows renders
// against config/deploy, sets the image and the settings it says, keeps the
// others, and passes checkCommandLines.
func TestDeployOverlayFromInstallDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	const header, base = "# my-cluster/kustomization.yaml\n", "- ../ovn-udn/config/deploy\n"
	_, block, ok := strings.Cut(string(doc), "```yaml\n"+header)
	if block, _, ok = strings.Cut(block, "```"); !ok || !strings.Contains(block, base) {
		t.Fatalf("docs/install.md has no yaml block starting %q that includes %q", header, base)
	}
	overlay := filepath.Join(t.TempDir(), "my-cluster")
	deploy, err := filepath.Abs("deploy")
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(overlay, deploy) // kustomize refuses absolute paths
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	block = strings.Replace(block, base, "- "+rel+"\n", 1)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	objs := render(t, overlay)
	settings := clusterSettings(t, objs)
	if len(settings) != 1 {
		t.Fatalf("the overlay has %d cluster ConfigMaps, want 1 (merged)", len(settings))
	}
	want := config.Default()
	want.ServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:10:96::/112")}
	for name, got := range settings {
		if d := cmp.Diff(want, got, cmpopts.EquateComparable(netip.Prefix{})); d != "" {
			t.Errorf("ConfigMap %s (-want +got):\n%s", name, d)
		}
	}
	checkCommandLines(t, objs, "registry.example.com/ovn-udn:v0.1.0")
}

// clusterSettings returns the settings of each cluster ConfigMap
// (ovn-udn-cluster-<hash>), each key set as the flag it names (CLUSTER_SUBNETS:
// --cluster-subnets) over the defaults, and checks they validate.
func clusterSettings(t *testing.T, objs []*unstructured.Unstructured) map[string]config.Cluster {
	t.Helper()
	out := map[string]config.Cluster{}
	for name, data := range configMaps(t, objs) {
		if !strings.HasPrefix(name, "ovn-udn-cluster-") {
			continue
		}
		c := config.Default()
		set := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
		c.AddFlags(set)
		for key, v := range data {
			flag := strings.ToLower(strings.ReplaceAll(key, "_", "-"))
			if err := set.Set(flag, v); err != nil {
				t.Errorf("ConfigMap %s: %s=%q: %v", name, key, v, err)
			}
		}
		if err := c.Validate(); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
		out[name] = c
	}
	if len(out) == 0 {
		t.Error("no cluster ConfigMap (ovn-udn-cluster-<hash>)")
	}
	return out
}

func configMaps(t *testing.T, objs []*unstructured.Unstructured) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, u := range objs {
		if u.GetKind() == "ConfigMap" {
			var cm corev1.ConfigMap
			toTyped(t, u, &cm)
			out[cm.Name] = cm.Data
		}
	}
	return out
}

// checkCommandLines: every ovn-udn command line parses with the binary's own
// flags (after the kubelet's $(VAR) expansion), every component is given
// every cluster setting, the same, the health and metrics flags listen on
// the ports the containers declare under those names, every probe names a
// declared port, and every container runs image (one `images:` entry sets
// them all).
func checkCommandLines(t *testing.T, objs []*unstructured.Unstructured, image string) {
	t.Helper()
	cms := configMaps(t, objs)
	var cluster []string
	clusterFrom := ""
	for _, w := range workloads(t, objs) {
		for _, c := range w.pod.Spec.Containers {
			where := w.name + " container " + c.Name
			if c.Image != image {
				t.Errorf("%s: image %s, want %s (the kustomization's images entry)", where, c.Image, image)
			}
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && ports[p.HTTPGet.Port.StrVal] == 0 {
					t.Errorf("%s: a probe names port %q, which the container does not declare", where, p.HTTPGet.Port.StrVal)
				}
			}
			if c.LivenessProbe == nil {
				t.Errorf("%s: no liveness probe", where)
			}
			args := ovnUDNArgs(c)
			if args == nil {
				continue
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("%s: the readiness probe is not the component's /readyz", where)
			}
			env := containerEnv(t, c, cms)
			expanded := make([]string, len(args))
			for i, a := range args {
				expanded[i] = varRef.ReplaceAllStringFunc(a, func(ref string) string {
					if v, ok := env[ref[2:len(ref)-1]]; ok {
						return v
					}
					t.Errorf("%s: %s refers to an undefined variable", where, a)
					return ref
				})
			}
			root := cli.NewRootCommand()
			cmd, rest, err := root.Find(expanded)
			if err != nil || cmd == root {
				t.Errorf("%s: `ovn-udn %s` is no subcommand: %v", where, strings.Join(expanded, " "), err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: `ovn-udn %s`: %v", where, strings.Join(expanded, " "), err)
				continue
			}
			if extra := cmd.Flags().Args(); len(extra) > 0 {
				t.Errorf("%s: `ovn-udn %s` takes no arguments, got %q", where, cmd.Name(), extra)
			}
			for _, required := range requiredFlags[cmd.Name()] {
				if f := cmd.Flags().Lookup(required); f == nil || f.Value.String() == "" {
					if !strings.Contains(c.Command[min(2, len(c.Command)-1)], "--"+required+"=") {
						t.Errorf("%s: `ovn-udn %s` needs --%s", where, cmd.Name(), required)
					}
				}
			}
			// Each address flag listens on the port the container declares
			// under that name (the probes and scrapers use the name).
			for flag, port := range map[string]string{"health-addr": "health", "metrics-addr": "metrics"} {
				f := cmd.Flags().Lookup(flag)
				if f == nil {
					continue // the node agent serves no metrics yet (docs/metrics.md)
				}
				_, p, err := net.SplitHostPort(f.Value.String())
				if err != nil || p != fmt.Sprint(ports[port]) {
					t.Errorf("%s: --%s=%s does not listen on the port named %s (%d)", where, flag, f.Value, port, ports[port])
				}
			}
			got := clusterFlags(args)
			if len(got) != len(clusterFlagNames()) {
				t.Errorf("%s is given %v: not every cluster setting, so it could disagree with the others on a default", where, got)
			}
			if clusterFrom == "" {
				cluster, clusterFrom = got, where
			} else if !slices.Equal(got, cluster) {
				t.Errorf("%s is given cluster settings %v, %s %v: every component must agree", where, got, clusterFrom, cluster)
			}
		}
	}
	if clusterFrom == "" {
		t.Fatal("no ovn-udn component in the deploy")
	}
}

// requiredFlags are the flags each subcommand refuses to run without (or
// that its container's script adds).
var requiredFlags = map[string][]string{
	"controller": {"zone", "nb", "sb"},
	"node":       {"node", "ovsdb", "node-ip"},
}

// TestDeployAcceptedByAPIServer applies every object of config/deploy to a
// real kube-apiserver as `kubectl apply --server-side --dry-run=server` does
// (server-side apply, dry run, strict field validation): the CRDs and the
// namespace for real first, so the objects in them resolve, then everything
// in dry run. It fails on any object the API server rejects.
func TestDeployAcceptedByAPIServer(t *testing.T) {
	objs := renderDeploy(t)
	env := kubetest.New(t, kubetest.Options{CRDDirs: []string{}}) // the deploy's own CRDs
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	apply := func(u *unstructured.Unstructured, opts ...client.PatchOption) error {
		u = u.DeepCopy()
		u.SetManagedFields(nil)
		return c.Patch(ctx, u, client.Apply, append([]client.PatchOption{client.FieldOwner("ovn-udn-deploy-test"),
			client.ForceOwnership, client.FieldValidation("Strict")}, opts...)...)
	}

	var crds []string
	for _, u := range objs {
		if k := u.GetKind(); k == "CustomResourceDefinition" || k == "Namespace" {
			if err := apply(u); err != nil {
				t.Fatalf("%s: %v", objName(u), err)
			}
			if k == "CustomResourceDefinition" {
				crds = append(crds, u.GetName())
			}
		}
	}
	for _, name := range crds {
		err := proc.WaitFor(30*time.Second, 50*time.Millisecond, func() (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", name, err)
		}
	}

	kinds := map[string]int{}
	for _, u := range objs {
		if err := apply(u, client.DryRunAll); err != nil {
			t.Errorf("%s rejected: %v", objName(u), err)
			continue
		}
		kinds[u.GetKind()]++
	}
	t.Logf("accepted in dry run: %v", kinds)
	for _, k := range []string{"Deployment", "DaemonSet", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap"} {
		if kinds[k] == 0 {
			t.Errorf("the deploy has no %s", k)
		}
	}

	// Dry run means nothing was stored.
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		err := c.Get(ctx, client.ObjectKeyFromObject(u), &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s after a dry run: %v, want not found", objName(u), err)
		}
	}

	// The control: a misspelt field is rejected, so the checks above would
	// catch one.
	for _, u := range objs {
		if u.GetKind() != "DaemonSet" {
			continue
		}
		bad := u.DeepCopy()
		if err := unstructured.SetNestedField(bad.Object, int64(1), "spec", "template", "spec", "terminationGracePeriodSecond"); err != nil {
			t.Fatal(err)
		}
		if err := apply(bad, client.DryRunAll); err == nil {
			t.Errorf("%s with a misspelt field was accepted: the dry run does not validate strictly", objName(u))
		}
		break
	}
}

// TestDeployRunsOnlyImagePrograms: every program the deploy's containers
// and probes run, directly or in their shell scripts, is one the image
// holds (internal/tools/ovnimage.Programs, or ovn-udn): the image has no
// other, so a script that called grep would fail on every node.
func TestDeployRunsOnlyImagePrograms(t *testing.T) {
	have := map[string]bool{"ovn-udn": true, "/bin/sh": true}
	for _, p := range ovnimage.Programs {
		have[p] = true
	}
	// The shell's own words, which run no program.
	shell := map[string]bool{}
	for _, w := range strings.Fields("if then else elif fi until while do done for in case esac set echo exit export . [ ] test true false cd shift read return local shellcheck") {
		shell[w] = true
	}
	segment := regexp.MustCompile("[|;&\n()`]|\\$\\(")
	// What runs nothing: comments, quoted strings (awk's program, messages),
	// redirections.
	inert := regexp.MustCompile(`(?m)(^|\s)#.*$|'[^']*'|"(\\.|[^"\\])*"|\d*[<>]&?\d*`)
	check := func(where string, argv []string) {
		if len(argv) == 0 {
			return
		}
		if len(argv) >= 3 && argv[0] == "/bin/sh" && argv[1] == "-c" {
			for _, seg := range segment.Split(inert.ReplaceAllString(argv[2], " "), -1) {
				words := strings.Fields(strings.TrimPrefix(strings.TrimSpace(seg), "!"))
				for len(words) > 0 && (words[0] == "exec" || words[0] == "then" || words[0] == "do" || words[0] == "else") {
					words = words[1:]
				}
				if len(words) == 0 {
					continue
				}
				w := words[0]
				if shell[w] || strings.HasPrefix(w, "#") || strings.ContainsAny(w[:1], `$"'[]`) || strings.Contains(w, "=") {
					continue
				}
				if !have[w] {
					t.Errorf("%s: its script runs %s, which the image does not hold", where, w)
				}
			}
			return
		}
		if !have[argv[0]] {
			t.Errorf("%s: runs %s, which the image does not hold", where, argv[0])
		}
	}
	for _, w := range workloads(t, append(renderDeploy(t), render(t, "uninstall")...)) {
		for _, c := range append(w.pod.Spec.InitContainers, w.pod.Spec.Containers...) {
			where := w.name + " container " + c.Name
			check(where, c.Command)
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if p != nil && p.Exec != nil {
					check(where+" probe", p.Exec.Command)
				}
			}
		}
	}
}

// TestDeploySandboxOverlay: the overlay `sandbox up --deploy` applies
// renders against config/deploy, passes checkCommandLines with its image and
// extra flags, and moves every host directory a pod mounts into the
// sandbox's state directory (each node's own, by sub-path), except the
// host's network namespaces.
func TestDeploySandboxOverlay(t *testing.T) {
	l, err := sandbox.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir, err := sandbox.WriteDeployOverlay(l, sandbox.DeploySettings{Image: "ghcr.io/ovn-udn/ovn-udn:v2", Replicas: 1,
		ZoneArgs: []string{"--inactive-grace-period=5s"}, ClusterManagerArgs: []string{"--inactive-grace-period=5s"}})
	if err != nil {
		t.Fatal(err)
	}
	objs := render(t, dir)
	checkCommandLines(t, objs, "ghcr.io/ovn-udn/ovn-udn:v2")
	for _, w := range workloads(t, objs) {
		hostPaths := map[string]string{}
		for _, v := range w.pod.Spec.Volumes {
			if v.HostPath != nil {
				hostPaths[v.Name] = v.HostPath.Path
				if v.HostPath.Path != "/run/netns" && !strings.HasPrefix(v.HostPath.Path, l.Dir+"/") {
					t.Errorf("%s: volume %s is the host's %s, outside the sandbox", w.name, v.Name, v.HostPath.Path)
				}
			}
		}
		for _, c := range w.pod.Spec.Containers {
			for _, m := range c.VolumeMounts {
				p, ok := hostPaths[m.Name]
				if ok && p != "/run/netns" && p != l.Dir+"/deploy/kubeconfig" && m.SubPathExpr == "" {
					t.Errorf("%s container %s: mount %s is every node's %s: no per-node sub-path", w.name, c.Name, m.MountPath, p)
				}
			}
			if runs := slices.Contains(c.Command, "ovn-udn") || (len(c.Command) > 2 && strings.Contains(c.Command[2], "exec ovn-udn")); runs &&
				!slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "KUBECONFIG" }) {
				t.Errorf("%s container %s runs ovn-udn without the pods' kubeconfig", w.name, c.Name)
			}
		}
	}
}

// TestUninstall: config/uninstall renders with one DaemonSet whose cleanup
// runs `ovn-udn node cleanup` with flags the binary takes, on the host paths
// config/deploy's pods use, and needs no Kubernetes API.
func TestUninstall(t *testing.T) {
	deployPaths := map[string]bool{}
	for _, w := range workloads(t, renderDeploy(t)) {
		for _, v := range w.pod.Spec.Volumes {
			if v.HostPath != nil {
				deployPaths[v.HostPath.Path] = true
			}
		}
	}
	ws := workloads(t, render(t, "uninstall"))
	if len(ws) != 1 || len(ws[0].pod.Spec.InitContainers) != 1 {
		t.Fatalf("config/uninstall: want one DaemonSet with one init container, got %+v", ws)
	}
	pod := ws[0].pod.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the cleanup pods mount a service account token they do not use")
	}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || !deployPaths[v.HostPath.Path] {
			t.Errorf("volume %s is no host path config/deploy's pods use", v.Name)
		}
	}
	c := pod.InitContainers[0]
	args := append(slices.Clone(c.Command[1:]), c.Args...)
	root := cli.NewRootCommand()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd.Name() != "cleanup" {
		t.Fatalf("`ovn-udn %s` is not node cleanup: %v", strings.Join(args, " "), err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("`ovn-udn %s`: %v", strings.Join(args, " "), err)
	}
}

// TestUninstallSandboxOverlay: the sandbox's overlay of config/uninstall
// keeps the DaemonSet whole (its containers and init container) and moves
// its host directories into the sandbox.
func TestUninstallSandboxOverlay(t *testing.T) {
	l, err := sandbox.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.WriteDeployOverlay(l, sandbox.DeploySettings{Image: "ghcr.io/ovn-udn/ovn-udn:v2"}); err != nil {
		t.Fatal(err)
	}
	dir, err := sandbox.WriteUninstallOverlay(l, "ghcr.io/ovn-udn/ovn-udn:v2")
	if err != nil {
		t.Fatal(err)
	}
	ws := workloads(t, render(t, dir))
	if len(ws) != 1 || len(ws[0].pod.Spec.Containers) != 1 || len(ws[0].pod.Spec.InitContainers) != 1 {
		t.Fatalf("the overlay's DaemonSet lost containers: %+v", ws)
	}
	for _, v := range ws[0].pod.Spec.Volumes {
		if v.HostPath != nil && !strings.HasPrefix(v.HostPath.Path, l.Dir+"/") {
			t.Errorf("volume %s is the host's %s, outside the sandbox", v.Name, v.HostPath.Path)
		}
	}
	for _, m := range ws[0].pod.Spec.InitContainers[0].VolumeMounts {
		if m.SubPathExpr == "" {
			t.Errorf("mount %s has no per-node sub-path", m.MountPath)
		}
	}
}
