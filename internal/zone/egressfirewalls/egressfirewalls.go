// Package egressfirewalls is the zone feature that enforces EgressFirewalls
// (rows from internal/rows/egressfirewall): for each namespace with one, on
// each of its primary networks rendered on the zone's node, a port group of
// its pods' ports there and one ACL per rule. One key, and one owner, per
// namespace.
//
// It resolves the dnsName rules (internal/dnsresolve: the zone's DNS
// server, refreshed from the records' TTLs) and reads the nodeSelector
// rules' nodes. Each zone with pods of the namespace says in the object's
// status.messages whether it enforces every rule ("<zone>: EgressFirewall
// Rules applied", or which rule it cannot and why), through server-side
// apply under its own field manager, so zones never undo each other's
// messages; cluster-manager merges them into status.status.
//
// The feature is off when the EgressFirewall CRD is not installed: it
// neither watches nor renders, and rows left from before go.
package egressfirewalls

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	libovsdbclient "github.com/ovn-org/libovsdb/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/dnsresolve"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressfirewall"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// Name is the one name an EgressFirewall may have (the API refuses others).
const Name = "default"

// Feature enforces the EgressFirewalls in the zone.
type Feature struct {
	host *feature.Host
	// off: the EgressFirewall CRD is not installed (set by Watch).
	off bool
	// dns resolves the dnsName rules (nil: no DNS server, as in render).
	dns *dnsresolve.Resolver

	mu sync.Mutex
	// waiting are the keys whose pods' ports are not in the Northbound yet.
	waiting map[feature.Key]bool
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature {
	f := &Feature{host: h, waiting: map[feature.Key]bool{}}
	if h != nil && h.DNSServer != "" {
		f.dns = &dnsresolve.Resolver{Server: h.DNSServer, Changed: func(users []string) {
			keys := make([]feature.Key, 0, len(users))
			for _, ns := range users {
				keys = append(keys, feature.EgressFirewallKey(ns))
			}
			h.Queue.Add(keys...)
		}}
	}
	return f
}

// Name implements feature.Feature.
func (*Feature) Name() string { return "egressfirewalls" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindEgressFirewall} }

// Start implements feature.Runner: the DNS names' refresh loop.
func (f *Feature) Start(ctx context.Context) error {
	if f.dns == nil {
		return nil
	}
	return f.dns.Run(ctx)
}

// Outcome is a namespace's firewall rows in the zone, and what the zone
// says of them.
type Outcome struct {
	Rows []model.Model
	// Problems are the rules not enforced, and why ("rule 2: dnsName
	// x.test.: ... answers NXDOMAIN"), once each.
	Problems []string
	// Enforcing: the zone has pods of the namespace on a network it
	// renders (it then reports in the status).
	Enforcing bool
	// Waiting are the pods' ports not in the Northbound yet.
	Waiting []string
	// Pending: a DNS name is not asked yet (the resolver requeues the
	// key once it is); the zone says nothing in the status until then.
	Pending bool
	// Object is the namespace's EgressFirewall (nil: none).
	Object *v1.EgressFirewall
}

// Reconcile implements feature.Feature: a namespace's firewall rows in one
// transaction, then the zone's message in the object's status.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("egressFirewall", key.Namespace, "zone", f.host.Zone)
	out, err := f.Desired(ctx, key.Namespace)
	var held *feature.NotRendered
	if errors.As(err, &held) {
		logger.V(1).Info("egress firewall rows not rendered", "reason", held.Reason)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Syncer.Sync(ctx, key.String(), out.Rows)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("EgressFirewall of namespace %s: %w", key.Namespace, err)
	}
	if !p.Empty() {
		logger.Info("synced egress firewall rows", "inserted", p.Inserted, "updated", p.Updated, "deleted", p.Deleted)
	}
	f.mu.Lock()
	if len(out.Waiting) > 0 {
		f.waiting[key] = true
	} else {
		delete(f.waiting, key)
	}
	f.mu.Unlock()
	if len(out.Waiting) > 0 {
		logger.V(1).Info("egress firewall waits for pods' ports", "ports", out.Waiting)
		return ctrl.Result{RequeueAfter: 500 * time.Millisecond}, nil
	}
	if out.Pending {
		logger.V(1).Info("egress firewall waits for DNS names")
		return ctrl.Result{}, nil
	}
	if err := f.report(ctx, out); err != nil {
		return ctrl.Result{}, err
	}
	if len(out.Problems) > 0 {
		logger.Info("egress firewall rules not enforced", "problems", out.Problems)
	}
	return ctrl.Result{}, nil
}

