// Package gatewayflows is the node agent's part that keeps each external
// bridge's OpenFlow table equal to what package gateway computes for the
// node's networks and services (shared gateway mode), and the host's routes
// to the service CIDRs through the first bridge.
package gatewayflows

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/rows/gateway"
	"github.com/ovn-udn/ovn-udn/internal/rows/services"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// GatewayReconciler keeps one external bridge's flows equal to
// gateway.Flows of the node's networks and services, and, on the first
// uplink's bridge (the host's), the host's routes to the service CIDRs
// through it. A node with several uplinks runs one per bridge; a further
// uplink's bridge carries every network's egress and node ports on the
// node's address there, not the host's connections to services.
type GatewayReconciler struct {
	Client client.Client
	Opts   node.Options
	// Uplink is the index of the bridge's uplink in Info.Gateway.Uplinks():
	// 0 is Opts.Gateway.Bridge, i is Opts.Gateway.Extra[i-1].
	Uplink int
	// Recorder reports a service whose external address and port another
	// service holds (ReasonExternalAddressConflict), once per conflict.
	Recorder record.EventRecorder

	// reported are the conflicts already reported, by service.
	reported map[string]string
	// egressIPsOn: the EgressIP CRD is installed (SetupWithManager).
	egressIPsOn bool
	// egressServicesOn: the EgressService CRD is installed.
	egressServicesOn bool
	// announced counts the announcements sent for each egress IP since
	// the node took it (garp.go).
	announced map[netip.Addr]int
	// written are the flows last written to the bridge or found there,
	// at checked; routesAt is when the host's routes were last ensured.
	// Between two resync periods a reconcile trusts them (write).
	written           string
	checked, routesAt time.Time
}

// ReasonExternalAddressConflict is the Event reason on a Service whose
// external IP, ingress IP or node port (with protocol and port) an older
// Service already holds on this node's external bridge.
const ReasonExternalAddressConflict = "ExternalAddressConflict"

// bridge is the reconciler's bridge and its uplink port.
func (r *GatewayReconciler) bridge() node.UplinkBridge {
	if r.Uplink == 0 {
		return node.UplinkBridge{Bridge: r.Opts.Gateway.Bridge, Interface: r.Opts.Gateway.Interface}
	}
	return r.Opts.Gateway.Extra[r.Uplink-1]
}

// Enabled reports whether the node has an external bridge and a gateway.
func Enabled(opts node.Options) bool { return opts.Gateway.Bridge != "" && opts.Info.Gateway != nil }

// Setup registers a reconciler per uplink bridge; the first reports
// conflicting services as Events.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	first := &GatewayReconciler{Client: mgr.GetClient(), Opts: opts, Recorder: mgr.GetEventRecorderFor("ovn-udn-node-" + opts.Node)}
	if err := first.SetupWithManager(mgr); err != nil {
		return err
	}
	for i := range opts.Gateway.Extra {
		if err := (&GatewayReconciler{Client: mgr.GetClient(), Opts: opts, Uplink: i + 1}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}

// SetupWithManager registers the controller: every Service, NAD and
// Namespace event queues the single key, the bridge (one table, computed
// and written whole).
func (r *GatewayReconciler) SetupWithManager(mgr ctrl.Manager) error {
	key := reconcile.Request{NamespacedName: types.NamespacedName{Name: r.bridge().Bridge}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{key}
	})
	name := "node-gateway"
	if r.Uplink > 0 {
		name += "-" + r.bridge().Bridge
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(name).
		Watches(&corev1.Service{}, one).
		// A network's first pod on the node brings its gateway router,
		// whose patch port the flows wait for (usedHere).
		Watches(&corev1.Pod{}, one, builder.WithPredicates(usesNodeChanged)).
		Watches(&nadv1.NetworkAttachmentDefinition{}, one).
		Watches(&corev1.Namespace{}, one)
	// The egress IPs the node holds (their CRD may be absent).
	if kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressIP")) {
		r.egressIPsOn = true
		b = b.Watches(&v1.EgressIP{}, one)
	}
	// The load-balancer IPs of the EgressServices the node hosts.
	if kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressService")) {
		r.egressServicesOn = true
		b = b.Watches(&v1.EgressService{}, one)
	}
	return b.Complete(r)
}

// usesNodeChanged passes pod events that change whether the pod uses its
// node (activity.UsesNode).
var usesNodeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		return !ok1 || !ok2 || activity.UsesNode(o) != activity.UsesNode(n)
	},
}

