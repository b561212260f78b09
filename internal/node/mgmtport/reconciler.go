package mgmtport

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// Setup registers the management port part.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	return (&reconciler{client: mgr.GetClient(), opts: opts}).SetupWithManager(mgr)
}

// reconciler keeps the node's side of the default network's management
// port (Ensure) as the node's slices say, from the agent's own Node.
type reconciler struct {
	client client.Client
	opts   node.Options
}

// resync re-applies the port's routes this often without a Node
// change (a route removed by hand comes back).
const resync = time.Minute

func (r *reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("management-port").For(&corev1.Node{}).Complete(r)
}

func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != r.opts.Node {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	subnets, err := nodeinfo.ParseSubnets(node.Annotations[nodeinfo.NodeSubnetsAnnotation])
	if err != nil {
		return reconcile.Result{}, nil // cluster-manager's annotation is malformed: it reports and mends it
	}
	port, ok, err := Desired(nodeinfo.Info{Name: node.Name, Subnets: subnets}, r.opts.Cluster)
	if err != nil || !ok {
		return reconcile.Result{}, err
	}
	if err := Ensure(r.opts.Host, port); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}
