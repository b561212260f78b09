// Package cmtest runs a real cluster-manager against a kubetest API server for
// integration tests, under the least-privilege identity of
// config/rbac/cluster-manager.yaml (so every such test also proves that role is
// sufficient), and offers the polling helpers those tests share.
package cmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

// Admin returns a cluster-admin client with the cluster-manager's scheme.
func Admin(t testing.TB, env *kubetest.Env) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: clustermanager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	identityMu sync.Mutex
	identities = map[string]*rest.Config{}
)

// Identity returns a client config for a user bound only to the
// cluster-manager's ClusterRole.
func Identity(t testing.TB, env *kubetest.Env) *rest.Config {
	return RoleIdentity(t, env, "cluster-manager.yaml", "ovn-udn-cluster-manager")
}

// RoleIdentity returns a client config for a user (named after the role)
// bound only to one ClusterRole of a manifest in config/rbac, so tests run
// each component with exactly the permissions it ships with.
func RoleIdentity(t testing.TB, env *kubetest.Env, manifest, role string) *rest.Config {
	t.Helper()
	identityMu.Lock()
	defer identityMu.Unlock()
	key := fmt.Sprintf("%p/%s", env, role)
	if cfg, ok := identities[key]; ok {
		return rest.CopyConfig(cfg)
	}
	c := Admin(t, env)
	ctx := context.Background()
	if err := ApplyClusterRoles(ctx, c, filepath.Join(kubetest.RepoRoot(), "config", "rbac", manifest)); err != nil {
		t.Fatal(err)
	}
	err := c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: role}},
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cfg, err := env.UserConfig(role)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	identities[key] = cfg
	return rest.CopyConfig(cfg)
}

// ApplyClusterRoles creates the ClusterRoles of a multi-document manifest
// (other kinds are skipped: tests bind users, not service accounts).
func ApplyClusterRoles(ctx context.Context, c client.Client, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		if err := c.Create(ctx, &role); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
}

// Start runs a cluster-manager until the test ends or the returned stop is
// called (stop waits until it has stopped, as a process exit would). It
// gives every node a slice of every network (RenderEverywhere), as most
// tests expect; StartWith sets the options.
//
// OVN_UDN_TEST_LOGS=1 sends the manager's logs to stderr.
func Start(t testing.TB, env *kubetest.Env, cfg config.Cluster) (stop func()) {
	t.Helper()
	return StartWith(t, env, clustermanager.Options{Cluster: cfg, RenderEverywhere: true})
}

// StartWith is Start with the options given (metrics and health off).
func StartWith(t testing.TB, env *kubetest.Env, opts clustermanager.Options) (stop func()) {
	t.Helper()
	DumpLogsOnFailure(t)
	opts.MetricsAddr, opts.HealthAddr = "0", "0"
	mgr, err := clustermanager.New(Identity(t, env), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("cluster-manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

var counter atomic.Int64

// UniqueName returns prefix with a suffix unique in this test binary's run.
func UniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%100000, counter.Add(1))
}

// Namespace creates a uniquely named namespace (there is no namespace
// controller to finish deleting namespaces, so tests never reuse names).
func Namespace(t testing.TB, c client.Client, prefix string, labels map[string]string) string {
	t.Helper()
	name := UniqueName(prefix)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// Eventually polls f until it returns nil, failing the test with f's last
// error after timeout (30 s when zero).
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if err := proc.WaitFor(timeout, 50*time.Millisecond, func() (bool, error) {
		err := f()
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
}

// DeleteAtCleanup deletes obj when the test ends and waits until it is gone
// (the running controller releases its finalizers), so each test leaves the
// shared API server as it found it. Register it after Start: cleanups run in
// reverse, so the manager is still running.
func DeleteAtCleanup(t testing.TB, c client.Client, obj client.Object) {
	t.Cleanup(func() {
		ctx := context.Background()
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting %s: %v", obj.GetName(), err)
			return
		}
		if err := proc.WaitFor(30*time.Second, 50*time.Millisecond, func() (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), err
		}); err != nil {
			t.Errorf("cleanup: %s not gone: %v", obj.GetName(), err)
		}
	})
}

// NetworkCondition reads a UserDefinedNetwork's or ClusterUserDefinedNetwork's
// NetworkCreated condition (refreshing obj); an error until it has one.
func NetworkCondition(ctx context.Context, c client.Client, obj client.Object) (*metav1.Condition, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1.UserDefinedNetwork:
		conds = o.Status.Conditions
	case *v1.ClusterUserDefinedNetwork:
		conds = o.Status.Conditions
	default:
		return nil, fmt.Errorf("%T is not a network", obj)
	}
	cond := meta.FindStatusCondition(conds, v1.ConditionNetworkCreated)
	if cond == nil {
		return nil, fmt.Errorf("%s has no %s condition yet", obj.GetName(), v1.ConditionNetworkCreated)
	}
	return cond, nil
}

// WaitNetworkCreated waits until a UserDefinedNetwork or
// ClusterUserDefinedNetwork reports NetworkCreated True, as a user runs
// `kubectl wait --for=condition=NetworkCreated` before creating pods: a
// primary network refuses namespaces that already have pods.
func WaitNetworkCreated(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	Eventually(t, time.Minute, func() error {
		cond, err := NetworkCondition(context.Background(), c, obj)
		if err != nil {
			return err
		}
		if cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("network %s: NetworkCreated is %s/%s %q, want True", obj.GetName(), cond.Status, cond.Reason, cond.Message)
		}
		return nil
	})
}

// WaitEvent waits until an Event with this reason names obj (by kind, name
// and namespace) and returns its message; it fails the test after a minute.
func WaitEvent(t testing.TB, c client.Client, obj client.Object, kind, reason string) string {
	t.Helper()
	var msg string
	Eventually(t, time.Minute, func() error {
		var events corev1.EventList
		if err := c.List(context.Background(), &events, client.InNamespace(eventNamespace(obj))); err != nil {
			return err
		}
		for _, e := range events.Items {
			o := e.InvolvedObject
			if o.Kind == kind && o.Name == obj.GetName() && o.Namespace == obj.GetNamespace() && e.Reason == reason {
				msg = e.Message
				return nil
			}
		}
		return fmt.Errorf("no %s Event on %s %s/%s", reason, kind, obj.GetNamespace(), obj.GetName())
	})
	return msg
}

// eventNamespace is where Events about obj are kept: its namespace, or
// "default" for cluster-scoped objects.
func eventNamespace(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return metav1.NamespaceDefault
	}
	return obj.GetNamespace()
}
