// Package kubetest starts a real kube-apiserver and etcd (the binaries
// hack/install-deps.sh builds) through controller-runtime's envtest, with the
// project's CRDs installed, for integration tests.
package kubetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Options configures Start.
type Options struct {
	// CRDDirs are directories of CRD manifests to install. Nil means the
	// project's own CRDs (config/crd); pass an empty non-nil slice for none.
	CRDDirs []string
	// ControllerManager also runs kube-controller-manager with the
	// controllers integration tests rely on (garbage collection, namespace
	// deletion, EndpointSlices, Deployments, ReplicaSets, service accounts).
	// Only for the tests that need them: it costs about a second at start.
	ControllerManager bool
}

// ControllerManagerControllers are the controllers Options.ControllerManager
// runs.
var ControllerManagerControllers = []string{
	"garbage-collector-controller", "namespace-controller", "endpointslice-controller",
	"deployment-controller", "replicaset-controller", "serviceaccount-controller", "serviceaccount-token-controller",
}

// Env is a running API server.
type Env struct {
	// Config authenticates as a cluster administrator.
	Config *rest.Config
	env    *envtest.Environment
	kcm    *proc.Process
	dir    string
}

// RepoRoot is the repository's top directory (located from this source file,
// so it works from any package's test).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// ProjectCRDDir is where the project's CRD manifests live.
func ProjectCRDDir() string { return filepath.Join(RepoRoot(), "config", "crd") }

// Start starts etcd and kube-apiserver and installs the CRDs. The caller must
// Stop the returned Env.
func Start(opts Options) (*Env, error) {
	if err := deps.CheckKube(); err != nil {
		return nil, err
	}
	dirs := opts.CRDDirs
	if dirs == nil {
		dirs = []string{ProjectCRDDir()}
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory:    deps.KubeAssetsDir(),
		CRDDirectoryPaths:        dirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", deps.KubeAssetsDir(), err)
	}
	// Clients in tests create many objects quickly; the default 5 QPS would make
	// tests measure client-side throttling.
	cfg.QPS, cfg.Burst = 500, 1000
	env := &Env{Config: cfg, env: e}
	if opts.ControllerManager {
		if err := env.startControllerManager(); err != nil {
			_ = env.Stop()
			return nil, err
		}
	}
	return env, nil
}

// startControllerManager runs kube-controller-manager as the user Kubernetes'
// bootstrap RBAC binds its role to, each controller with its own service
// account, serving nothing.
func (e *Env) startControllerManager() error {
	if err := deps.CheckControlPlane(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubetest-kcm-")
	if err != nil {
		return err
	}
	e.dir = dir
	u, err := e.env.AddUser(envtest.User{Name: "system:kube-controller-manager"}, nil)
	if err != nil {
		return fmt.Errorf("adding the controller manager's user: %w", err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return err
	}
	cmd := exec.Command(deps.KubeBinary("kube-controller-manager"), "--kubeconfig="+path,
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(e.env.ControlPlane.APIServer.CertDir, "sa-signer.key"),
		"--controllers="+strings.Join(ControllerManagerControllers, ","))
	e.kcm, err = proc.Start("kube-controller-manager", cmd, filepath.Join(dir, "kube-controller-manager.log"))
	return err
}

// Stop stops kube-controller-manager (if running), the API server and etcd.
func (e *Env) Stop() error {
	if e.kcm != nil {
		e.kcm.Stop(5 * time.Second)
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
	return e.env.Stop()
}

// UserConfig returns a client config authenticated as the given user and
// groups (for RBAC tests).
func (e *Env) UserConfig(name string, groups ...string) (*rest.Config, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return u.Config(), nil
}

// New starts an API server for one test and stops it when the test ends. It
// fails the test when the components are missing, unless OVN_UDN_SKIP_REAL=1.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	deps.Require(t, deps.CheckKube)
	e, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Logf("stopping API server: %v", err)
		}
	})
	return e
}

// Main runs a package's tests against one shared API server, for packages whose
// tests each need an API server but not a fresh one. Use it from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }
func Main(m *testing.M, opts Options, env **Env) {
	if err := deps.CheckKube(); err != nil {
		if os.Getenv(deps.SkipEnv) == "1" {
			fmt.Fprintf(os.Stderr, "skipping: %v (%s=1)\n", err, deps.SkipEnv)
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "real components missing: %v (or set %s=1)\n", err, deps.SkipEnv)
		os.Exit(1)
	}
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping API server: %v\n", err)
	}
	os.Exit(code)
}
