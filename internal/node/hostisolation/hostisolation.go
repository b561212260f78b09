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
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// TableName is the nftables table (family inet) the part owns.
const TableName = "ovn_udn_host_isolation"

// Cgroup is where nftables finds the kubelet's cgroup: Path relative to
// /sys/fs/cgroup (nftables resolves it there) and Level, its depth in the
// cgroup v2 hierarchy.
type Cgroup struct {
	Path  string
	Level int
}

// Resolve finds the kubelet's cgroup (a path in the cgroup v2 hierarchy)
// given the v2 hierarchy's mount point (ResolveMount finds it); an error
// says why nftables cannot match it.
func Resolve(mount, kubelet string) (Cgroup, error) {
	rel := strings.Trim(filepath.Clean("/"+kubelet), "/")
	if kubelet == "" || rel == "" {
		return Cgroup{}, fmt.Errorf("no kubelet cgroup given (--kubelet-cgroup)")
	}
	const base = "/sys/fs/cgroup"
	var prefix string
	switch {
	case mount == base:
	case strings.HasPrefix(mount, base+"/"):
		prefix = strings.TrimPrefix(mount, base+"/") + "/"
	case mount == "":
		return Cgroup{}, fmt.Errorf("no cgroup v2 hierarchy is mounted")
	default:
		return Cgroup{}, fmt.Errorf("the cgroup v2 hierarchy is mounted at %s, outside %s where nftables looks", mount, base)
	}
	if st, err := os.Stat(filepath.Join(mount, rel)); err != nil || !st.IsDir() {
		return Cgroup{}, fmt.Errorf("the kubelet's cgroup %s is not in the cgroup v2 hierarchy (%s)", rel, mount)
	}
	return Cgroup{Path: prefix + rel, Level: strings.Count(rel, "/") + 1}, nil
}

// ResolveMount returns the cgroup v2 hierarchy's mount point, from
// /proc/self/mountinfo ("" when none).
func ResolveMount() string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// ID parent major:minor root mountpoint options ... - fstype source options
		f := strings.Fields(sc.Text())
		for i, x := range f {
			// Only the whole hierarchy (root "/"): under a cgroup
			// namespace or a bind of a subtree, levels would count from
			// elsewhere than the kernel counts them.
			if x == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && len(f) > 4 && f[3] == "/" {
				return f[4]
			}
		}
	}
	return ""
}

// Table is the nftables script that (re)creates the table for the
// isolated pods' default addresses, in one transaction: the host's new
// connections to them leave only from the kubelet's cgroup.
func Table(cg Cgroup, addrs []netip.Addr) string {
	var v4, v6 []string
	for _, a := range addrs {
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.String())
		}
	}
	slices.Sort(v4)
	slices.Sort(v6)
	set := func(name, typ string, elems []string) string {
		s := fmt.Sprintf("\tset %s {\n\t\ttype %s\n", name, typ)
		if len(elems) > 0 {
			s += "\t\telements = { " + strings.Join(elems, ", ") + " }\n"
		}
		return s + "\t}\n"
	}
	var b strings.Builder
	// Declaring then deleting the table makes the script work whether or
	// not it exists; nft applies the file as one transaction.
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", TableName, TableName, TableName)
	b.WriteString(set("isolated4", "ipv4_addr", v4))
	b.WriteString(set("isolated6", "ipv6_addr", v6))
	b.WriteString("\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n")
	b.WriteString("\t\tct state established,related accept\n")
	// Neighbour discovery comes from the kernel, not from a socket of the
	// kubelet's: without it the node loses the pods' IPv6 neighbours.
	b.WriteString("\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept\n")
	for _, fam := range []string{"ip daddr @isolated4", "ip6 daddr @isolated6"} {
		fmt.Fprintf(&b, "\t\t%s socket cgroupv2 level %d %q accept\n", fam, cg.Level, cg.Path)
		fmt.Fprintf(&b, "\t\t%s drop\n", fam)
	}
	b.WriteString("\t}\n")
	// What the host forwards (its containers, VMs) never comes from the
	// kubelet: new connections toward the pods are dropped.
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n")
	b.WriteString("\t\tct state new ip daddr @isolated4 drop\n\t\tct state new ip6 daddr @isolated6 drop\n\t}\n}\n")
	return b.String()
}

