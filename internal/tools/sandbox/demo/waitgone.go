package demo

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitGone polls the API every interval until obj (its kind's object of
// that namespace and name; obj itself is overwritten by the reads) is gone,
// for at most timeout, and ends early with ctx. On failure it says what is
// still there, or, when the last read failed, wraps that read's error.
func waitGone(ctx context.Context, c client.Client, obj client.Object, timeout, interval time.Duration) error {
	key := client.ObjectKeyFromObject(obj)
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		err := c.Get(wait, key, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		switch {
		case err == nil:
			last = nil
		case wait.Err() == nil:
			last = err
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("waiting for %T %s to go: %w", obj, key, ctx.Err())
			}
			if last != nil {
				return fmt.Errorf("%T %s not seen gone within %s: %w", obj, key, timeout, last)
			}
			return fmt.Errorf("%T %s still there after %s", obj, key, timeout)
		case <-t.C:
		}
	}
}

// WaitNamespaceGone waits, for at most timeout, until the namespace and
// so everything in it has gone from the API.
func WaitNamespaceGone(ctx context.Context, c client.Client, name string, timeout time.Duration) error {
	return waitGone(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, timeout, 200*time.Millisecond)
}
