package kubeobj

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRetry is how soon a reconcile whose write met a conflict runs again.
const ConflictRetry = 100 * time.Millisecond

// RetryConflicts wraps a reconciler so that an update conflict (a write based
// on an object another writer changed since it was read: routine with
// several controllers writing one object) is not an error: it is logged at
// debug level and the key is reconciled again shortly, from the newer object.
func RetryConflicts[T comparable](r reconcile.TypedReconciler[T]) reconcile.TypedReconciler[T] {
	return reconcile.TypedFunc[T](func(ctx context.Context, req T) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if err != nil && apierrors.IsConflict(err) {
			log.FromContext(ctx).V(1).Info("write conflict, retrying", "error", err.Error())
			return reconcile.Result{RequeueAfter: ConflictRetry}, nil
		}
		return res, err
	})
}