// Desired returns a namespace's firewall rows in the zone: none when the
// feature is off, the namespace has no EgressFirewall, or none of its
// networks is rendered here with pods of it.
func (f *Feature) Desired(ctx context.Context, namespace string) (Outcome, error) {
	if f.off {
		return Outcome{}, nil
	}
	var ef v1.EgressFirewall
	if err := f.host.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: Name}, &ef); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			if f.dns != nil {
				f.dns.Release(namespace)
			}
			return Outcome{}, nil
		}
		return Outcome{}, err
	}
	out := Outcome{Object: &ef}
	sc, ok, err := f.host.Networks.Scope(ctx, namespace)
	if err != nil || !ok {
		return out, err
	}
	var rules []egressfirewall.Rule
	rulesOnce := func() error {
		if rules != nil {
			return nil
		}
		var err error
		rules, out.Pending, err = f.rules(ctx, &ef)
		return err
	}
	exclude, err := f.inCluster(ctx, sc)
	if err != nil {
		return out, err
	}
	seen := map[string]bool{}
	for i, net := range sc.Nets {
		here, err := f.host.Networks.UsedOn(ctx, net.Network, sc.Local.Name)
		if err != nil {
			return out, err
		}
		if !here {
			continue
		}
		ports, waiting, err := f.ports(ctx, namespace, sc.Local.Name, net.Primary.Key)
		if err != nil {
			return out, err
		}
		out.Waiting = append(out.Waiting, waiting...)
		if len(ports) == 0 {
			continue
		}
		if err := rulesOnce(); err != nil {
			return out, err
		}
		out.Enforcing = true
		prefix := ""
		if i > 0 {
			prefix = net.Network.Name + "/"
		}
		res := egressfirewall.Render(egressfirewall.Input{Namespace: namespace, Network: net.Network, Rules: rules, Ports: ports, IDPrefix: prefix,
			Exclude: exclude})
		out.Rows = append(out.Rows, res.Rows...)
		for _, p := range res.Problems {
			if !seen[p] {
				seen[p] = true
				out.Problems = append(out.Problems, p)
			}
		}
	}
	if !out.Enforcing && f.dns != nil {
		f.dns.Release(namespace) // its names are asked for again when it has pods here
	}
	return out, nil
}

// inCluster are the subnets the namespace's pods reach inside the cluster
// beyond each network's own: every primary network of the namespace (a pod
// of one reaches the others through their link), and the networks
// connected to them for pods.
func (f *Feature) inCluster(ctx context.Context, sc feature.Scope) ([]netip.Prefix, error) {
	var out []netip.Prefix
	add := func(n topology.Network) {
		for _, s := range n.Subnets {
			out = append(out, s.CIDR)
		}
	}
	for _, net := range sc.Nets {
		add(net.Network)
		peers, err := f.host.Networks.PodPeers(ctx, net.Network.Name)
		if err != nil {
			return nil, err
		}
		for name := range peers {
			n, ok, err := f.host.Networks.Network(ctx, name)
			if err != nil {
				return nil, err
			}
			if ok {
				add(n)
			}
		}
	}
	return out, nil
}

