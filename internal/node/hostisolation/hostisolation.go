// Package hostisolation is the node agent's part that lets only the
// kubelet reach the default interface of a pod whose namespace has a
// primary user-defined network (seed 002, "Probes and Service Access":
// host-to-pod traffic over the default network is blocked, except for the
// kubelet's probes).
//
// OVN admits such a pod's default-network traffic from its node's
// management address only (the udn_isolated_pods port group,
// internal/rows/topology), and every process of the host leaves by that
// address. So the host itself tells the kubelet apart: an nftables table
// in the node's network namespace (Table) drops what the host sends to
// those pods' default addresses, unless the sending socket belongs to the
// kubelet's cgroup (cgroup v2 socket matching) or the packet answers a
// connection the pod opened.
//
// The same table confines the node's host-network pods whose namespace
// has a primary user-defined network (seed 002, "Services": they reach
// only the ClusterIPs of their network's services, and the API server's
// and DNS's; "Host Networked Pods": no pod of another network): a rule per
// pod matches its cgroup (found under --pods-cgroup, as the cgroupfs or
// systemd driver names it) and jumps to its networks' chain, which lets
// their ClusterIPs by and drops the rest of the service CIDRs and the
// default network's pod subnets. A pod runs unconfined from its start
// until the next reconcile (within a second of its cgroup appearing); a
// running pod whose cgroup is not found gets a Warning Event
// (HostNetworkNotConfined).
//
// The kubelet's cgroup is a flag (--kubelet-cgroup, a path in the cgroup
// v2 hierarchy, e.g. system.slice/kubelet.service). Without it, where the
// kernel's cgroup v2 hierarchy is not where nftables looks for it, or
// where nft or the kernel cannot load the rule, the part says so at
// start: in its log, a Warning Event on the Node and /readyz's details (a
// check named host-isolation-off). It then leaves the host unrestricted
// and removes its table, if an earlier run left one. A rule that stops
// loading later shows as the controller's errors, with the table
// as last loaded.
package hostisolation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// TableName is the nftables table (family inet) the part owns.
const TableName = "ovn_udn_host_isolation"

// ProbeName is the table Setup loads, then deletes, to learn whether nft
// and the kernel take the rule (never TableName: that would drop the
// rules of a running node until the first reconcile).
const ProbeName = TableName + "_probe"

// Setup registers the part: with a kubelet cgroup nftables can match, a
// reconciler keeping the table; without (no cgroup, no nft, a kernel or
// nft without cgroup v2 socket matching: a probe table with the rule is
// loaded once to find out), the reason at start, in a Warning Event on
// the Node and in /readyz's details (a passing check named
// host-isolation-off), and no table of ovn-udn's left on the node.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	log := ctrl.Log.WithName("host-isolation").WithValues("node", opts.Node)
	mount := ResolveMount()
	cg, err := Resolve(mount, opts.KubeletCgroup)
	if err == nil {
		// Every kind of rule the table holds, the kubelet's cgroup standing
		// for a confined pod's.
		probe := Rules{Kubelet: cg, Closed: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")},
			Confined: []Confined{{Networks: "probe", Pods: []ConfinedPod{{Name: "probe", Cgroup: cg}}}}}
		if err = apply(opts, script(ProbeName, probe)); err == nil {
			err = apply(opts, deleteTable(ProbeName))
		}
	}
	recorder := mgr.GetEventRecorderFor("ovn-udn-node")
	if err != nil {
		reason := fmt.Sprintf("host isolation is off, every host process reaches the default interface of pods with a primary user-defined network: %v", err)
		log.Info(reason)
		_ = apply(opts, deleteTable(TableName))
		if err := mgr.AddReadyzCheck("host-isolation-off", func(*http.Request) error { return nil }); err != nil {
			return err
		}
		return mgr.Add(warnOnce{c: mgr.GetClient(), node: opts.Node, event: "HostIsolationOff", reason: reason, recorder: recorder})
	}
	log.Info("host isolation: only the kubelet's cgroup reaches isolated pods' default interfaces", "cgroup", cg.Path, "level", cg.Level)
	if err := mgr.AddReadyzCheck("host-isolation", func(*http.Request) error { return nil }); err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient(), opts: opts, cgroup: cg, mount: mount, log: log, recorder: recorder, reported: map[types.UID]bool{}}
	// One key for every object: the table is the node's, whichever moved.
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: TableName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("host-isolation").Watches(&corev1.Pod{}, one).
		Watches(&corev1.Service{}, one).Watches(&corev1.Namespace{}, one).Watches(&nadv1.NetworkAttachmentDefinition{}, one).
		Complete(r)
}

