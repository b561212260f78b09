package sandbox

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/dnsresolve/dnsserve"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/netns"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Options configures a sandbox.
type Options struct {
	// Dir is the state directory.
	Dir string
	// Nodes is how many nodes to run (1-9).
	Nodes int
	// Binary is the ovn-udn executable the components run from (default:
	// this process's).
	Binary string
	// ReadyTimeout bounds how long up waits (default 5 minutes).
	ReadyTimeout time.Duration
	// Attached ties the sandbox to the process that starts it: when that
	// process dies the supervisor gets SIGTERM and stops everything (tests).
	Attached bool
	// Uplinks is how many outside routers the nodes route through (1 to
	// MaxUplinks, default 1); with 2 or more they run BFD (see uplinks.go).
	Uplinks int
	// UplinkBridges is how many of the routers (the last ones) are each on
	// an underlay segment of their own, reached by the nodes through a
	// further bridge (br-ex<k>) rather than as one more next hop on br-ex
	// (0 to Uplinks-1; see uplinks.go).
	UplinkBridges int
	// BFDInterval is the BFD sessions' transmit and receive interval, on
	// the routers and the gateway routers (0: FRR's 300 ms on the routers,
	// OVN's 1 s on the gateway routers).
	BFDInterval time.Duration
	// InactiveGracePeriod is the zone controllers' and cluster-manager's
	// --inactive-grace-period (0: their default).
	InactiveGracePeriod time.Duration
	// Deploy installs ovn-udn from its image and config/deploy, run by the
	// kubelets, instead of running its components as processes (deploy.go).
	Deploy bool
	// Image is the OCI archive deploy mode installs (DefaultImageArchive
	// when empty).
	Image string
}

// Defaults fills the options left unset and checks them (Up and Demo call
// it; a caller that reads the layout before Up may too).
func (o *Options) Defaults() error {
	if o.Nodes < 1 || o.Nodes > 9 {
		return fmt.Errorf("--nodes must be between 1 and 9, got %d", o.Nodes)
	}
	if o.Uplinks == 0 {
		o.Uplinks = 1
	}
	if o.Uplinks < 1 || o.Uplinks > MaxUplinks {
		return fmt.Errorf("--uplinks must be between 1 and %d, got %d", MaxUplinks, o.Uplinks)
	}
	if o.UplinkBridges < 0 || o.UplinkBridges > o.Uplinks-1 {
		return fmt.Errorf("--uplink-bridges must be between 0 and --uplinks - 1 (%d), got %d", o.Uplinks-1, o.UplinkBridges)
	}
	if o.BFDInterval != 0 && o.BFDInterval < 10*time.Millisecond {
		return fmt.Errorf("--bfd-interval must be at least 10ms, got %s", o.BFDInterval)
	}
	if o.Binary == "" {
		b, err := os.Executable()
		if err != nil {
			return err
		}
		o.Binary = b
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 5 * time.Minute
	}
	if o.Deploy {
		if o.Image == "" {
			o.Image = DefaultImageArchive
		}
		abs, err := filepath.Abs(o.Image)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("--deploy needs ovn-udn's image (make image): %w", err)
		}
		o.Image = abs
	}
	return nil
}

// supervisor owns every process of a running sandbox.
type supervisor struct {
	l     Layout
	opts  Options
	log   *log.Logger
	kube  *kube
	zones map[string]*ovnrun.Zone
	nodes map[string]*ovnrun.Node
	comps []*component
	// restarts of zone and node processes, by process name.
	restarts map[string]int
	backoff  map[string]*healBackoff
	state    State
	// images is the archive real nodes import (Options.RealNodes).
	images string
	// imageRef names ovn-udn's image in deploy mode (Options.Image).
	imageRef string
	// dns is the outside world's DNS server's address (host:port on the
	// loopback), answering from l.ExternalDNSRecords().
	dns string
}

