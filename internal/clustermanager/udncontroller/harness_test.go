package udncontroller_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

func admin(t testing.TB) client.Client { return cmtest.Admin(t, env) }

func startManager(t testing.TB, cfg config.Cluster) (stop func()) { return cmtest.Start(t, env, cfg) }

func namespace(t testing.TB, c client.Client, prefix string, labels map[string]string) string {
	return cmtest.Namespace(t, c, prefix, labels)
}

func eventually(t testing.TB, f func() error) { t.Helper(); cmtest.Eventually(t, 0, f) }

func cleanupDelete(t testing.TB, c client.Client, obj client.Object) {
	cmtest.DeleteAtCleanup(t, c, obj)
}

func applyManifest(ctx context.Context, c client.Client, path string) error {
	return cmtest.ApplyClusterRoles(ctx, c, path)
}

var primaryLabel = map[string]string{v1.PrimaryNetworkLabel: ""}

func pod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// condition returns the NetworkCreated condition of a UDN or CUDN.
func condition(ctx context.Context, c client.Client, obj client.Object) (*metav1.Condition, error) {
	return cmtest.NetworkCondition(ctx, c, obj)
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