// rules are the object's rules with their destinations read: CIDRs
// parsed, DNS names resolved, node selectors' nodes' addresses.
func (f *Feature) rules(ctx context.Context, ef *v1.EgressFirewall) ([]egressfirewall.Rule, bool, error) {
	out := make([]egressfirewall.Rule, 0, len(ef.Spec.Egress))
	pending := false
	var names []string
	var nodes []corev1.Node
	var infos map[string]nodeinfo.Info
	for _, r := range ef.Spec.Egress {
		rule := egressfirewall.Rule{Action: egressfirewall.Action(r.Type)}
		for _, p := range r.Ports {
			rule.Ports = append(rule.Ports, egressfirewall.Port{Protocol: p.Protocol, Port: p.Port})
		}
		to := r.To
		switch {
		case to.CIDRSelector != "":
			pfx, err := netip.ParsePrefix(to.CIDRSelector)
			if err != nil { // the API refuses it; an object from before its rule
				rule.Resolved, rule.Source, rule.Unresolved = true, "cidrSelector "+to.CIDRSelector, "not a CIDR"
				break
			}
			rule.CIDR = pfx
		case to.DNSName != "":
			rule.Resolved, rule.Source = true, "dnsName "+to.DNSName
			if f.dns == nil {
				rule.Unresolved = "no DNS server is configured (--dns-server)"
				break
			}
			names = append(names, to.DNSName)
			res := f.dns.Lookup(ctx, to.DNSName, ef.Namespace)
			rule.Addresses = res.Addrs
			switch {
			case res.Pending:
				rule.Unresolved, pending = "not resolved yet", true
			case res.Err != nil:
				rule.Unresolved = res.Err.Error()
			}
		case to.NodeSelector != nil:
			rule.Resolved, rule.Source = true, "nodeSelector"
			sel, err := kubeobj.Selector(to.NodeSelector)
			if err != nil {
				rule.Unresolved = "malformed selector: " + err.Error()
				break
			}
			if nodes == nil {
				var list corev1.NodeList
				if err := f.host.Client.List(ctx, &list); err != nil {
					return nil, false, err
				}
				nodes = list.Items
				all, _, err := f.host.Networks.Nodes(ctx)
				if err != nil {
					return nil, false, err
				}
				infos = map[string]nodeinfo.Info{}
				for _, in := range all {
					infos[in.Name] = in
				}
			}
			for _, n := range nodes {
				if !sel.Matches(labels.Set(n.Labels)) {
					continue
				}
				for _, p := range infos[n.Name].PrimaryIPs {
					rule.Addresses = append(rule.Addresses, p.Addr())
				}
			}
			if len(rule.Addresses) == 0 {
				rule.Unresolved = "it selects no node with an address"
			}
		default:
			rule.Resolved, rule.Source, rule.Unresolved = true, "rule", "no destination"
		}
		out = append(out, rule)
	}
	if f.dns != nil {
		f.dns.Release(ef.Namespace, names...)
	}
	return out, pending, nil
}

// ports are the row IDs of the namespace's running pods' ports on the zone's
// node on the network of attachment key, and the names of those not in the
// Northbound yet.
func (f *Feature) ports(ctx context.Context, namespace, node, key string) ([]string, []string, error) {
	var list corev1.PodList
	if err := f.host.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{feature.PodNodeIndex: node}); err != nil {
		return nil, nil, err
	}
	var ids, waiting []string
	for i := range list.Items {
		p := &list.Items[i]
		if feature.PodDone(p) {
			continue
		}
		nets, err := podnet.ParsePod(p)
		if err != nil {
			continue
		}
		a, ok := nets[key]
		if !ok {
			continue
		}
		name := podnet.PortNameOf(key, p, a)
		if f.host.Northbound == nil { // render: the port's row ID among its network's rows
			ids = append(ids, topology.PortRowID(name))
			continue
		}
		lsp := &nbdb.LogicalSwitchPort{Name: name}
		switch err := ovsdb.Get(ctx, f.host.Northbound, lsp); {
		case errors.Is(err, libovsdbclient.ErrNotFound):
			waiting = append(waiting, name)
		case err != nil:
			return nil, nil, err
		default:
			ids = append(ids, lsp.UUID)
		}
	}
	sort.Strings(ids)
	return slices.Compact(ids), waiting, nil // a VM's pods share their port
}