// component is a process the supervisor restarts when it exits: an ovn-udn
// component, or one of Kubernetes' (path set).
type component struct {
	name string
	path string // the program; the ovn-udn binary when empty
	args []string
	log  string
	// metrics is the address its /metrics is served at ("" when none).
	metrics string
	// argsFile holds further arguments, one a line, read at each start
	// ("" or missing: none).
	argsFile string
	p        *proc.Process
	restarts int
	// quickExits counts its exits in a row within crashLoopWindow of its
	// start (restartDelay).
	quickExits int
	started    time.Time
	next       time.Time // no restart before
}

// Supervise runs a sandbox until ctx ends, then stops it and removes its
// namespaces. It is the body of the detached `ovn-udn sandbox supervise`.
func Supervise(ctx context.Context, opts Options) error {
	if err := opts.Defaults(); err != nil {
		return err
	}
	l, err := NewLayout(opts.Dir)
	if err != nil {
		return err
	}
	s := &supervisor{l: l, opts: opts, log: log.New(os.Stdout, "", log.LstdFlags|log.Lmicroseconds),
		zones: map[string]*ovnrun.Zone{}, nodes: map[string]*ovnrun.Node{}, restarts: map[string]int{}, backoff: map[string]*healBackoff{}}
	s.state = State{SupervisorPID: os.Getpid(), Phase: PhaseStarting, StartedAt: time.Now(), Kubeconfig: l.Kubeconfig()}
	if err := os.MkdirAll(l.LogDir(), 0o755); err != nil {
		return err
	}
	if err := writeState(l, &s.state); err != nil {
		return err
	}
	defer s.stop()
	if err := s.start(ctx); err != nil {
		s.log.Printf("start failed: %v", err)
		s.state.Phase, s.state.Error = PhaseFailed, err.Error()
		s.refresh()
		_ = writeState(l, &s.state)
		return err
	}
	s.state.Phase = PhaseReady
	s.state.ReadyAfter = time.Since(s.state.StartedAt).Round(100 * time.Millisecond).String()
	s.refresh()
	if err := writeState(l, &s.state); err != nil {
		return err
	}
	s.log.Printf("sandbox ready after %s", s.state.ReadyAfter)
	s.watch(ctx)
	s.state.Phase = PhaseStopping
	_ = writeState(l, &s.state)
	return nil
}

// start brings everything up, in dependency order.
func (s *supervisor) start(ctx context.Context) error {
	var err error
	s.log.Printf("starting kube-apiserver and etcd")
	if s.kube, err = startKube(s.l, s.opts.Deploy); err != nil {
		return err
	}
	s.startControlPlane()
	ul := s.l.UnderlayNetns()
	if err := ipCmds(
		[]string{"netns", "add", ul},
		[]string{"-n", ul, "link", "set", "lo", "up"},
		[]string{"-n", ul, "link", "add", "br0", "type", "bridge"},
		[]string{"-n", ul, "link", "set", "br0", "up"},
	); err != nil {
		return err
	}
	if err := s.startExternal(ctx); err != nil {
		return err
	}
	if err := s.startRouters(); err != nil {
		return err
	}
	if err := CheckRealNodes(); err != nil {
		return err
	}
	if s.images, err = s.buildImages(); err != nil {
		return fmt.Errorf("building the nodes' images: %w", err)
	}
	if s.opts.Deploy {
		if s.imageRef, err = ImageRef(s.opts.Image); err != nil {
			return err
		}
		s.state.Deployed = true
	}
	if err := s.startControlLink(ctx, s.kube.env.Config.Host); err != nil {
		return err
	}
	for i := 1; i <= s.opts.Nodes; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := s.startNode(ctx, i); err != nil {
			return err
		}
	}
	if s.opts.Deploy {
		if err := s.deploy(ctx, s.imageRef); err != nil {
			return err
		}
	} else {
		// It probes the egress nodes' agents from the underlay, as a
		// control-plane host does.
		cm := []string{"cluster-manager", "--kubeconfig=" + componentKubeconfig(s.l, roleOf("cluster-manager")), "--leader-elect=false",
			"--egressip-health-netns=" + s.l.ControlNetns()}
		if s.opts.InactiveGracePeriod > 0 { // as the zone controllers'
			cm = append(cm, "--inactive-grace-period="+s.opts.InactiveGracePeriod.String())
		}
		s.addComponent(&component{name: "cluster-manager", metrics: s.metricsAddr(), args: cm})
	}
	if err := s.waitReady(ctx); err != nil {
		return err
	}
	return s.startDNS(ctx)
}

