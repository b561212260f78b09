package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	manifests "github.com/ovn-udn/ovn-udn/config"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// Component identities: each ovn-udn subcommand runs as a user bound only to
// its ClusterRole from config/rbac, exactly as shipped.
var roles = []struct{ command, manifest, role string }{
	{"cluster-manager", "cluster-manager.yaml", "ovn-udn-cluster-manager"},
	{"controller", "zone-controller.yaml", "ovn-udn-zone-controller"},
	{"node", "node.yaml", "ovn-udn-node"},
}

// ComponentRoles maps each ovn-udn subcommand the sandbox runs to the one
// ClusterRole it runs with, so the sandbox proves that role sufficient; the
// deploy manifests must grant each component exactly that role
// (config/deploy_test.go).
func ComponentRoles() map[string]string {
	out := map[string]string{}
	for _, r := range roles {
		out[r.command] = r.role
	}
	return out
}

// roleOf is the ClusterRole (and user) a subcommand runs as.
func roleOf(command string) string { return ComponentRoles()[command] }

// Kubernetes' own components run as the users Kubernetes' bootstrap RBAC
// binds their roles to (system:kube-controller-manager, whose controllers
// then each use their own service account, and system:kube-scheduler).
var controlPlaneUsers = []string{"system:kube-controller-manager", "system:kube-scheduler"}

// kube is the sandbox's API server and etcd.
type kube struct {
	env   *envtest.Environment
	admin client.Client
}

// startKube starts etcd and kube-apiserver with their data and certificates in
// the state directory, installs the CRDs, and writes the administrator's and
// each component's kubeconfig.
//
// With deployed set, ovn-udn's own objects (CRDs, admission policies, RBAC)
// are left to config/deploy (deploy.go), as on a cluster.
func startKube(l Layout, deployed bool) (*kube, error) {
	if err := errors.Join(deps.CheckKube(), deps.CheckControlPlane()); err != nil {
		return nil, err
	}
	crds, err := manifests.ParseCRDs()
	if err != nil {
		return nil, err
	}
	if deployed {
		crds = nil
	}
	dir := l.KubeDir()
	for _, d := range []string{filepath.Join(dir, "etcd"), filepath.Join(dir, "certs")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	apiLog, err := os.OpenFile(filepath.Join(dir, "kube-apiserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	etcdLog, err := os.OpenFile(filepath.Join(dir, "etcd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    deps.KubeAssetsDir(),
		CRDInstallOptions:        envtest.CRDInstallOptions{CRDs: crds},
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(dir, "etcd"), Out: etcdLog, Err: etcdLog}
	env.ControlPlane.APIServer = &envtest.APIServer{CertDir: filepath.Join(dir, "certs"), Out: apiLog, Err: apiLog}
	// Services get ClusterIPs from the ranges every ovn-udn component assumes.
	var ranges []string
	for _, p := range config.Default().ServiceCIDRs {
		ranges = append(ranges, p.String())
	}
	env.ControlPlane.APIServer.Configure().Set("service-cluster-ip-range", strings.Join(ranges, ","))
	// Real nodes' kubelets (logs, exec, port-forward) by their address: no
	// DNS here knows the nodes' names.
	env.ControlPlane.APIServer.Configure().Set("kubelet-preferred-address-types", "InternalIP")
	// ... from the control namespace on the underlay, not from the host
	// (startControlLink).
	egress := filepath.Join(dir, "egress-selector.yaml")
	if err := os.WriteFile(egress, []byte(egressConfig(l.egressSocket())), 0o600); err != nil {
		return nil, err
	}
	env.ControlPlane.APIServer.Configure().Set("egress-selector-config-file", egress)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd: %w (logs in %s)", err, dir)
	}
	k := &kube{env: env}
	if k.admin, err = client.New(cfg, client.Options{Scheme: clustermanager.Scheme()}); err != nil {
		return k, err
	}
	admin, err := env.AddUser(envtest.User{Name: "sandbox-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return k, err
	}
	if err := writeKubeconfig(admin, l.Kubeconfig()); err != nil {
		return k, err
	}
	for _, name := range controlPlaneUsers {
		u, err := env.AddUser(envtest.User{Name: name}, nil)
		if err != nil {
			return k, err
		}
		if err := writeKubeconfig(u, componentKubeconfig(l, name)); err != nil {
			return k, err
		}
	}
	if deployed {
		return k, nil
	}
	if err := k.applyAdmission(); err != nil {
		return k, err
	}
	// Tenants' rights on UserDefinedNetworks, aggregated into the built-in
	// admin, edit and view roles by kube-controller-manager.
	if err := k.applyClusterRoles("tenant.yaml"); err != nil {
		return k, err
	}
	for _, r := range roles {
		if err := k.bindRole(r.manifest, r.role); err != nil {
			return k, err
		}
		u, err := env.AddUser(envtest.User{Name: r.role}, nil)
		if err != nil {
			return k, err
		}
		if err := writeKubeconfig(u, componentKubeconfig(l, r.role)); err != nil {
			return k, err
		}
	}
	return k, nil
}

func componentKubeconfig(l Layout, role string) string {
	return filepath.Join(l.KubeDir(), strings.ReplaceAll(role, ":", "-")+".kubeconfig")
}

// serviceAccountKey is the key the API server signs service account tokens
// with (envtest writes it); kube-controller-manager's token controller signs
// with it too.
func serviceAccountKey(l Layout) string { return filepath.Join(l.KubeDir(), "certs", "sa-signer.key") }

func writeKubeconfig(u *envtest.AuthenticatedUser, path string) error {
	b, err := u.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// bindRole creates a manifest's ClusterRoles and binds role to a user of
// the same name.
func (k *kube) bindRole(manifest, role string) error {
	if err := k.applyClusterRoles(manifest); err != nil {
		return err
	}
	err := k.admin.Create(context.Background(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: role}},
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// applyClusterRoles creates the ClusterRoles of a manifest of config/rbac.
func (k *kube) applyClusterRoles(manifest string) error {
	ctx := context.Background()
	b, err := manifests.RBAC.ReadFile("rbac/" + manifest)
	if err != nil {
		return err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var r rbacv1.ClusterRole
		if err := dec.Decode(&r); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("%s: %w", manifest, err)
		}
		if r.Kind != "ClusterRole" {
			continue
		}
		if err := k.admin.Create(ctx, &r); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// applyAdmission creates the admission policies of config/admission.
func (k *kube) applyAdmission() error {
	ctx := context.Background()
	policies, bindings, err := manifests.ParseAdmission()
	if err != nil {
		return err
	}
	for _, p := range policies {
		if err := k.admin.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("admission policy %s: %w", p.Name, err)
		}
	}
	for _, b := range bindings {
		if err := k.admin.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("admission policy binding %s: %w", b.Name, err)
		}
	}
	return nil
}

// NodeObject is the Node a sandbox node registers, as a kubelet would at
// its start: its name and the well-known labels, no annotations, no status
// (its kubelet reports it). Registering it again after it was deleted is
// the node joining the cluster again.
func NodeObject(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}}
}

func (k *kube) stop() error {
	if k == nil || k.env == nil {
		return nil
	}
	return k.env.Stop()
}

// restConfigFor loads a kubeconfig written by startKube.
func restConfigFor(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", path, err)
	}
	return cfg, nil
}

func (k *kube) node(name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := k.admin.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		return nil, err
	}
	return n, nil
}
