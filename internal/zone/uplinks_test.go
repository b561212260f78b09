package zone_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// setGateway rewrites node's l3-gateway-config with next hops and policy
// overrides, as its node agent would publish them.
func setGateway(t *testing.T, c *clustertest.Cluster, node string, hops []string, ecmp, bfd *bool) {
	t.Helper()
	n := c.Node(node)
	g := nodeinfo.Example(node, 0).Gateway
	g.NextHops, g.ECMP, g.BFD = nil, ecmp, bfd
	info := nodeinfo.Info{Gateway: g}
	for _, h := range hops {
		info.Gateway.NextHops = append(info.Gateway.NextHops, netip.MustParseAddr(h))
	}
	n.Annotations[nodeinfo.GatewayAnnotation] = info.Annotations()[nodeinfo.GatewayAnnotation]
	if err := c.Admin.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

// defaultRoutes lists a router's IPv4 default routes as "nexthop bfd-uuid
// options", sorted. A route the controller deletes between the router's
// listing and the route's is not one of its routes any more and is left out.
func defaultRoutes(z *ovntest.Zone, router string) ([]string, error) {
	routes, err := z.NBCtl("--bare", "--columns=static_routes", "list", "Logical_Router", router)
	if err != nil {
		// Polled: the router may not be planned yet.
		return nil, err
	}
	var out []string
	for _, u := range strings.Fields(routes) {
		r, err := z.NBCtl("--format=csv", "--data=bare", "--no-headings", "--columns=ip_prefix,nexthop,bfd,options", "list", "Logical_Router_Static_Route", u)
		if err != nil && strings.Contains(err.Error(), "no row") {
			continue
		}
		if err != nil {
			return nil, err
		}
		r = strings.TrimSpace(r)
		if strings.HasPrefix(r, "0.0.0.0/0,") {
			out = append(out, strings.TrimSpace(strings.TrimPrefix(r, "0.0.0.0/0,")))
		}
	}
	slices.Sort(out)
	return out, nil
}

// anyThrough reports whether through(hop) holds for any of hops.
func anyThrough(through func(string) (bool, error), hops ...string) (bool, error) {
	for _, h := range hops {
		if ok, err := through(h); err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// allThrough reports whether through(hop) holds for every one of hops.
func allThrough(through func(string) (bool, error), hops ...string) (bool, error) {
	for _, h := range hops {
		if ok, err := through(h); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// TestDefaultRouteECMPAndBFD: a node with two next hops and BFD on gets ECMP
// default routes with symmetric replies on every gateway router, one BFD
// session per next hop on the default network's router, shared by the UDN's
// routes; a session northd sees down withdraws the next hop from the UDN
// router's logical flows too; ECMP off keeps the first next hop; BFD off
// removes the sessions and the references.
func TestDefaultRouteECMPAndBFD(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a")
	z := c.Zones["node-a"]
	network, _ := layer3UDN(t, c.Admin, "10.131.0.0/16/24")
	udnGR := topology.Network{Name: network}.GatewayRouter("node-a")
	port := topology.DefaultNetwork(c.Config).GatewayExternalPort("node-a")
	on, off := true, false
	setGateway(t, c, "node-a", []string{"172.18.0.1", "172.18.0.254"}, nil, &on)

	var bfd map[string]string // next hop → BFD UUID
	cmtest.Eventually(t, time.Minute, func() error {
		bfd = map[string]string{}
		for _, l := range strings.Split(z.MustNBCtl("--format=csv", "--data=bare", "--no-headings", "--columns=_uuid,dst_ip", "find", "BFD", "logical_port="+port), "\n") {
			if u, ip, ok := strings.Cut(strings.TrimSpace(l), ","); ok {
				bfd[ip] = u
			}
		}
		if len(bfd) != 2 {
			return fmt.Errorf("BFD rows on %s: %v, want one per next hop", port, bfd)
		}
		if n := strings.TrimSpace(z.MustNBCtl("--bare", "--columns=_uuid", "find", "BFD")); len(strings.Fields(n)) != 2 {
			return fmt.Errorf("BFD rows in the zone: %q, want only the default router's two", n)
		}
		want := []string{
			"172.18.0.1," + bfd["172.18.0.1"] + ",ecmp_symmetric_reply=true",
			"172.18.0.254," + bfd["172.18.0.254"] + ",ecmp_symmetric_reply=true",
		}
		for _, gr := range []string{"GR_node-a", udnGR} {
			if got, err := defaultRoutes(z, gr); err != nil {
				return err
			} else if !slices.Equal(got, want) {
				return fmt.Errorf("%s default routes %q, want %q", gr, got, want)
			}
		}
		return nil
	})

	// northd routes through a next hop only while its session is up, on
	// every router that refers to it: set the Southbound status as
	// ovn-controller would (here no chassis runs the sessions, so northd
	// starts them down and the routes are withdrawn).
	// (After northd caught up: under load the router's datapath may not be
	// in the Southbound yet when its Northbound rows are.)
	routing := func() (string, error) {
		if err := z.Sync(20 * time.Second); err != nil {
			return "", err
		}
		return z.SBCtl("lflow-list", udnGR)
	}
	// A route (or an ECMP member) through hop sets the next-hop register.
	routesThrough := func(hop string) (bool, error) {
		flows, err := routing()
		return strings.Contains(flows, "reg0 = "+hop+";"), err
	}
	setSB := func(hop, status string) {
		var u string
		cmtest.Eventually(t, time.Minute, func() error {
			if u = strings.TrimSpace(z.MustSBCtl("--bare", "--columns=_uuid", "find", "BFD", "dst_ip="+hop)); u == "" {
				return fmt.Errorf("northd has no Southbound BFD session for %s yet", hop)
			}
			return nil
		})
		z.MustSBCtl("set", "BFD", u, "status="+status)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if through, err := anyThrough(routesThrough, "172.18.0.1", "172.18.0.254"); err != nil {
			return err
		} else if through {
			return fmt.Errorf("%s routes through next hops whose sessions are down", udnGR)
		}
		return nil
	})
	setSB("172.18.0.1", "up")
	setSB("172.18.0.254", "up")
	cmtest.Eventually(t, time.Minute, func() error {
		if through, err := allThrough(routesThrough, "172.18.0.1", "172.18.0.254"); err != nil {
			return err
		} else if !through {
			return fmt.Errorf("%s does not route through both next hops with both sessions up", udnGR)
		}
		return nil
	})
	setSB("172.18.0.254", "down")
	cmtest.Eventually(t, time.Minute, func() error {
		if through, err := routesThrough("172.18.0.254"); err != nil {
			return err
		} else if through {
			return fmt.Errorf("%s still routes through 172.18.0.254, whose session is down", udnGR)
		}
		if through, err := routesThrough("172.18.0.1"); err != nil {
			return err
		} else if !through {
			return fmt.Errorf("%s lost its other next hop", udnGR)
		}
		return nil
	})
	resyncWritesNothing(t, c.Controller("node-a"))

	// ECMP off (the node's override): the first next hop only.
	setGateway(t, c, "node-a", []string{"172.18.0.1", "172.18.0.254"}, &off, &on)
	cmtest.Eventually(t, time.Minute, func() error {
		want := []string{"172.18.0.1," + bfd["172.18.0.1"] + ","}
		for _, gr := range []string{"GR_node-a", udnGR} {
			if got, err := defaultRoutes(z, gr); err != nil {
				return err
			} else if !slices.Equal(got, want) {
				return fmt.Errorf("%s default routes %q, want %q", gr, got, want)
			}
		}
		return nil
	})

	// BFD off: no session, no reference.
	setGateway(t, c, "node-a", []string{"172.18.0.1", "172.18.0.254"}, nil, &off)
	cmtest.Eventually(t, time.Minute, func() error {
		if n := strings.TrimSpace(z.MustNBCtl("--bare", "--columns=_uuid", "find", "BFD")); n != "" {
			return fmt.Errorf("BFD rows left with BFD off: %q", n)
		}
		want := []string{"172.18.0.1,,ecmp_symmetric_reply=true", "172.18.0.254,,ecmp_symmetric_reply=true"}
		for _, gr := range []string{"GR_node-a", udnGR} {
			if got, err := defaultRoutes(z, gr); err != nil {
				return err
			} else if !slices.Equal(got, want) {
				return fmt.Errorf("%s default routes %q, want %q", gr, got, want)
			}
		}
		return nil
	})
	resyncWritesNothing(t, c.Controller("node-a"))
}