// startControlPlane starts kube-controller-manager (garbage collection,
// namespace deletion, EndpointSlices, Deployments and ReplicaSets, service
// accounts, node lifecycle, ...: its default controllers, each with its own
// service account) and kube-scheduler, each under its own identity, serving
// nothing (no ports to collide with).
func (s *supervisor) startControlPlane() {
	s.addComponent(&component{name: "kube-controller-manager", path: deps.KubeBinary("kube-controller-manager"), args: []string{
		"--kubeconfig=" + componentKubeconfig(s.l, "system:kube-controller-manager"),
		"--leader-elect=false", "--secure-port=0",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + serviceAccountKey(s.l),
		"--controllers=*",
		"--cluster-name=ovn-udn-sandbox"}})
	s.addComponent(&component{name: "kube-scheduler", path: deps.KubeBinary("kube-scheduler"), args: []string{
		"--kubeconfig=" + componentKubeconfig(s.l, "system:kube-scheduler"),
		"--leader-elect=false", "--secure-port=0"}})
}

// startExternal brings up the outside world: a network namespace on the
// underlay at the nodes' next hop (ExternalRouterIP), holding also
// ExternalServerIP beyond it, where echo servers answer TCP and UDP on
// ExternalPort with the client address they saw.
func (s *supervisor) startExternal(ctx context.Context) error {
	ext, ul := s.l.ExternalNetns(), s.l.UnderlayNetns()
	if err := ipCmds(
		[]string{"netns", "add", ext},
		[]string{"-n", ext, "link", "set", "lo", "up"},
		[]string{"link", "add", "ulext", "netns", ul, "type", "veth", "peer", "name", "eth0", "netns", ext},
		[]string{"-n", ul, "link", "set", "ulext", "master", "br0", "up"},
		[]string{"-n", ext, "link", "set", "eth0", "up"},
		[]string{"-n", ext, "addr", "add", ExternalRouterIP + "/24", "dev", "eth0"},
		[]string{"-n", ext, "addr", "add", ExternalServerIP + "/32", "dev", "lo"},
		[]string{"-n", ext, "addr", "add", ExternalServerIP2 + "/32", "dev", "lo"},
	); err != nil {
		return err
	}
	if err := s.startExternalDNS(ctx); err != nil {
		return err
	}
	// A veth hands the kernel's packets over with their checksums left to
	// "offload"; OVS's userspace conntrack then sees them as invalid. Real
	// uplinks deliver complete checksums: so does the outside world here.
	if err := checksumsOff(ext, "eth0"); err != nil {
		return err
	}
	port := strconv.Itoa(ExternalPort)
	s.addComponent(&component{name: "external-echo", path: deps.OVNProgram("ip"), args: []string{"netns", "exec", ext, s.opts.Binary,
		"sandbox", "serve", "--listen", "tcp:0.0.0.0:" + port, "--listen", "udp:0.0.0.0:" + port,
		"--listen", "sink:0.0.0.0:" + strconv.Itoa(ExternalSinkPort), "--listen", "dscp:0.0.0.0:" + strconv.Itoa(ExternalDSCPPort),
		"--reply", ClientReply}})
	return nil
}

