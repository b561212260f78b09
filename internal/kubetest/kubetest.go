// Package kubetest starts a real kube-apiserver and etcd (the binaries
// hack/install-deps.sh builds) through controller-runtime's envtest, with the
// project's CRDs installed, for integration tests.
package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ovn-udn/ovn-udn/internal/deps"
)

// Options configures Start.
type Options struct {
	// CRDDirs are directories of CRD manifests to install. Nil means the
	// project's own CRDs (config/crd); pass an empty non-nil slice for none.
	CRDDirs []string
}

// Env is a running API server.
type Env struct {
	// Config authenticates as a cluster administrator.
	Config *rest.Config
	env    *envtest.Environment
}

// RepoRoot is the repository's top directory (located from this source file,
// so it works from any package's test).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
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
	return &Env{Config: cfg, env: e}, nil
}

// Stop stops the API server and etcd.
func (e *Env) Stop() error { return e.env.Stop() }

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
