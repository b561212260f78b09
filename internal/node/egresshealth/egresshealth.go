// Package egresshealth is the node agent's answer to cluster-manager's
// egress-node reachability probes (internal/clustermanager/egressip
// Reachability): a TCP port on the node's addresses that echoes every byte
// it reads. An egress IP leaves a node whose probes go unanswered, so the
// port listens where the node's network is: in the namespace of the
// node's OVS bridges when the agent runs outside it (--netns).
//
// The echo is the whole protocol: nothing is parsed, and a connection
// lasts as long as the prober keeps it.
package egresshealth

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ovn-udn/ovn-udn/internal/netns"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// Enabled reports whether the agent answers probes (a port is set).
func Enabled(opts node.Options) bool { return opts.EgressIPHealthPort > 0 }

// Setup listens on the probe port and answers at once, before the
// manager's caches have synced (a probe that connects and gets no echo
// counts as a dead node), until the manager stops. Every replica answers
// (no leader election): each node's agent is its node's only one.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	addr := net.JoinHostPort("", strconv.Itoa(opts.EgressIPHealthPort))
	var l net.Listener
	var err error
	if opts.Host.Netns != "" {
		l, err = netns.Listen(opts.Host.Netns, "tcp", addr)
	} else {
		l, err = net.Listen("tcp", addr)
	}
	if err != nil {
		return fmt.Errorf("egress IP health port: %w", err)
	}
	go Serve(l)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		return l.Close()
	}))
}

// Serve echoes every connection l accepts until l closes.
func Serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.Copy(c, c)
		}()
	}
}
