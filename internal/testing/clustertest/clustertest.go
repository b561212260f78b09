// Package clustertest assembles a whole ovn-udn control plane for integration
// tests: a real API server (from the caller's kubetest.Env), a cluster-manager,
// and per node a real OVN zone (NB, SB, northd) with its zone controller, each
// running under its least-privilege RBAC role. Nodes are Node objects carrying
// the annotations a node agent would publish.
package clustertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// Cluster is a running control plane.
type Cluster struct {
	t       testing.TB
	Env     *kubetest.Env
	Config  config.Cluster
	Admin   client.Client
	Nodes   []string
	Zones   map[string]*ovntest.Zone
	zoneCfg *rest.Config
	// zoneOpts edits the zone controllers' options (StartWith).
	zoneOpts func(*zone.Options)

	mu          sync.Mutex
	controllers map[string]*zoneController
	stopCM      func()
}

type zoneController struct {
	r    *zone.Reconciler
	stop func()
}

// Start brings up a cluster-manager and one zone with its controller per node
// name. Everything is stopped, and the nodes deleted, when the test ends.
// The zone controllers render every network on every node (most tests
// look for a network's rows in zones without its pods); StartWith sets
// their options.
func Start(t testing.TB, env *kubetest.Env, cfg config.Cluster, nodes ...string) *Cluster {
	t.Helper()
	return StartWith(t, env, cfg, func(o *zone.Options) { o.RenderEverywhere = true }, nodes...)
}

// StartWith is Start with the zone controllers' options edited by zoneOpts
// (after Zone, NB, SB and Cluster are set).
func StartWith(t testing.TB, env *kubetest.Env, cfg config.Cluster, zoneOpts func(*zone.Options), nodes ...string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Env: env, Config: cfg, Admin: cmtest.Admin(t, env), Nodes: nodes,
		Zones: map[string]*ovntest.Zone{}, controllers: map[string]*zoneController{}, zoneOpts: zoneOpts}
	c.zoneCfg = cmtest.RoleIdentity(t, env, "zone-controller.yaml", "ovn-udn-zone-controller")
	t.Cleanup(c.deleteNodes) // runs last: after every controller stopped
	c.stopCM = cmtest.StartWith(t, env, c.clusterManagerOptions())
	for i, n := range nodes {
		c.Zones[n] = ovntest.StartZone(t, n)
		c.createNode(n, i)
	}
	for _, n := range nodes {
		c.StartZoneController(n)
	}
	return c
}

// NodeInfo is what the harness publishes for the i-th node (nodeinfo.Example).
func NodeInfo(name string, i int) nodeinfo.Info { return nodeinfo.Example(name, i) }

func (c *Cluster) createNode(name string, i int) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: NodeInfo(name, i).Annotations()}}
	if err := c.Admin.Create(context.Background(), n); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) deleteNodes() {
	for _, n := range c.Nodes {
		_ = c.Admin.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
}

// StartZoneController starts (or restarts) node's zone controller.
func (c *Cluster) StartZoneController(node string) *zone.Reconciler {
	c.t.Helper()
	c.StopZoneController(node)
	ctx, cancel := context.WithCancel(context.Background())
	z := c.Zones[node]
	opts := zone.Options{Zone: node, NB: z.NB, SB: z.SB, Cluster: c.Config}
	if c.zoneOpts != nil {
		c.zoneOpts(&opts)
	}
	r, mgr, err := zone.Build(ctx, c.zoneCfg, opts)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				c.t.Errorf("zone controller %s: %v", node, err)
			}
			r.Close()
		})
	}
	c.t.Cleanup(stop)
	c.mu.Lock()
	c.controllers[node] = &zoneController{r: r, stop: stop}
	c.mu.Unlock()
	return r
}

// RestartClusterManager stops the cluster-manager and starts a new one, as a
// crash and restart (or a leader change) would.
func (c *Cluster) RestartClusterManager() {
	c.t.Helper()
	c.StopClusterManager()
	c.StartClusterManager()
}

// StopClusterManager stops the cluster-manager (StartClusterManager starts
// a new one), for a test to change things while it is down.
func (c *Cluster) StopClusterManager() {
	c.t.Helper()
	c.stopCM()
	c.stopCM = func() {}
}

// StartClusterManager starts a new cluster-manager after StopClusterManager.
func (c *Cluster) StartClusterManager() {
	c.t.Helper()
	c.stopCM = cmtest.StartWith(c.t, c.Env, c.clusterManagerOptions())
}

// clusterManagerOptions match the zone controllers': slices everywhere
// when they render everywhere, else only where used with their grace
// period.
func (c *Cluster) clusterManagerOptions() clustermanager.Options {
	z := zone.Options{}
	if c.zoneOpts != nil {
		c.zoneOpts(&z)
	}
	return clustermanager.Options{Cluster: c.Config, RenderEverywhere: z.RenderEverywhere, InactiveGracePeriod: z.InactiveGracePeriod,
		DisableNetworkConnect: z.DisableNetworkConnect}
}

// StopZoneController stops node's zone controller, as a crash would.
func (c *Cluster) StopZoneController(node string) {
	c.mu.Lock()
	zc := c.controllers[node]
	delete(c.controllers, node)
	c.mu.Unlock()
	if zc != nil {
		zc.stop()
	}
}

// Controller returns node's running zone reconciler.
func (c *Cluster) Controller(node string) *zone.Reconciler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.controllers[node].r
}

// WaitNB polls until every given NB object exists in node's zone, as
// "table:name" (e.g. "Logical_Switch_Port:tstor-ns.net_node-b").
func (c *Cluster) WaitNB(node string, objects ...string) {
	c.t.Helper()
	z := c.Zones[node]
	cmtest.Eventually(c.t, time.Minute, func() error {
		for _, o := range objects {
			table, name, _ := strings.Cut(o, ":")
			out, err := z.NBCtl("--bare", "--columns=_uuid", "find", table, "name="+name)
			if err != nil {
				return err
			}
			if strings.TrimSpace(out) == "" {
				return fmt.Errorf("zone %s: %s %s does not exist yet", node, table, name)
			}
		}
		return nil
	})
	z.MustSync()
}

// Node returns a Node object.
func (c *Cluster) Node(name string) *corev1.Node {
	c.t.Helper()
	n := &corev1.Node{}
	if err := c.Admin.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// NodeInfo returns a node's parsed annotations (once cluster-manager has
// given it an ID and subnets).
func (c *Cluster) NodeInfo(name string) nodeinfo.Info {
	c.t.Helper()
	var info nodeinfo.Info
	cmtest.Eventually(c.t, 0, func() error {
		var err error
		info, err = c.TryNodeInfo(name)
		return err
	})
	return info
}

// TryNodeInfo reads a node's parsed annotations once, for polls.
func (c *Cluster) TryNodeInfo(name string) (nodeinfo.Info, error) {
	n := &corev1.Node{}
	if err := c.Admin.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		return nodeinfo.Info{}, err
	}
	return nodeinfo.Parse(name, n.Annotations)
}