// reconciler keeps the table equal to Table(the node's rules). It loads
// the whole table whenever the rules change, and again at every resync
// even when they do not: nft resolves the cgroups to their IDs when it
// loads the rules, so a kubelet restarted into a new group, or a ruleset
// flushed by someone else, is mended within a resync.
type reconciler struct {
	client client.Client
	opts   node.Options
	log    logr.Logger
	cgroup Cgroup
	// mount is the cgroup v2 hierarchy's mount point.
	mount    string
	recorder record.EventRecorder
	// reported are the running pods told they are not confined (no
	// cgroup found), so that each is told once.
	reported map[types.UID]bool
	// applied is the script last loaded, at appliedAt: a reconcile with
	// the same script loads it again only after resync.
	applied   string
	appliedAt time.Time
}

const (
	// resync re-applies the table this often without a change.
	resync = time.Minute
	// waitCgroup is how soon a reconcile looks again for the cgroup of a
	// confined pod that is still starting.
	waitCgroup = time.Second
)

func (r *reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods); err != nil { // the agent's cache holds its node's pods only
		return reconcile.Result{}, err
	}
	rules := Rules{Kubelet: r.cgroup, Isolated: Isolated(pods.Items), Closed: append([]netip.Prefix(nil), r.opts.Cluster.ServiceCIDRs...)}
	for _, s := range r.opts.Cluster.ClusterSubnets {
		rules.Closed = append(rules.Closed, s.CIDR)
	}
	var (
		waiting []string
		err     error
	)
	// The kubelet makes the pods' parent once it runs, maybe after the
	// agent started: looked up at each reconcile, once.
	parent, perr := ResolvePods(r.mount, r.opts.PodsCgroup)
	if rules.Confined, waiting, err = r.confined(ctx, pods.Items, parent, perr); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.load(rules); err != nil {
		return reconcile.Result{}, err
	}
	starting := r.report(pods.Items, waiting, parent, perr)
	if starting {
		return reconcile.Result{RequeueAfter: waitCgroup}, nil
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// load loads Table(rules), unless it is what was loaded less than resync
// ago. Should nft refuse it, the isolation of pods' addresses must not
// stay stale with it: the table is loaded without the confined pods, and
// the error (retried with backoff) says why they are not.
func (r *reconciler) load(rules Rules) error {
	script := Table(rules)
	if script == r.applied && time.Since(r.appliedAt) < resync {
		return nil
	}
	err := apply(r.opts, script)
	if err != nil && len(rules.Confined) > 0 {
		rules.Confined = nil
		script = Table(rules)
		if ferr := apply(r.opts, script); ferr != nil {
			return errors.Join(err, ferr)
		}
		r.applied, r.appliedAt = "", time.Time{}
		return fmt.Errorf("host-network pods not confined, the table without them is loaded: %w", err)
	}
	if err != nil {
		return err
	}
	r.applied, r.appliedAt = script, time.Now()
	return nil
}

// report tells, once per pod, that a running confined pod has no cgroup
// the table can match (a Warning Event on the pod, and the log): the
// kubelet's pods are not under --pods-cgroup, or its cgroup driver names
// them otherwise. It returns whether a waiting pod is still starting (its
// cgroup may come within a second); the others are looked for again at
// the resync.
func (r *reconciler) report(pods []corev1.Pod, waiting []string, parent string, perr error) (starting bool) {
	for i := range pods {
		p := &pods[i]
		if !slices.Contains(waiting, p.Namespace+"/"+p.Name) {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			starting = true
			continue
		}
		if r.reported[p.UID] {
			continue
		}
		msg := fmt.Sprintf("host-network pod not confined to its namespace's networks: no cgroup of pod %s under %s", CgroupUID(p), parent)
		if perr != nil {
			msg = "host-network pod not confined to its namespace's networks: " + perr.Error()
		}
		r.log.Info(msg, "pod", p.Namespace+"/"+p.Name)
		r.recorder.Event(p, corev1.EventTypeWarning, ReasonNotConfined, msg)
		r.reported[p.UID] = true
	}
	for uid := range r.reported {
		if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.UID == uid }) {
			delete(r.reported, uid)
		}
	}
	return starting
}

