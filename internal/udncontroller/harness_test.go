package udncontroller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"k8s.io/apimachinery/pkg/types"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

var env *kubetest.Env

func TestMain(m *testing.M) {
	if os.Getenv("OVN_UDN_TEST_LOGS") == "1" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	}
	kubetest.Main(m, kubetest.Options{}, &env)
}

// admin returns a client with cluster-admin rights.
func admin(t testing.TB) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: clustermanager.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var rbacOnce sync.Once
var managerConfig *rest.Config

// managerIdentity returns a client config for a user bound only to the
// cluster-manager's ClusterRole from config/rbac, so every test also proves
// that role is sufficient.
func managerIdentity(t testing.TB) *rest.Config {
	t.Helper()
	var err error
	rbacOnce.Do(func() {
		c := admin(t)
		ctx := context.Background()
		if err = applyManifest(ctx, c, filepath.Join(kubetest.RepoRoot(), "config", "rbac", "cluster-manager.yaml")); err != nil {
			return
		}
		err = c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "test-cluster-manager"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "ovn-udn-cluster-manager"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "ovn-udn-cluster-manager"}},
		})
		if err != nil {
			return
		}
		managerConfig, err = env.UserConfig("ovn-udn-cluster-manager")
	})
	if err != nil || managerConfig == nil {
		t.Fatalf("setting up the cluster-manager identity: %v", err)
	}
	return rest.CopyConfig(managerConfig)
}

// applyManifest creates the ClusterRoles of a multi-document RBAC manifest
// (other kinds are skipped: tests bind users, not service accounts).
func applyManifest(ctx context.Context, c client.Client, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var role rbacv1.ClusterRole
		if err := dec.Decode(&role); err != nil {
			if err.Error() == "EOF" {
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

// startManager runs a cluster-manager until the test ends (or stop is called).
func startManager(t testing.TB, cfg config.Cluster) (stop func()) {
	t.Helper()
	rc := managerIdentity(t)
	rc.QPS, rc.Burst = 500, 1000
	mgr, err := clustermanager.New(rc, clustermanager.Options{Cluster: cfg, MetricsAddr: "0", HealthAddr: "0"})
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

var nsCounter int

// namespace creates a namespace with a unique name built from prefix.
func namespace(t testing.TB, c client.Client, prefix string, labels map[string]string) string {
	t.Helper()
	nsCounter++
	name := fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%100000, nsCounter)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

var primaryLabel = map[string]string{v1.PrimaryNetworkLabel: ""}

func pod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// eventually polls f until it returns nil or the deadline passes.
func eventually(t testing.TB, f func() error) {
	t.Helper()
	if err := proc.WaitFor(30*time.Second, 50*time.Millisecond, func() (bool, error) {
		err := f()
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
}

// condition returns the NetworkCreated condition of a UDN or CUDN.
func condition(ctx context.Context, c client.Client, obj client.Object) (*metav1.Condition, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *v1.UserDefinedNetwork:
		conds = o.Status.Conditions
	case *v1.ClusterUserDefinedNetwork:
		conds = o.Status.Conditions
	}
	cond := meta.FindStatusCondition(conds, v1.ConditionNetworkCreated)
	if cond == nil {
		return nil, fmt.Errorf("%s has no %s condition yet", obj.GetName(), v1.ConditionNetworkCreated)
	}
	return cond, nil
}

// waitCondition waits until obj's condition has the status and reason, and its
// message contains every given fragment.
func waitCondition(t testing.TB, c client.Client, obj client.Object, status metav1.ConditionStatus, reason string, fragments ...string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	eventually(t, func() error {
		cond, err := condition(context.Background(), c, obj)
		if err != nil {
			return err
		}
		got = cond
		if cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("%s: condition %s/%s %q, want %s/%s", obj.GetName(), cond.Status, cond.Reason, cond.Message, status, reason)
		}
		for _, f := range fragments {
			if !strings.Contains(cond.Message, f) {
				return fmt.Errorf("%s: condition message %q lacks %q", obj.GetName(), cond.Message, f)
			}
		}
		return nil
	})
	return got
}

// getNAD fetches a NAD or returns nil if it does not exist.
func getNAD(t testing.TB, c client.Client, ns, name string) *nadv1.NetworkAttachmentDefinition {
	t.Helper()
	nad := &nadv1.NetworkAttachmentDefinition{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, nad)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return nad
}

// deleteAndWait deletes obj and waits until it is gone (the running
// controller releases its finalizer), registered as cleanup so each test leaves
// the shared API server as it found it.
func cleanupDelete(t testing.TB, c client.Client, obj client.Object) {
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

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ownedByUID(nad *nadv1.NetworkAttachmentDefinition, uid types.UID) bool {
	ref := metav1.GetControllerOf(nad)
	return nad != nil && ref != nil && ref.UID == uid
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func repoFile(parts ...string) string {
	return filepath.Join(append([]string{kubetest.RepoRoot()}, parts...)...)
}
