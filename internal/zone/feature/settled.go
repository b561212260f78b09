package feature

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Settled logs what a sync of an owner contributing to the networks' rows
// (a connect, a primary link) wrote, and asks for it again in a moment while
// something it needs is on its way: a network's routers (the network's
// reconcile also replans it when it creates rows) or a node's subnet.
func Settled(logger logr.Logger, what string, p *ovsdbsync.Plan, problems []string) ctrl.Result {
	if !p.Empty() {
		logger.Info("synced "+what, "inserted", p.Inserted, "updated", p.Updated, "deleted", p.Deleted, "added", p.Added, "removed", p.Removed)
	}
	if len(p.Missing) > 0 || len(problems) > 0 {
		logger.V(1).Info(what+" waits", "missing", p.Missing, "problems", problems)
		return ctrl.Result{RequeueAfter: 2 * time.Second}
	}
	return ctrl.Result{}
}