// ReasonNotConfined is the Warning Event on a running host-network pod of
// a namespace with a primary user-defined network that the table cannot
// confine (its cgroup is not where the agent looks).
const ReasonNotConfined = "HostNetworkNotConfined"

// confined reads the node's host-network pods' namespaces and every
// service, and returns Confine's groups, the pods' cgroups looked for under
// parent (none when perr says the kubelet's pods' parent is not there).
func (r *reconciler) confined(ctx context.Context, pods []corev1.Pod, parent string, perr error) ([]Confined, []string, error) {
	namespaces := map[string]Namespace{}
	lookup := func(name string) error {
		if _, done := namespaces[name]; done {
			return nil
		}
		ns := &corev1.Namespace{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			if apierrors.IsNotFound(err) {
				namespaces[name] = Namespace{}
				return nil
			}
			return err
		}
		nads, err := podnet.NamespaceNADs(ctx, r.client, name)
		if err != nil {
			return err
		}
		namespaces[name] = namespaceOf(ns, nads)
		return nil
	}
	tenants := false
	for i := range pods {
		if pods[i].Spec.HostNetwork {
			if err := lookup(pods[i].Namespace); err != nil {
				return nil, nil, err
			}
			tenants = tenants || namespaces[pods[i].Namespace].Confined
		}
	}
	if !tenants { // most nodes: no host-network pod of a tenant, no service to read
		return nil, nil, nil
	}
	var svcs corev1.ServiceList
	if err := r.client.List(ctx, &svcs); err != nil {
		return nil, nil, err
	}
	for i := range svcs.Items {
		if err := lookup(svcs.Items[i].Namespace); err != nil {
			return nil, nil, err
		}
	}
	confined, waiting := Confine(pods, svcs.Items, namespaces, r.opts.Cluster.IsInfrastructureService, func(uid string) (Cgroup, bool) {
		if perr != nil {
			return Cgroup{}, false
		}
		return PodCgroup(r.mount, parent, uid)
	})
	return confined, waiting, nil
}

// namespaceOf is what the table needs of ns, given the NADs its pods may
// use: confined when it has primary user-defined networks, or is labelled
// for one (even before its NAD exists, or while none is allocated).
func namespaceOf(ns *corev1.Namespace, nads map[string]*nadv1.NetworkAttachmentDefinition) Namespace {
	var out Namespace
	_, labelled := ns.Labels[v1.PrimaryNetworkLabel]
	all, ok := podnet.NamespacePrimaries(ns, nads, v1.PrimaryNetworkLabel)
	out.Confined = labelled || !ok
	for _, p := range all {
		if !p.IsDefault() {
			out.Networks = append(out.Networks, p.Network)
			out.Confined = true
		}
	}
	if home, ok := podnet.NamespacePrimary(ns, nads, v1.PrimaryNetworkLabel); ok && !home.None() && !home.IsDefault() {
		out.Home = home.Network
	}
	return out
}

// deleteTable is the nftables script that removes table name, whether or
// not it exists.
func deleteTable(name string) string {
	return fmt.Sprintf("table inet %s\ndelete table inet %s\n", name, name)
}

// apply loads script with nft in the node's network namespace.
func apply(opts node.Options, script string) error {
	nft := "nft"
	if opts.Host.Path != nil {
		nft = opts.Host.Path("nft")
	}
	cmd := opts.Host.Command("nft", "-f", "-")
	if opts.Host.Netns != "" {
		// nsenter (the host's), not ip netns exec: that one mounts a sysfs
		// of its own, without /sys/fs/cgroup, where nft resolves the
		// cgroup's path.
		cmd = exec.Command("nsenter", "--net=/run/netns/"+opts.Host.Netns, nft, "-f", "-")
	}
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// warnOnce says, once the agent runs, why a part of host isolation is
// off: a Warning Event on the Node, with reason event.
type warnOnce struct {
	c        client.Client
	node     string
	event    string
	reason   string
	recorder interface {
		Event(object runtime.Object, eventtype, reason, message string)
	}
}

// Start sends the Event once the Node exists (a kubelet may register it
// after the agent starts), and returns.
func (w warnOnce) Start(ctx context.Context) error {
	for {
		n := &corev1.Node{}
		if err := w.c.Get(ctx, client.ObjectKey{Name: w.node}, n); err == nil {
			w.recorder.Event(n, corev1.EventTypeWarning, w.event, w.reason)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}
