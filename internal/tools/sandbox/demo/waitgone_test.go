package demo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestWaitGone(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	t.Run("gone", func(t *testing.T) {
		c := fake.NewClientBuilder().Build()
		if err := waitGone(context.Background(), c, pod.DeepCopy(), time.Second, 10*time.Millisecond); err != nil {
			t.Fatalf("absent object: %v", err)
		}
	})
	t.Run("goes while waited for", func(t *testing.T) {
		// The third read finds it gone: the first two polls saw it.
		gets := 0
		c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if gets++; gets == 3 {
					if err := c.Delete(ctx, pod.DeepCopy()); err != nil {
						return err
					}
				}
				return c.Get(ctx, key, obj, opts...)
			}}).Build()
		if err := waitGone(context.Background(), c, pod.DeepCopy(), time.Minute, 10*time.Millisecond); err != nil {
			t.Fatalf("deleted object: %v", err)
		}
		if gets != 3 {
			t.Fatalf("read %d times, want 3", gets)
		}
	})
	t.Run("stays", func(t *testing.T) {
		c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).Build()
		err := waitGone(context.Background(), c, pod.DeepCopy(), 100*time.Millisecond, 10*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "ns/p still there after 100ms") {
			t.Fatalf("want a timeout naming the pod, got %v", err)
		}
	})
	t.Run("reads refused", func(t *testing.T) {
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
		c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return forbidden
			}}).Build()
		err := waitGone(context.Background(), c, pod.DeepCopy(), 100*time.Millisecond, 10*time.Millisecond)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not seen gone") {
			t.Fatalf("want the API's refusal, got %v", err)
		}
	})
	t.Run("an early refusal is not reported once reads succeed", func(t *testing.T) {
		gets := 0
		c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if gets++; gets == 1 {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", errors.New("no"))
				}
				return c.Get(ctx, key, obj, opts...)
			}}).Build()
		err := waitGone(context.Background(), c, pod.DeepCopy(), 100*time.Millisecond, 10*time.Millisecond)
		if err == nil || apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "still there") {
			t.Fatalf("want a timeout with the pod still there, got %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		c := fake.NewClientBuilder().WithObjects(pod.DeepCopy()).Build()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		err := waitGone(ctx, c, pod.DeepCopy(), time.Minute, 10*time.Millisecond)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("want the context's error, got %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("a cancelled wait took %s", d)
		}
	})
}