// startExternalDNS serves the outside world's names (ExternalDNSName and
// those a test adds to the records file) from the supervisor itself: on a
// loopback port for the zone controllers it runs on this host
// (--dns-server), and at ExternalRouterIP:53 inside the outside world's
// namespace for those deployed as pods on the nodes, which reach it over
// the underlay as they would an operator's resolver.
func (s *supervisor) startExternalDNS(ctx context.Context) error {
	file := s.l.ExternalDNSRecords()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	records := dnsserve.Format([]dnsserve.Record{{Name: ExternalDNSName, TTL: 5, Addr: netip.MustParseAddr(ExternalServerIP)}})
	if err := os.WriteFile(file, []byte(records), 0o644); err != nil {
		return err
	}
	server := &dnsserve.Server{Path: file}
	bound := make(chan string, 1)
	failed := make(chan error, 1)
	go func() {
		if err := server.ListenAndServe(ctx, "127.0.0.1:0", func(a string) { bound <- a }); err != nil {
			s.log.Printf("outside DNS server: %v", err)
			failed <- err
		}
	}()
	select {
	case s.dns = <-bound:
		s.state.ExternalDNS = s.dns
	case err := <-failed:
		return fmt.Errorf("outside DNS server: %w", err)
	}
	var pc net.PacketConn
	var ln net.Listener
	addr := net.JoinHostPort(ExternalRouterIP, "53")
	if err := netns.Do(s.l.ExternalNetns(), func() error {
		var err error
		if pc, err = net.ListenPacket("udp", addr); err != nil {
			return err
		}
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		if pc != nil {
			pc.Close()
		}
		return fmt.Errorf("outside DNS server at %s: %w", addr, err)
	}
	go func() {
		if err := server.Serve(ctx, pc, ln); err != nil {
			s.log.Printf("outside DNS server at %s: %v", addr, err)
		}
	}()
	return nil
}

// startNode brings up one node: its Node object, zone, namespace on the
// underlay, Open vSwitch with br-ex on the underlay, ovn-controller, node
// agent and zone controller.
func (s *supervisor) startNode(ctx context.Context, i int) error {
	name := NodeName(i)
	s.log.Printf("starting %s", name)
	for _, d := range []string{s.l.ZoneDir(name), s.l.NodeDir(name)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	var z *ovnrun.Zone
	if s.opts.Deploy { // the zone pod's, once deployed
		nb, sb := s.l.zoneSockets(name)
		z = &ovnrun.Zone{Name: name, Dir: s.l.ZoneDir(name), NB: nb, SB: sb}
	} else {
		var err error
		if z, err = ovnrun.StartZone(ovnrun.ZoneOptions{Name: name, Dir: s.l.ZoneDir(name)}); err != nil {
			return err
		}
		s.zones[name] = z
	}
	ns, ul := s.l.NodeNetns(name), s.l.UnderlayNetns()
	if err := ipCmds(
		[]string{"netns", "add", ns},
		[]string{"-n", ns, "link", "set", "lo", "up"},
		[]string{"link", "add", underlayLink(i), "netns", ul, "type", "veth", "peer", "name", "eth0", "netns", ns},
		[]string{"-n", ul, "link", "set", underlayLink(i), "master", "br0", "up"},
		[]string{"-n", ns, "link", "set", "eth0", "up"},
	); err != nil {
		return err
	}
	if err := uplinkPortQuiet(ns, "eth0"); err != nil {
		return err
	}
	n, err := ovnrun.StartNode(ovnrun.NodeOptions{Name: name, Dir: s.l.NodeDir(name), Netns: ns})
	if err != nil {
		return err
	}
	s.nodes[name] = n
	// br-ex carries the gateway MAC: the host and every network's gateway
	// router answer at the node's address with the same MAC, as in
	// OVN-Kubernetes' shared gateway mode.
	if _, err := n.VSCtl("--may-exist", "add-br", "br-ex", "--", "set", "Bridge", "br-ex", "datapath_type=netdev",
		"other_config:hwaddr="+GatewayMAC(i),
		"--", "--may-exist", "add-port", "br-ex", "eth0"); err != nil {
		return err
	}
	// br-ex's internal interface appears once ovs-vswitchd has created it.
	if err := proc.WaitFor(10*time.Second, 20*time.Millisecond, func() (bool, error) {
		err := ipCmds([]string{"-n", ns, "link", "show", "br-ex"})
		return err == nil, err
	}); err != nil {
		return err
	}
	if err := ipCmds(
		[]string{"-n", ns, "addr", "add", NodeIP(i), "dev", "br-ex"},
		[]string{"-n", ns, "link", "set", "br-ex", "up"},
		[]string{"-n", ns, "route", "add", "default", "via", ExternalRouterIP},
	); err != nil {
		return err
	}
	mappings := []string{nodeinfo.DefaultPhysicalNetwork + ":br-ex"}
	var extra []string
	for _, u := range s.opts.bridgeUplinks() {
		if err := s.nodeUplinkBridge(i, u); err != nil {
			return err
		}
		mappings = append(mappings, u.physnet()+":"+u.bridge())
		extra = append(extra, "--extra-uplink="+u.agentFlag(i))
	}
	if s.opts.Deploy {
		var agent []string
		agent = append(agent, extra...)
		if s.opts.Uplinks > 1 {
			agent = append(agent, "--default-route-bfd=true")
		}
		if err := s.prepareDeployNode(i, n, mappings, agent); err != nil {
			return err
		}
		if _, err := s.startRealNode(ctx, i, name, ns); err != nil {
			return err
		}
		s.state.Nodes = append(s.state.Nodes, NodeState{Name: name, IP: NodeIP(i), Netns: ns, NB: z.NB, SB: z.SB, OVSDB: n.DB, UplinkIPs: s.uplinkIPs(i)})
		return nil
	}
	encap := strings.Split(NodeIP(i), "/")[0]
	if err := n.StartController(ovnrun.ControllerOptions{SystemID: name, SB: z.Socket("sb"), EncapIP: encap,
		BridgeMappings: strings.Join(mappings, ",")}); err != nil {
		return err
	}
	agent := []string{"node",
		"--kubeconfig=" + componentKubeconfig(s.l, roleOf("node")), "--node=" + name, "--ovsdb=" + n.DB,
		"--netns=" + ns, "--node-ip=" + NodeIP(i),
		"--gateway-ip=" + NodeIP(i), "--gateway-next-hop=" + strings.Join(s.opts.nextHops(), ","), "--gateway-mac=" + GatewayMAC(i),
		"--external-bridge=br-ex", "--external-interface=eth0",
		"--tools-dir=" + deps.OVNBinDir()}
	cniFlags, err := s.startRealNode(ctx, i, name, ns)
	if err != nil {
		return err
	}
	agent = append(agent, cniFlags...)
	agent = append(agent, extra...)
	if s.opts.Uplinks > 1 {
		agent = append(agent, "--default-route-bfd=true")
	}
	s.addComponent(&component{name: "node-agent/" + name, metrics: s.metricsAddr(), args: agent})
	zone := []string{"controller",
		"--kubeconfig=" + componentKubeconfig(s.l, roleOf("controller")), "--zone=" + name, "--nb=" + z.NB, "--sb=" + z.SB}
	if ms := int(s.opts.BFDInterval / time.Millisecond); ms > 0 {
		zone = append(zone, fmt.Sprintf("--bfd-min-tx=%d", ms), fmt.Sprintf("--bfd-min-rx=%d", ms))
	}
	if s.opts.InactiveGracePeriod > 0 {
		zone = append(zone, "--inactive-grace-period="+s.opts.InactiveGracePeriod.String())
	}
	if s.dns != "" {
		zone = append(zone, "--dns-server="+s.dns)
	}
	s.addComponent(&component{name: "zone-controller/" + name, metrics: s.metricsAddr(), args: zone, argsFile: s.l.ZoneArgsFile(name)})
	s.state.Nodes = append(s.state.Nodes, NodeState{Name: name, IP: NodeIP(i), Netns: ns, NB: z.NB, SB: z.SB, OVSDB: n.DB, UplinkIPs: s.uplinkIPs(i)})
	return nil
}

// uplinkIPs are node i's addresses on the further uplinks' segments.
func (s *supervisor) uplinkIPs(i int) []string {
	var ips []string
	for _, u := range s.opts.bridgeUplinks() {
		ips = append(ips, u.nodeAddr(i))
	}
	return ips
}

// metricsAddr returns a loopback address for a component's /metrics
// (empty when no port is free: the component then serves none).
func (s *supervisor) metricsAddr() string {
	port, err := ovnrun.FreePort()
	if err != nil {
		s.log.Printf("no port for metrics: %v", err)
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

func (s *supervisor) addComponent(c *component) {
	c.log = filepath.Join(s.l.LogDir(), strings.ReplaceAll(c.name, "/", "-")+".log")
	if c.metrics != "" {
		c.args = append(c.args, "--metrics-addr="+c.metrics)
	}
	s.comps = append(s.comps, c)
	if err := s.startComponent(c); err != nil {
		s.log.Printf("%v", err)
	}
}

func (s *supervisor) startComponent(c *component) error {
	path := c.path
	if path == "" {
		path = s.opts.Binary
	}
	args := c.args
	if c.argsFile != "" {
		if b, err := os.ReadFile(c.argsFile); err == nil {
			args = append(slices.Clone(args), strings.Fields(string(b))...)
		}
	}
	cmd := exec.Command(path, args...)
	p, err := proc.Start(c.name, cmd, c.log)
	if err != nil {
		return err
	}
	c.p, c.started = p, time.Now()
	return nil
}

// waitReady waits until every node has its ID, subnets and chassis
// published, and every ovn-controller has registered its chassis in its zone.
func (s *supervisor) waitReady(ctx context.Context) error {
	s.log.Printf("waiting for nodes to be ready")
	return proc.WaitFor(s.opts.ReadyTimeout, 200*time.Millisecond, func() (bool, error) {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		for _, c := range s.comps {
			if c.p == nil || c.p.Exited() {
				return false, fmt.Errorf("%s is not running; its log %s ends:\n%s", c.name, c.log, proc.Tail(c.log, 15))
			}
		}
		if s.opts.Deploy {
			if err := s.kube.deployedReady(ctx); err != nil {
				return false, err
			}
		}
		for _, n := range s.state.Nodes {
			node, err := s.kube.node(n.Name)
			if err != nil {
				return false, err
			}
			if _, err := nodeinfo.Parse(n.Name, node.Annotations); err != nil {
				return false, fmt.Errorf("node %s: %w", n.Name, err)
			}
			if !kubeobj.NodeReady(node) {
				return false, fmt.Errorf("node %s does not report Ready yet", n.Name)
			}
			z := &ovnrun.Zone{Name: n.Name, Dir: s.l.ZoneDir(n.Name), NB: n.NB, SB: n.SB}
			out, err := z.SBCtl("--timeout=5", "--bare", "--columns=name", "find", "Chassis", "name="+n.Name)
			if err != nil || strings.TrimSpace(out) == "" {
				return false, fmt.Errorf("ovn-controller of %s has not registered its chassis yet (%v)", n.Name, err)
			}
		}
		return true, nil
	})
}

// watch restarts what exits and keeps the state file current, until ctx ends.
func (s *supervisor) watch(ctx context.Context) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, c := range s.comps {
			if c.p != nil && !c.p.Exited() {
				continue
			}
			now := time.Now()
			if now.Before(c.next) {
				continue
			}
			s.log.Printf("%s exited; restarting it. %v", c.name, c.p.ExitError())
			c.restarts++
			c.next = now.Add(restartDelay(&c.quickExits, now.Sub(c.started)))
			if err := s.startComponent(c); err != nil {
				s.log.Printf("restarting %s: %v", c.name, err)
			}
		}
		for name, z := range s.zones {
			s.heal("zone/"+name, name, "ovn-", z.Heal)
		}
		for name, n := range s.nodes {
			s.heal("node/"+name, name, "", n.Heal)
		}
		before := fmt.Sprint(s.state.Processes)
		s.refresh()
		if fmt.Sprint(s.state.Processes) != before {
			if err := writeState(s.l, &s.state); err != nil {
				s.log.Printf("writing state: %v", err)
			}
		}
	}
}

// heal restarts what exited among a zone's or a node's processes, backing
// off like for components when they keep exiting.
func (s *supervisor) heal(key, node, prefix string, heal func() ([]string, error)) {
	b := s.backoff[key]
	now := time.Now()
	if b == nil {
		b = &healBackoff{}
		s.backoff[key] = b
	}
	if now.Before(b.next) {
		return
	}
	restarted, err := heal()
	for _, r := range restarted {
		name := prefix + r + "/" + node
		s.restarts[name]++
		s.log.Printf("%s exited; restarted it", name)
	}
	if err != nil {
		s.log.Printf("restarting processes of %s: %v", node, err)
	}
	if len(restarted) == 0 && err == nil {
		return
	}
	b.next = now.Add(restartDelay(&b.count, now.Sub(b.last)))
	b.last = now
}

// crashLoopWindow: a process that exits sooner than this after it was
// started is crash-looping.
const crashLoopWindow = 10 * time.Second

// restartDelay is how long to wait before restarting a process that exited
// after running for ran: 1 s, then, while it keeps exiting within
// crashLoopWindow, 2 s, 4 s, ... up to 30 s. quick counts its quick exits
// in a row (updated); one that ran longer starts the count again, so a
// process killed now and then (the chaos test's kills) is restarted after
// a second each time.
func restartDelay(quick *int, ran time.Duration) time.Duration {
	if ran >= crashLoopWindow {
		*quick = 0
	}
	d := min(time.Second<<min(*quick, 5), 30*time.Second)
	*quick++
	return d
}

// healBackoff paces the restarts of one zone's or node's processes: count
// is their quick exits in a row, last the last restart (restartDelay).
type healBackoff struct {
	count      int
	last, next time.Time
}

// refresh rebuilds the process list of the state.
func (s *supervisor) refresh() {
	var ps []Process
	add := func(name string, p *proc.Process, restarts int, metrics string) {
		if p == nil {
			return
		}
		// OVN and OVS programs log to <x>.log; <x>.out holds only what they
		// print before their log is open.
		log := p.LogPath
		if l := strings.TrimSuffix(log, ".out") + ".log"; strings.HasSuffix(log, ".out") && fileExists(l) {
			log = l
		}
		ps = append(ps, Process{Name: name, PID: p.PID(), Running: !p.Exited(), Restarts: restarts, Log: log, Metrics: metrics})
	}
	for _, kp := range findProcesses(s.l.KubeDir()) {
		ps = append(ps, kp)
	}
	for _, c := range s.comps {
		add(c.name, c.p, c.restarts, c.metrics)
	}
	for name, z := range s.zones {
		for role, p := range z.Processes() {
			n := "ovn-" + role + "/" + name
			add(n, p, s.restarts[n], "")
		}
	}
	for name, n := range s.nodes {
		for role, p := range n.Processes() {
			full := role + "/" + name
			add(full, p, s.restarts[full], "")
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	s.state.Processes = ps
}

// stop stops everything the supervisor started, most dependent first, and
// removes the sandbox's network namespaces.
func (s *supervisor) stop() {
	s.log.Printf("stopping")
	for i := len(s.comps) - 1; i >= 0; i-- {
		if p := s.comps[i].p; p != nil {
			p.Stop(5 * time.Second)
		}
	}
	for _, n := range s.nodes {
		n.Stop()
	}
	for _, z := range s.zones {
		z.Stop()
	}
	if err := s.kube.stop(); err != nil {
		s.log.Printf("stopping kube-apiserver and etcd: %v", err)
	}
	if err := cleanup(s.l); err != nil {
		s.log.Printf("cleaning up: %v", err)
	}
}

// ipCmds runs ip commands in order, stopping at the first failure.
func ipCmds(cmds ...[]string) error {
	for _, args := range cmds {
		if out, err := deps.OVNCommand("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
