package kubeobj

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// HealthCheck is an extra readiness check of a component (e.g. its OVN
// connection): nil when ready.
type HealthCheck struct {
	Name  string
	Check func() error
}

// AddHealthChecks registers a manager's /healthz (the process answers) and
// /readyz (its informer caches have synced, and every extra check passes).
func AddHealthChecks(mgr manager.Manager, extra ...HealthCheck) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	synced := func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced yet")
		}
		return nil
	}
	if err := mgr.AddReadyzCheck("caches", synced); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	for _, c := range extra {
		check := c.Check
		if err := mgr.AddReadyzCheck(c.Name, func(*http.Request) error { return check() }); err != nil {
			return fmt.Errorf("adding readiness check %s: %w", c.Name, err)
		}
	}
	return nil
}

// ListenAddr is a manager's listen address for an option where "" means off:
// controller-runtime takes "0" for off.
func ListenAddr(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

// Client rate limits of the long-running components (their --kube-api-qps
// and --kube-api-burst defaults). client-go's own (5 queries/s, burst 10)
// made one tenant's burst of 300 networks take minutes while every other
// tenant waited behind it.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)
