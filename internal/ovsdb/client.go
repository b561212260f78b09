package ovsdb

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/sbdb"
)

// ClientOptions configures Connect.
type ClientOptions struct {
	// Endpoint is the OVSDB remote, e.g. "tcp:127.0.0.1:6641".
	Endpoint string
	// Logger receives libovsdb's logs; the zero value discards them (libovsdb
	// is very chatty at its default verbosity).
	Logger logr.Logger
	// Tables limits the monitor to these tables (all tables when empty). A
	// controller monitors only what it reads, which keeps its cache small.
	Tables []model.Model
	// Reconnect keeps the client reconnecting (with backoff) after the server
	// goes away; the cache is rebuilt on reconnection.
	Reconnect bool
}

// ConnectNB connects to an OVN Northbound database and monitors it.
func ConnectNB(ctx context.Context, opts ClientOptions) (client.Client, error) {
	m, err := nbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	return connect(ctx, m, opts)
}

// ConnectSB connects to an OVN Southbound database and monitors it.
func ConnectSB(ctx context.Context, opts ClientOptions) (client.Client, error) {
	m, err := sbdb.FullDatabaseModel()
	if err != nil {
		return nil, err
	}
	return connect(ctx, m, opts)
}

func connect(ctx context.Context, m model.ClientDBModel, opts ClientOptions) (client.Client, error) {
	logger := opts.Logger
	if logger.GetSink() == nil {
		logger = logr.Discard()
	}
	copts := []client.Option{client.WithEndpoint(opts.Endpoint), client.WithLogger(&logger)}
	if opts.Reconnect {
		copts = append(copts, client.WithReconnect(2*time.Second, nil))
	}
	c, err := client.NewOVSDBClient(m, copts...)
	if err != nil {
		return nil, fmt.Errorf("creating %s client for %s: %w", m.Name(), opts.Endpoint, err)
	}
	if err := c.Connect(ctx); err != nil {
		return nil, fmt.Errorf("connecting to %s at %s: %w", m.Name(), opts.Endpoint, err)
	}
	if len(opts.Tables) == 0 {
		_, err = c.MonitorAll(ctx)
	} else {
		var tables []client.MonitorOption
		for _, t := range opts.Tables {
			tables = append(tables, client.WithTable(t))
		}
		_, err = c.Monitor(ctx, c.NewMonitor(tables...))
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("monitoring %s at %s: %w", m.Name(), opts.Endpoint, err)
	}
	return c, nil
}