// Keys implements feature.Keyer: every namespace with an EgressFirewall,
// and those only the zone's Northbound still remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	keys, err := f.objectKeys(ctx, nil)
	if err != nil {
		return nil, err
	}
	return f.host.WithOwners(keys, feature.KindEgressFirewall)
}

// objectKeys are the keys of the namespaces whose EgressFirewall keep
// accepts (nil: all).
func (f *Feature) objectKeys(ctx context.Context, keep func(*v1.EgressFirewall) bool) ([]feature.Key, error) {
	if f.off {
		return nil, nil
	}
	var list v1.EgressFirewallList
	if err := f.host.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []feature.Key
	for i := range list.Items {
		if keep == nil || keep(&list.Items[i]) {
			out = append(out, feature.EgressFirewallKey(list.Items[i].Namespace))
		}
	}
	return out, nil
}

// Watch implements feature.Feature: an EgressFirewall is its namespace's
// key; a pod of the zone's node its namespace's (when it has one); a NAD
// its namespace's (its networks may change); a node's labels or addresses
// the keys of objects with a nodeSelector rule.
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	if !kubeobj.Installed(f.host.Client.RESTMapper(), v1.GroupVersion.WithKind("EgressFirewall")) {
		f.off = true
		return
	}
	feature.WatchPerNamespace(b, f.host, feature.PerNamespace{New: func() client.Object { return &v1.EgressFirewall{} }, Name: Name,
		Key: feature.EgressFirewallKey, Pods: feature.AttachmentChanges})
	b.Watches(&corev1.Node{}, handler.TypedEnqueueRequestsFromMapFunc[client.Object, feature.Key](func(ctx context.Context, _ client.Object) []feature.Key {
		keys, _ := f.objectKeys(ctx, hasNodeSelector)
		return keys
	}), builder.WithPredicates(predicate.Or[client.Object](predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
}

func hasNodeSelector(ef *v1.EgressFirewall) bool {
	return slices.ContainsFunc(ef.Spec.Egress, func(r v1.EgressFirewallRule) bool { return r.To.NodeSelector != nil })
}

// NetworkChanged implements feature.NetworkDependent: a namespace's rows
// are where its networks are rendered, so they follow a network that comes
// to the zone's node or leaves it; keys waiting for the ports a network
// just wrote are woken.
func (f *Feature) NetworkChanged(ctx context.Context, c feature.NetworkChange) {
	if f.off {
		return
	}
	if !c.Known || c.Moved || !c.Exists {
		network := c.Network
		f.host.Queue.Later(func(ctx context.Context) []feature.Key {
			if network == nodeinfo.DefaultNetwork {
				keys, _ := f.objectKeys(ctx, nil)
				return keys
			}
			namespaces, err := f.host.Networks.NetworkNamespaces(ctx, network)
			if err != nil {
				keys, _ := f.objectKeys(ctx, nil)
				return keys
			}
			keys, _ := f.objectKeys(ctx, func(ef *v1.EgressFirewall) bool { return slices.Contains(namespaces, ef.Namespace) })
			return keys
		})
	}
	if c.RowsChanged {
		f.PortsWritten(ctx)
	}
}

// PortsWritten implements feature.PortDependent: keys waiting for ports
// are reconciled again.
func (f *Feature) PortsWritten(context.Context) {
	f.mu.Lock()
	keys := make([]feature.Key, 0, len(f.waiting))
	for k := range f.waiting {
		keys = append(keys, k)
	}
	f.mu.Unlock()
	if len(keys) > 0 {
		f.host.Queue.Add(keys...)
	}
}

// Message is the zone's status message for an outcome.
func Message(zone string, problems []string) string {
	if len(problems) == 0 {
		return zone + ": " + v1.EgressFirewallApplied
	}
	return zone + ": " + v1.EgressFirewallNotApplied + ": " + strings.Join(problems, "; ")
}
