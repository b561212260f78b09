// Package demo is what `make demo` shows and the e2e suite checks on a
// sandbox (internal/tools/sandbox runs the cluster itself): the
// connectivity matrix measured with real packets (matrix.go, reach.go,
// probe.go), the demo applications and their checks (apps.go,
// services.go, northsouth.go, connect.go, policies.go, multiprimary.go,
// whereused.go, uplinkdemo.go, explaindemo.go, realnodesdemo.go), and
// their printed and HTML tables. It reads the sandbox only through
// sandbox's exported API.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/manifest"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// DemoOptions configures Demo.
type DemoOptions struct {
	sandbox.Options
	// Manifests are applied once the sandbox is up (examples/).
	Manifests []string
	// Checks is the matrix to measure (DemoChecks when nil).
	Checks []Check
	// Keep leaves the sandbox running afterwards.
	Keep bool
	// HTML, when set, is a file to write the measured connectivity matrix
	// to as a colored HTML table (WriteMatrixHTML).
	HTML string
}

// Demo brings up a sandbox, applies the manifests, waits for their pods,
// measures the connectivity matrix with real ping and TCP, prints it, and
// tears the sandbox down unless asked to keep it. It fails when any check is
// not as expected.
func Demo(ctx context.Context, opts DemoOptions, out io.Writer) (err error) {
	if err := opts.Defaults(); err != nil {
		return err
	}
	if opts.Checks == nil {
		opts.Checks = DemoChecks
	}
	if opts.InactiveGracePeriod == 0 {
		opts.InactiveGracePeriod = DemoGracePeriod // its section shows a network leaving a node
	}
	start := time.Now()
	if err := sandbox.Up(opts.Options, out); err != nil {
		return err
	}
	defer func() {
		if opts.Keep {
			fmt.Fprintf(out, "\nthe sandbox keeps running: export KUBECONFIG=%s; `ovn-udn sandbox down --dir %s` stops it\n",
				sandbox.NewLayoutMust(opts.Dir).Kubeconfig(), opts.Dir)
			return
		}
		fmt.Fprintln(out)
		if derr := sandbox.Down(opts.Dir, out); derr != nil {
			err = errors.Join(err, derr)
		}
	}()
	upTook := time.Since(start)
	if err := sandbox.Apply(ctx, opts.Dir, out, opts.Manifests...); err != nil {
		return err
	}
	c, err := sandbox.Client(opts.Dir)
	if err != nil {
		return err
	}
	docs, err := manifest.Read(opts.Manifests...)
	if err != nil {
		return err
	}
	var pods, appNamespaces []string
	for _, d := range docs {
		switch d.Object.GetKind() {
		case "Pod":
			pods = append(pods, d.Object.GetNamespace()+"/"+d.Object.GetName())
		case "Deployment":
			appNamespaces = append(appNamespaces, d.Object.GetNamespace())
		}
	}
	slices.Sort(appNamespaces)
	appNamespaces = slices.Compact(appNamespaces)
	t := time.Now()
	if err := WaitPodsReady(ctx, opts.Dir, c, pods, 3*time.Minute); err != nil {
		return err
	}
	readyTook := time.Since(t)
	stop, err := Servers(ctx, opts.Dir, opts.Binary, c, pods)
	if err != nil {
		return err
	}
	defer stop()
	t = time.Now()
	results, err := Matrix(ctx, opts.Dir, opts.Binary, c, opts.Checks)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nConnectivity of %d pods on %d nodes (ping and TCP from inside each source pod):\n\n", len(pods), opts.Nodes)
	merr := PrintMatrix(out, results)
	if opts.HTML != "" {
		merr = errors.Join(merr, writeMatrixFile(opts.HTML, results))
		fmt.Fprintf(out, "\nthe matrix as a colored HTML table: %s\n", opts.HTML)
	}
	if len(appNamespaces) > 0 {
		if err := WaitDeployments(ctx, c, appNamespaces, 2*time.Minute); err != nil {
			return errors.Join(merr, err)
		}
		// The app checks ask from a default-network pod: the default
		// network's apps. Services are checked from every network.
		var defaultApps []string
		for _, ns := range appNamespaces {
			if n, err := NamespaceNetwork(ctx, c, ns); err == nil && n == "default" {
				defaultApps = append(defaultApps, ns)
			}
		}
		apps, err := AppChecks(ctx, opts.Dir, c, DemoAppClient, defaultApps)
		if err != nil {
			return errors.Join(merr, err)
		}
		fmt.Fprintf(out, "\nKubernetes apps (Deployments placed by kube-scheduler, EndpointSlices, CoreDNS; asked from inside %s):\n\n", DemoAppClient)
		merr = errors.Join(merr, PrintAppChecks(out, apps))
		var clients []string
		for _, p := range DemoServiceClients {
			if slices.Contains(pods, p) {
				clients = append(clients, p)
			}
		}
		svcChecks, err := ServiceChecks(ctx, opts.Dir, c, appNamespaces, clients, DemoServiceRequests)
		if err != nil {
			return errors.Join(merr, err)
		}
		fmt.Fprintf(out, "\nServices per network (ClusterIPs through each zone's OVN load balancers, %d requests each):\n\n", DemoServiceRequests)
		merr = errors.Join(merr, PrintAppChecks(out, svcChecks))
		polChecks, err := PolicyChecks(ctx, opts.Dir, c, DemoPolicyChecks)
		if err != nil {
			return errors.Join(merr, err)
		}
		if len(polChecks) > 0 {
			fmt.Fprintf(out, "\nNetworkPolicy on a user-defined network (port groups, address sets and ACLs per policy in each zone):\n\n")
			merr = errors.Join(merr, PrintAppChecks(out, polChecks))
		}
	}
	if slices.Contains(pods, "l3-blue/a") && slices.Contains(pods, "l2-blue/a") {
		merr = errors.Join(merr, ConnectDemo(ctx, opts.Dir, opts.Binary, c, out))
	}
	if slices.Contains(pods, MultiPrimaryNamespace+"/a") {
		merr = errors.Join(merr, MultiPrimaryDemo(ctx, opts.Dir, opts.Binary, c, out))
	}
	if slices.Contains(pods, WhereUsedPeer) {
		merr = errors.Join(merr, WhereUsedDemo(ctx, opts.Dir, opts.Binary, c, opts.InactiveGracePeriod, out))
	}
	merr = errors.Join(merr, PrintExplainDemo(ctx, opts.Dir, c, pods, out))
	nsChecks, err := NorthSouthChecks(ctx, opts.Dir, opts.Binary, c, opts.Nodes)
	if err != nil {
		return errors.Join(merr, err)
	}
	if len(nsChecks) > 0 {
		fmt.Fprintf(out, "\nNorth-south (each network's gateway router on br-ex; the outside world at %s, echo servers on %s:%d):\n\n", sandbox.ExternalRouterIP, sandbox.ExternalServerIP, sandbox.ExternalPort)
		merr = errors.Join(merr, PrintAppChecks(out, nsChecks))
	}
	if opts.Uplinks > 1 {
		upChecks, err := UplinkChecks(ctx, opts.Dir, opts.Binary, opts.Uplinks, opts.Nodes)
		if err != nil {
			return errors.Join(merr, err)
		}
		fmt.Fprintf(out, "\nSeveral uplinks (%d outside routers as every node's next hops, %d of them behind a bridge of its own: ECMP default routes on every gateway router, BFD with FRR's bfdd; docs/gateway.md):\n\n", opts.Uplinks, opts.UplinkBridges)
		merr = errors.Join(merr, PrintAppChecks(out, upChecks))
	}
	if slices.Contains(appNamespaces, "web") && slices.Contains(pods, "l3-blue/a") && slices.Contains(pods, "l2-blue/a") {
		merr = errors.Join(merr, RealNodesDemo(ctx, opts.Dir, c, out))
	}
	merr = errors.Join(merr, ShapesDemo(ctx, c, out))
	merr = errors.Join(merr, EgressIPDemo(ctx, opts.Dir, opts.Binary, c, opts.Nodes, out))
	merr = errors.Join(merr, EgressFirewallDemo(ctx, opts.Dir, opts.Binary, c, out))
	merr = errors.Join(merr, EgressQoSDemo(ctx, opts.Dir, opts.Binary, c, out))
	merr = errors.Join(merr, EgressServiceDemo(ctx, opts.Dir, opts.Binary, c, opts.Nodes, out))
	merr = errors.Join(merr, VMMigrationDemo(ctx, opts.Dir, opts.Binary, c, opts.Nodes, out))
	fmt.Fprintf(out, "\nsandbox up %s, %d pods ready %s after apply, matrix measured in %s (total %s)\n",
		upTook.Round(100*time.Millisecond), len(pods), readyTook.Round(100*time.Millisecond),
		time.Since(t).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	return merr
}

// writeMatrixFile writes the matrix as HTML to path.
func writeMatrixFile(path string, results []Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteMatrixHTML(f, "ovn-udn sandbox connectivity", results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
