package zone

import (
	"context"
	"fmt"
	"slices"
	"time"

	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/zone/chassis"
	"github.com/ovn-udn/ovn-udn/internal/zone/vms"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Connect opens the zone's NB and SB clients (with the indexes and monitors
// the controller needs) and a write-only NB connection, retrying with backoff
// until ctx ends. They reconnect by themselves later, calling onReconnect each
// time.
func Connect(ctx context.Context, opts Options, onReconnect func()) (nb, nbWriter, sb libovsdb.Client, err error) {
	counted := func(db string) func() {
		return func() {
			metrics.Reconnects.WithLabelValues(opts.Zone, db).Inc()
			onReconnect()
		}
	}
	log := ctrl.LoggerFrom(ctx).WithValues("zone", opts.Zone)
	nbOpts := ovsdb.ClientOptions{Endpoint: opts.NB, Logger: opts.OVSDBLogger, Log: log.WithValues("database", "nb"), Reconnect: true, OnReconnect: counted("nb"),
		Indexes: ovsdbsync.Indexes(NBTableNames...), Tables: NBTables, OwnMonitor: true, Views: NBTableNames,
		Unmonitored: ovsdbsync.OthersColumns()}
	writerOpts := ovsdb.ClientOptions{Endpoint: opts.NB, Logger: opts.OVSDBLogger, Reconnect: true, NoMonitor: true, OwnTransact: true}
	sbOpts := ovsdb.ClientOptions{Endpoint: opts.SB, Logger: opts.OVSDBLogger, Log: log.WithValues("database", "sb"), Reconnect: true, OnReconnect: counted("sb"), Tables: append(slices.Clone(chassis.SBTables), vms.SBTables...),
		Where: vms.SBWhere, OwnMonitor: true}
	clients, err := connectAll(ctx, opts.Zone, 200*time.Millisecond,
		func(ctx context.Context) (libovsdb.Client, error) { return ovsdb.ConnectNB(ctx, nbOpts) },
		func(ctx context.Context) (libovsdb.Client, error) { return ovsdb.ConnectNB(ctx, writerOpts) },
		func(ctx context.Context) (libovsdb.Client, error) { return ovsdb.ConnectSB(ctx, sbOpts) })
	if err != nil {
		return nil, nil, nil, err
	}
	return clients[0], clients[1], clients[2], nil
}

// connectAll makes every connection, retrying the ones that fail (backing
// off from first up to 10 s) until all are up or ctx ends; then it closes
// those it made.
func connectAll(ctx context.Context, zone string, first time.Duration, dials ...func(context.Context) (libovsdb.Client, error)) ([]libovsdb.Client, error) {
	clients := make([]libovsdb.Client, len(dials))
	backoff := first
	for {
		var err error // this round's first failure only: a stale one would stop the retries
		for i, dial := range dials {
			if clients[i] != nil {
				continue
			}
			if clients[i], err = dial(ctx); err != nil {
				clients[i] = nil
				break
			}
		}
		if err == nil {
			return clients, nil
		}
		ctrl.LoggerFrom(ctx).Info("zone databases unreachable, retrying", "zone", zone, "error", err.Error(), "in", backoff)
		select {
		case <-ctx.Done():
			for _, c := range clients {
				if c != nil {
					c.Close()
				}
			}
			return nil, fmt.Errorf("connecting to zone %s databases: %w (last error: %v)", zone, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// connected is a readiness check that a database client is connected.
func connected(name string, c libovsdb.Client) kubeobj.HealthCheck {
	return kubeobj.HealthCheck{Name: name, Check: func() error {
		if !c.Connected() {
			return fmt.Errorf("%s database not connected", name)
		}
		return nil
	}}
}