// Reconcile computes the bridge's flows and writes them (write): compared
// with what the bridge holds at the first pass and once per resync period,
// and in between replaced only when they changed since the last write.
func (r *GatewayReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	began := time.Now()
	log := ctrl.LoggerFrom(ctx)
	resync := r.Opts.Gateway.Resync
	if resync == 0 {
		resync = 5 * time.Second
	}
	in, svcs, missing, err := r.input(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := time.Now()
	if now.Sub(r.routesAt) >= resync {
		if err := r.ensureRoutes(); err != nil {
			return reconcile.Result{}, err
		}
		r.routesAt = now
	}
	table := gateway.Build(in)
	r.report(table.Conflicts, svcs)
	flows := strings.Join(table.Flows, "\n") + "\n"
	changed, err := r.write(flows, now, resync)
	if err != nil {
		return reconcile.Result{}, err
	}
	if changed {
		log.Info("external bridge flows written", "bridge", r.bridge().Bridge, "flows", strings.Count(flows, "\n"),
			"networks", len(in.Networks), "services", len(in.Services), "waitingForPatchPorts", missing)
	}
	// Once the bridge answers for them: announced, so the outside sends
	// their replies here at once.
	pending, err := r.announce(ctx, began, in.MAC, in.Physical, in.EgressIPs)
	if err != nil {
		return reconcile.Result{}, err
	}
	if pending {
		return reconcile.Result{RequeueAfter: AnnounceInterval}, nil
	}
	if len(missing) > 0 {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// report emits a Warning Event on each service that lost an address to an
// older one, once per distinct conflict (the single key serialises calls).
func (r *GatewayReconciler) report(conflicts []gateway.Conflict, svcs map[string]*corev1.Service) {
	now := map[string]string{}
	for _, c := range conflicts {
		if now[c.Service] != "" {
			now[c.Service] += "; "
		}
		now[c.Service] += c.String()
	}
	for name, msg := range now {
		if svc := svcs[name]; svc != nil && r.Recorder != nil && r.reported[name] != msg {
			r.Recorder.Eventf(svc, corev1.EventTypeWarning, ReasonExternalAddressConflict, "node %s: %s", r.Opts.Node, msg)
		}
	}
	r.reported = now
}

// write brings the bridge to flows with as few runs of ovs-ofctl as it
// can, since an event's reconcile waits for them (an egress IP's
// announcement comes after its flows): none when they are the flows last
// written and that was less than every ago; one replace-flows when they
// changed since (it sends only what differs); and apply's comparison
// first otherwise (the first reconcile, and once per period, which puts
// back a flow changed behind the agent's back).
func (r *GatewayReconciler) write(flows string, now time.Time, every time.Duration) (bool, error) {
	switch {
	case r.written == "" || now.Sub(r.checked) >= every:
		changed, err := r.apply(flows)
		if err != nil {
			r.written = ""
			return false, err
		}
		r.written, r.checked = flows, now
		return changed, nil
	case flows == r.written:
		return false, nil
	}
	if err := r.replace(flows); err != nil {
		r.written = ""
		return false, err
	}
	r.written = flows
	return true, nil
}

// apply writes flows with one atomic replace-flows (a bundle) unless the
// bridge already holds exactly them, as ovs-ofctl diff-flows compares them
// (so a flow changed behind the agent's back is put back at the next resync).
func (r *GatewayReconciler) apply(flows string) (bool, error) {
	diff := r.ofctl("diff-flows", r.mgmt(), "/dev/stdin") // diff-flows takes no "-"
	diff.Stdin = strings.NewReader(flows)
	var stderr bytes.Buffer
	diff.Stderr = &stderr
	out, err := diff.Output()
	var ee *exec.ExitError
	switch {
	case err == nil && len(bytes.TrimSpace(out)) == 0:
		return false, nil
	case err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 2): // 2: the flows differ
		return false, fmt.Errorf("comparing the flows of %s: %w: %s", r.bridge().Bridge, err, strings.TrimSpace(stderr.String()))
	}
	if err := r.replace(flows); err != nil {
		return false, err
	}
	return true, nil
}

// replace makes the bridge's flows exactly flows, atomically (a bundle).
func (r *GatewayReconciler) replace(flows string) error {
	replace := r.ofctl("--bundle", "replace-flows", r.mgmt(), "-")
	replace.Stdin = strings.NewReader(flows)
	if out, err := replace.CombinedOutput(); err != nil {
		return fmt.Errorf("writing the flows of %s: %v: %s", r.bridge().Bridge, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// mgmt is the bridge's OpenFlow management socket, in the node's OVS run
// directory (the OVS database socket's).
func (r *GatewayReconciler) mgmt() string {
	return "unix:" + filepath.Join(ovsRunDir(r.Opts.Host.OVSDB), r.bridge().Bridge+".mgmt")
}

// ofctl runs ovs-ofctl speaking OpenFlow 1.5 (bundles).
func (r *GatewayReconciler) ofctl(args ...string) *exec.Cmd {
	return r.Opts.Host.Command("ovs-ofctl", append([]string{"-O", "OpenFlow15"}, args...)...)
}

// ovsRunDir is the directory of an OVS database's unix socket.
func ovsRunDir(db string) string {
	return filepath.Dir(strings.TrimPrefix(db, "unix:"))
}

// ensureRoutes gives the host routes to the service CIDRs through the
// external bridge, to a next hop nothing holds, whose neighbour entry is the
// gateway MAC (br-ex then steers by destination); `replace` at every
// reconcile, so a route removed behind the agent's back comes back.
func (r *GatewayReconciler) ensureRoutes() error {
	if r.Uplink > 0 {
		return nil
	}
	dev := r.Opts.Gateway.Bridge
	for _, hop := range r.Opts.Cluster.MasqueradeNextHops() {
		if !hasFamily(r.Opts.Info.Gateway.IPs, hop) {
			continue
		}
		if err := r.ip("neigh", "replace", hop.String(), "lladdr", r.Opts.Info.Gateway.MAC, "dev", dev, "nud", "permanent"); err != nil {
			return err
		}
		for _, c := range r.Opts.Cluster.ServiceCIDRs {
			if c.Addr().Is4() != hop.Is4() {
				continue
			}
			if err := r.ip("route", "replace", c.Masked().String(), "via", hop.String(), "dev", dev, "onlink"); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *GatewayReconciler) ip(args ...string) error {
	if r.Opts.Gateway.Netns != "" {
		args = append([]string{"-n", r.Opts.Gateway.Netns}, args...)
	}
	if out, err := r.Opts.Host.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func hasFamily(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Addr().Is4() == a.Is4() {
			return true
		}
	}
	return false
}

// input gathers gateway.Build's input: the bridge's ports from OVS, the
// networks from NADs, the services from the cache (with the objects by
// name). missing names networks whose patch port ovn-controller has not
// made yet.
func (r *GatewayReconciler) input(ctx context.Context) (gateway.Input, map[string]*corev1.Service, []string, error) {
	u := r.Opts.Info.Gateway.Uplinks()[r.Uplink]
	in := gateway.Input{MAC: u.MAC, NextHops: u.NextHops}
	if r.Uplink == 0 {
		in.HostMasqueradeIPs, in.MasqueradeNextHops = r.Opts.Cluster.HostMasqueradeIPs(), r.Opts.Cluster.MasqueradeNextHops()
		in.ServiceCIDRs = r.Opts.Cluster.ServiceCIDRs
	}
	for _, p := range u.IPs {
		in.NodeIPs = append(in.NodeIPs, p.Addr())
	}
	ports, err := r.bridgePorts()
	if err != nil {
		return in, nil, nil, err
	}
	br := r.bridge()
	phys, ok := ports.byName[br.Interface]
	if !ok {
		return in, nil, nil, fmt.Errorf("bridge %s has no port %s", br.Bridge, br.Interface)
	}
	in.Physical = phys
	nets, err := r.networks(ctx)
	if err != nil {
		return in, nil, nil, err
	}
	var missing []string
	for _, n := range nets {
		patch, ok := ports.byLocalnet[n.UplinkLocalnetPort(r.Opts.Node, r.Uplink, u.PhysicalNetwork)]
		if !ok {
			// Waited for only where the network is used: elsewhere its
			// zone does not render it (internal/activity), and its patch
			// port, if it comes, is taken at the next resync.
			if used, err := r.usedHere(ctx, n); err != nil {
				return in, nil, nil, err
			} else if used {
				missing = append(missing, n.Name)
			}
			continue
		}
		in.Networks = append(in.Networks, gateway.Network{Name: n.Name, ID: n.ID, Patch: patch})
	}
	if in.EgressIPs, err = r.egressIPs(ctx, u.IPs); err != nil {
		return in, nil, nil, err
	}
	var svcs map[string]*corev1.Service
	if in.Services, svcs, err = r.services(ctx); err != nil {
		return in, nil, nil, err
	}
	return in, svcs, missing, nil
}

// egressIPs are the addresses this node holds for others within the
// uplink's subnets, sorted: the egress IPs the EgressIPs' status gives it,
// and the load-balancer IPs of the EgressServices it hosts. It answers
// ARP/ND for them and announces them when it takes them.
func (r *GatewayReconciler) egressIPs(ctx context.Context, subnets []netip.Prefix) ([]netip.Addr, error) {
	var out []netip.Addr
	add := func(s string) {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return
		}
		for _, p := range subnets {
			if p.Masked().Contains(ip.Unmap()) {
				out = append(out, ip.Unmap())
				return
			}
		}
	}
	if r.egressIPsOn {
		var list v1.EgressIPList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil, err
		}
		for _, e := range list.Items {
			for _, it := range e.Status.Items {
				if it.Node == r.Opts.Node {
					add(it.EgressIP)
				}
			}
		}
	}
	if r.egressServicesOn {
		var list v1.EgressServiceList
		if err := r.Client.List(ctx, &list); err != nil {
			return nil, err
		}
		for _, es := range list.Items {
			if es.Status.Host != r.Opts.Node {
				continue
			}
			var svc corev1.Service
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: es.Namespace, Name: es.Name}, &svc); err != nil {
				continue // gone: nothing to answer for
			}
			for _, in := range svc.Status.LoadBalancer.Ingress {
				add(in.IP)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return slices.Compact(out), nil
}

// networks returns the networks with a gateway router on the node: the
// default network and every allocated Layer3 or Layer2 network with a
// gateway (primary, or secondary with an egress gateway) whose NAD the
// zones admit (netconf.Admit: a refused one, such as a namespace's own
// network asking for egress, has no router to reach).
func (r *GatewayReconciler) networks(ctx context.Context) ([]topology.Network, error) {
	out := []topology.Network{topology.DefaultNetwork(r.Opts.Cluster)}
	nads := &nadv1.NetworkAttachmentDefinitionList{}
	if err := r.Client.List(ctx, nads); err != nil {
		return nil, err
	}
	all := make([]*nadv1.NetworkAttachmentDefinition, len(nads.Items))
	for i := range nads.Items {
		all[i] = &nads.Items[i]
	}
	admitted, _ := netconf.Admit(all)
	seen := map[string]bool{}
	for _, nad := range admitted {
		n, ok, err := topology.FromNAD(nad, r.Opts.Cluster)
		if err != nil || !ok || !n.HasGateway() || n.Topology == netconf.TopologyLocalnet || seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// usedHere reports whether network n is used on the agent's node
// (activity.Of, from the agent's cache: its own node's pods).
func (r *GatewayReconciler) usedHere(ctx context.Context, n topology.Network) (bool, error) {
	if n.IsDefault() || !n.IsPrimary() {
		return true, nil
	}
	// The agent's cache holds its own node's pods only, which is what
	// the answer for its node needs; it knows no connects (a network used
	// here only by a connected network's pods gets its flows at the next
	// resync).
	set, err := activity.Of(activity.ClientView{Ctx: ctx, Reader: r.Client}, n.Name)
	if err != nil {
		return false, err
	}
	return set.Has(r.Opts.Node), nil
}

// services returns every service with its network (its namespace's primary
// network, podnet's rule), oldest first (the older keeps a contested
// address: gateway.Build), and the objects by "<namespace>/<name>".
func (r *GatewayReconciler) services(ctx context.Context) ([]gateway.Service, map[string]*corev1.Service, error) {
	list := &corev1.ServiceList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, nil, err
	}
	sort.SliceStable(list.Items, func(i, j int) bool {
		a, b := &list.Items[i], &list.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	primaries := map[string]string{}
	byName := map[string]*corev1.Service{}
	var out []gateway.Service
	for i := range list.Items {
		svc := &list.Items[i]
		network, ok := primaries[svc.Namespace]
		if !ok {
			ns := &corev1.Namespace{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: svc.Namespace}, ns); err != nil {
				continue
			}
			nads, err := podnet.NamespaceNADs(ctx, r.Client, svc.Namespace)
			if err != nil {
				return nil, nil, err
			}
			if p, ok := podnet.NamespacePrimary(ns, nads, v1.PrimaryNetworkLabel); ok && !p.None() {
				network = p.Network
			}
			primaries[svc.Namespace] = network
		}
		if network == "" {
			continue
		}
		s := gateway.Service{Name: svc.Namespace + "/" + svc.Name, Network: network, ExternalIPs: services.ExternalIPs(svc)}
		for _, ip := range svc.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				s.ClusterIPs = append(s.ClusterIPs, a)
			}
		}
		for _, p := range svc.Spec.Ports {
			proto := strings.ToLower(string(p.Protocol))
			if proto == "" {
				proto = "tcp"
			}
			s.Ports = append(s.Ports, gateway.Port{Protocol: proto, Port: int(p.Port), NodePort: int(p.NodePort)})
		}
		out = append(out, s)
		byName[s.Name] = svc
	}
	return out, byName, nil
}

// bridgePorts are the external bridge's OpenFlow ports by interface name,
// and its patch ports by the localnet port ovn-controller made them for.
type bridgePorts struct {
	byName     map[string]int
	byLocalnet map[string]int
}

// bridgePorts reads the bridge's ports in one ovs-vsctl run (list-ports,
// then the Interface and Port tables as JSON, one line each): a
// reconcile's runs of the OVS tools are what an event waits for on a
// loaded node (each one 10 ms idle, about 100 ms at a load of 30).
func (r *GatewayReconciler) bridgePorts() (bridgePorts, error) {
	out, err := r.vsctl("--format=json", "list-ports", r.bridge().Bridge,
		"--", "--columns=name,ofport", "list", "Interface",
		"--", "--columns=name,external_ids", "list", "Port")
	if err != nil {
		return bridgePorts{}, err
	}
	return parseBridgePorts(out)
}

// parseBridgePorts reads bridgePorts' output: the bridge's port names, a
// line each, then two JSON tables.
func parseBridgePorts(out []byte) (bridgePorts, error) {
	bp := bridgePorts{byName: map[string]int{}, byLocalnet: map[string]int{}}
	onBridge := map[string]bool{}
	var tables [][][]json.RawMessage
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, `{"data":`): // a table, never a port's name
			rows, err := jsonTable([]byte(line), 2)
			if err != nil {
				return bp, err
			}
			tables = append(tables, rows)
		default:
			onBridge[line] = true
		}
	}
	if len(tables) != 2 {
		return bp, fmt.Errorf("listing the bridge's ports: %d tables in ovs-vsctl's output, want 2", len(tables))
	}
	for _, row := range tables[0] {
		var name string
		var ofport int
		if json.Unmarshal(row[0], &name) == nil && json.Unmarshal(row[1], &ofport) == nil && ofport > 0 && onBridge[name] {
			bp.byName[name] = ofport
		}
	}
	for _, row := range tables[1] {
		var name string
		if json.Unmarshal(row[0], &name) != nil {
			continue
		}
		if ln := ovsMapValue(row[1], "ovn-localnet-port"); ln != "" {
			if of, ok := bp.byName[name]; ok {
				bp.byLocalnet[ln] = of
			}
		}
	}
	return bp, nil
}

func (r *GatewayReconciler) vsctl(args ...string) ([]byte, error) {
	out, err := r.Opts.Host.Command("ovs-vsctl", append([]string{"--db=" + r.Opts.Host.OVSDB, "--timeout=10"}, args...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("ovs-vsctl %s: %w", strings.Join(args, " "), err)
	}
	return out, nil
}

// jsonTable reads ovs-vsctl's JSON table: the rows of n columns.
func jsonTable(out []byte, n int) ([][]json.RawMessage, error) {
	var t struct {
		Data [][]json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&t); err != nil {
		return nil, fmt.Errorf("reading ovs-vsctl's table: %w", err)
	}
	rows := t.Data[:0]
	for _, row := range t.Data {
		if len(row) == n {
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// ovsMapValue reads key from an OVSDB JSON map (["map", [[k, v], ...]]).
func ovsMapValue(raw json.RawMessage, key string) string {
	var m []json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) != 2 {
		return ""
	}
	var pairs [][2]string
	if json.Unmarshal(m[1], &pairs) != nil {
		return ""
	}
	for _, p := range pairs {
		if p[0] == key {
			return p[1]
		}
	}
	return ""
}
