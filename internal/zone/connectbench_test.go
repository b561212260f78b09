package zone_test

import (
	"context"
	"fmt"
	"math/bits"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/rows/connectrouter"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// BenchmarkConnect measures one ClusterNetworkConnect of N Layer3 networks
// across M nodes in one zone (a real ovsdb-server, northd not running):
// the zone first holds the N networks' own rows (written as the controller
// does, not measured), then the connect is rendered (connectrouter.Render),
// planned and written in its one transaction, as the zone controller does,
// and re-planned with nothing changed (a resync). It reports the connect's
// rows (router ports and routes grow as N×M, reroute policies as N×(N-1)
// in a zone), the members it adds to the networks' routers, and the time
// of each step. Run with
//
//	go test -run XXX -bench BenchmarkConnect -benchtime 1x ./internal/zone/
//
// OVN_UDN_BENCH_CONNECT=NxM picks other sizes (N×M is bounded by OVN's
// 32,767 port keys per connect router).
func BenchmarkConnect(b *testing.B) {
	sizes := []struct{ networks, nodes int }{{100, 50}}
	if v := os.Getenv("OVN_UDN_BENCH_CONNECT"); v != "" {
		var n, m int
		if _, err := fmt.Sscanf(v, "%dx%d", &n, &m); err != nil {
			b.Fatalf("OVN_UDN_BENCH_CONNECT=%q: want NxM", v)
		}
		sizes = sizes[:0]
		sizes = append(sizes, struct{ networks, nodes int }{n, m})
	}
	for _, size := range sizes {
		b.Run(fmt.Sprintf("%dx%d", size.networks, size.nodes), func(b *testing.B) {
			for b.Loop() {
				benchConnect(b, size.networks, size.nodes)
			}
		})
	}
}

// connectBenchInputs returns N Layer3 networks with distinct subnets (a /15
// each from 20.0.0.0, a /24 per node) and M nodes (IDs 2..M+1) holding a
// subnet of each, and the layout of a connect subnet that fits them.
func connectBenchInputs(b *testing.B, networks, nodes int) ([]topology.Network, []nodeinfo.Info, connect.Layout) {
	cfg := config.Default()
	base := netip.MustParseAddr("20.0.0.0").As4()
	at := func(off uint32) netip.Addr {
		v := uint32(base[0])<<24 + off
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	var nets []topology.Network
	for i := range networks {
		c := &netconf.NetConf{Name: fmt.Sprintf("ns%d.net", i), Type: netconf.CNIType, Topology: netconf.TopologyLayer3,
			Role: netconf.RolePrimary, Subnets: netip.PrefixFrom(at(uint32(i)<<17), 15).String() + "/24"}
		n, err := topology.FromNetConf(c, i+1, nil, cfg)
		if err != nil {
			b.Fatal(err)
		}
		nets = append(nets, n)
	}
	var infos []nodeinfo.Info
	for j := range nodes {
		name := fmt.Sprintf("node%d", j)
		subnets := nodeinfo.Subnets{"default": {netip.MustParsePrefix(fmt.Sprintf("10.244.%d.%d/24", j/256, j%256))}}
		for i, n := range nets {
			subnets[n.Name] = []netip.Prefix{netip.PrefixFrom(at(uint32(i)<<17+uint32(j)<<8), 24)}
		}
		ip := netip.MustParsePrefix(fmt.Sprintf("172.18.%d.%d/16", j/200, 10+j%200))
		infos = append(infos, nodeinfo.Info{Name: name, ID: j + 2, ChassisID: "chassis-" + name, Zone: name, Subnets: subnets,
			PrimaryIPs: []netip.Prefix{ip}, EncapIP: ip.Addr(),
			Gateway: &nodeinfo.ParsedGateway{Uplink: nodeinfo.Uplink{MAC: "02:42:ac:12:00:02", IPs: []netip.Prefix{ip},
				NextHops: []netip.Addr{netip.MustParseAddr("172.18.0.1")}, PhysicalNetwork: "physnet"}}})
	}
	// A block holds a /31 per node ID up to M+1; the connect subnet holds a
	// block per network.
	linkBits := bits.Len(uint(nodes + 1))     // links per block = 2^linkBits > M+1
	blockBits := bits.Len(uint(networks - 1)) // blocks = 2^blockBits >= N
	networkPrefix := 32 - (linkBits + 1)      // a link is 2 addresses
	cidr := netip.PrefixFrom(netip.MustParseAddr("172.16.0.0"), networkPrefix-blockBits)
	layout, err := connect.NewLayout([]v1.ConnectSubnet{{CIDR: v1.ConnectCIDR(cidr.String()), NetworkPrefix: int32(networkPrefix)}})
	if err != nil {
		b.Fatal(err)
	}
	if layout.Blocks < networks {
		b.Fatalf("%d networks × %d nodes do not fit one connect router (%d blocks of %d links: OVN's port keys)", networks, nodes, layout.Blocks, layout.LinksPerBlock)
	}
	return nets, infos, layout
}

func benchConnect(b *testing.B, networks, nodes int) {
	cfg := config.Default()
	nets, infos, layout := connectBenchInputs(b, networks, nodes)
	z := ovntest.StartZone(b, "bench-connect")
	c := connectBench(b, z, false)
	s, err := zone.NewSyncer(c)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	// The networks' own rows, as the controller writes them (4 workers).
	work := make(chan topology.Network)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				res, err := topology.Render(topology.Input{Network: n, Nodes: infos, Zone: "node0", Cluster: cfg})
				if err == nil {
					_, err = s.Sync(ctx, feature.NetworkKey(n.Name).String(), res.Rows)
				}
				if err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for _, n := range nets {
		work <- n
	}
	close(work)
	wg.Wait()

	// The connect: a block per network, in order.
	members := make([]connectrouter.Member, len(nets))
	for i, n := range nets {
		members[i] = connectrouter.Member{Network: n, Slice: layout.Block(i)}
	}
	selfCPU0 := cpuSeconds("self")
	serverCPU0 := cpuSeconds(strconv.Itoa(z.Processes()["nb"].PID()))
	start := time.Now()
	res, err := connectrouter.Render(connectrouter.Input{Name: "bench", TunnelKey: 16715777, Layout: layout, Members: members, Nodes: infos, Zone: "node0"})
	if err != nil || len(res.Problems) > 0 {
		b.Fatal(err, res.Problems)
	}
	rendered := time.Since(start)
	start = time.Now()
	p, err := s.Plan(feature.ConnectKey("bench").String(), res.Rows, res.Contributions...)
	if err != nil {
		b.Fatal(err)
	}
	planned := time.Since(start)
	start = time.Now()
	if err := s.Apply(ctx, p); err != nil {
		b.Fatal(err)
	}
	applied := time.Since(start)
	b.ReportMetric(cpuSeconds("self")-selfCPU0, "s-cpu-controller")
	b.ReportMetric(cpuSeconds(strconv.Itoa(z.Processes()["nb"].PID()))-serverCPU0, "s-cpu-ovsdb-server")
	if len(p.Missing) > 0 {
		b.Fatalf("targets missing: %v", p.Missing[:min(3, len(p.Missing))])
	}
	start = time.Now()
	again, err := s.Plan(feature.ConnectKey("bench").String(), res.Rows, res.Contributions...)
	if err != nil {
		b.Fatal(err)
	}
	if !again.Empty() {
		b.Fatalf("a resync would write %d operations", len(again.Ops))
	}
	b.ReportMetric(float64(p.Inserted), "rows")
	b.ReportMetric(float64(p.Added), "members-added")
	b.ReportMetric(rendered.Seconds(), "s/render")
	b.ReportMetric(planned.Seconds(), "s/plan")
	b.ReportMetric(applied.Seconds(), "s/write")
	b.ReportMetric((rendered + planned + applied).Seconds(), "s/connect")
	b.ReportMetric(time.Since(start).Seconds(), "s/resync")
}