// Isolated returns the default-network addresses of the pods whose
// default interface only the kubelet may reach: running, not on the host's
// network, with the default attachment locked to infrastructure (their
// namespace has a primary user-defined network).
func Isolated(pods []corev1.Pod) []netip.Addr {
	var out []netip.Addr
	for i := range pods {
		p := &pods[i]
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		nets, err := podnet.ParsePod(p)
		if err != nil {
			continue
		}
		a, ok := nets[podnet.DefaultKey]
		if !ok || a.Role != podnet.RoleInfrastructure {
			continue
		}
		for _, s := range a.IPs {
			if pfx, err := netip.ParsePrefix(s); err == nil {
				out = append(out, pfx.Addr())
			}
		}
	}
	return out
}

// Setup registers the part: with a kubelet cgroup nftables can match, a
// reconciler keeping the table; without (no cgroup, no nft, a kernel or
// nft without cgroup v2 socket matching: a table with no address is
// loaded once to find out), the reason at start, in a Warning Event on
// the Node and in /readyz's details (a passing check named
// host-isolation-off), and no table of ovn-udn's left on the node.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	log := ctrl.Log.WithName("host-isolation").WithValues("node", opts.Node)
	cg, err := Resolve(ResolveMount(), opts.KubeletCgroup)
	if err == nil {
		err = apply(opts, Table(cg, nil))
	}
	if err != nil {
		reason := fmt.Sprintf("host isolation is off, every host process reaches the default interface of pods with a primary user-defined network: %v", err)
		log.Info(reason)
		_ = apply(opts, fmt.Sprintf("table inet %s\ndelete table inet %s\n", TableName, TableName))
		if err := mgr.AddReadyzCheck("host-isolation-off", func(*http.Request) error { return nil }); err != nil {
			return err
		}
		return mgr.Add(warnOnce{c: mgr.GetClient(), node: opts.Node, reason: reason, recorder: mgr.GetEventRecorderFor("ovn-udn-node")})
	}
	log.Info("host isolation: only the kubelet's cgroup reaches isolated pods' default interfaces", "cgroup", cg.Path, "level", cg.Level)
	if err := mgr.AddReadyzCheck("host-isolation", func(*http.Request) error { return nil }); err != nil {
		return err
	}
	r := &reconciler{client: mgr.GetClient(), opts: opts, cgroup: cg}
	// One key for every pod: the table is the node's, whichever pod moved.
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: TableName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).Named("host-isolation").Watches(&corev1.Pod{}, one).Complete(r)
}

// reconciler keeps the table equal to Table(the node's isolated pods). It
// loads the whole table at every reconcile, resync included: nft resolves
// the kubelet's cgroup to its ID when it loads the rule, so a kubelet
// restarted into a new group, or a ruleset flushed by someone else, is
// mended within a resync.
type reconciler struct {
	client client.Client
	opts   node.Options
	cgroup Cgroup
}

// resync re-applies the table this often without a change.
const resync = time.Minute

func (r *reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods); err != nil { // the agent's cache holds its node's pods only
		return reconcile.Result{}, err
	}
	if err := apply(r.opts, Table(r.cgroup, Isolated(pods.Items))); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: resync}, nil
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

// warnOnce says, once the agent runs, why host isolation is off: a
// Warning Event on the Node.
type warnOnce struct {
	c        client.Client
	node     string
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
			w.recorder.Event(n, corev1.EventTypeWarning, "HostIsolationOff", w.reason)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}
