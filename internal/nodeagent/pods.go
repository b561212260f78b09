package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/cni"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/podnet"
	"github.com/ovn-udn/ovn-udn/internal/workload"
)

// Event reasons on pods.
const (
	ReasonPlumbingFailed = "NetworkPlumbingFailed"
	ReasonPlumbed        = "NetworkPlumbed"
	ReasonWorkloadFailed = "ContainerStartFailed"
)

// PodReconciler keeps each pod of the node plumbed as its annotation says, and
// nothing else plumbed. Its key is the pod's namespace/name.
type PodReconciler struct {
	Client client.Client
	// APIReader reads from the API server itself (a CNI ADD tells a pod
	// that is gone from one the cache has not seen yet).
	APIReader client.Reader
	Opts      Options
	Recorder  record.EventRecorder

	mu sync.Mutex
	// plugged is what OVS says is plugged, by pod key; loaded from OVS once
	// (so a restarted agent knows what it did) and kept current after.
	plugged map[string][]cni.Plugged
	// resync carries pod keys to reconcile that no watch event names: those
	// OVS remembers at start, and pods whose ports became installed.
	resync chan event.GenericEvent
	// waiting marks pods whose ports are being waited for; ctx is the
	// manager's, which ends those waits.
	waiting map[string]bool
	ctx     context.Context
	// workloads runs pods' containers (Options.WorkloadDir); nil: none.
	workloads *workload.Runner
	// apiProxies serve the API server inside workload pods; nil: none.
	apiProxies *apiProxies
	// pokes wake CNI ADDs waiting for a pod (cnimode.go).
	pokes map[string]chan struct{}
}

// SetupWithManager registers the controller and the startup sweep.
func (r *PodReconciler) SetupWithManager(mgr manager.Manager) error {
	r.resync = make(chan event.GenericEvent, 1024)
	metrics.Register()
	metrics.MustRegisterOnce(metrics.PlumbedPods(r.Opts.Node, func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.plugged)
	}))
	if r.workloads != nil {
		r.workloads.OnExit = func(key string) {
			ns, name, _ := strings.Cut(key, "/")
			r.mu.Lock()
			ctx := r.ctx
			r.mu.Unlock()
			if ctx == nil {
				ctx = context.Background()
			}
			select {
			case r.resync <- event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}:
			case <-ctx.Done():
			}
		}
	}
	if err := mgr.Add(manager.RunnableFunc(r.sweep)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("node-pods").
		For(&corev1.Pod{}).
		WatchesRawSource(source.Channel(r.resync, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Opts.Workers}).
		Complete(kubeobj.RetryConflicts(reconcile.Reconciler(r)))
}

// sweep runs once the cache has synced: it queues every pod OVS has
// interfaces for (a pod deleted while the agent was down gets unplumbed) and
// deletes this node's pod namespaces that no pod owns (left by a crash between
// creating a namespace and plugging it).
func (r *PodReconciler) sweep(ctx context.Context) error {
	r.mu.Lock()
	r.ctx = ctx
	r.mu.Unlock()
	log := ctrl.LoggerFrom(ctx).WithName("sweep")
	plugged, err := r.pluggedPorts()
	if err != nil {
		return err
	}
	for key := range plugged {
		ns, name, _ := strings.Cut(key, "/")
		r.resync <- event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
	}
	if r.Opts.NetnsPrefix == "" {
		return nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods); err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, p := range pods.Items {
		owned[NetnsName(r.Opts.NetnsPrefix, p.UID)] = true
	}
	for _, ps := range plugged {
		for _, p := range ps {
			owned[p.Netns] = true
		}
	}
	have, err := r.Opts.Host.Namespaces(r.Opts.NetnsPrefix)
	if err != nil {
		return err
	}
	for _, n := range have {
		if !owned[n] {
			log.Info("deleting an orphaned pod network namespace", "netns", n)
			if err := r.Opts.Host.Del(n, nil); err != nil {
				log.Error(err, "deleting orphaned netns", "netns", n)
			}
		}
	}
	<-ctx.Done()
	// The agent stops: so do the pods' processes (a new agent starts them
	// again), as they would die with it anyway.
	if r.workloads != nil {
		r.workloads.StopAll()
	}
	return nil
}

// pluggedPorts returns what is plugged, reading OVS the first time.
func (r *PodReconciler) pluggedPorts() (map[string][]cni.Plugged, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.plugged == nil {
		p, err := r.Opts.Host.Ports()
		if err != nil {
			return nil, fmt.Errorf("listing plugged pod interfaces: %w", err)
		}
		r.plugged = p
	}
	out := make(map[string][]cni.Plugged, len(r.plugged))
	for k, v := range r.plugged {
		out[k] = slices.Clone(v)
	}
	return out, nil
}

func (r *PodReconciler) setPlugged(key string, p []cni.Plugged) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) == 0 {
		delete(r.plugged, key)
	} else {
		r.plugged[key] = p
	}
}

// Reconcile plumbs, re-plumbs or unplumbs one pod.
func (r *PodReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.Namespace + "/" + req.Name
	all, err := r.pluggedPorts()
	if err != nil {
		return reconcile.Result{}, err
	}
	have := all[key]
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if !isGone(err) {
			return reconcile.Result{}, err
		}
		if r.Opts.CNI.enabled() {
			return r.reconcileCNI(ctx, key, nil, have)
		}
		return reconcile.Result{}, r.unplumb(key, have)
	}
	if r.Opts.CNI.enabled() {
		return r.reconcileCNI(ctx, key, pod, have)
	}
	if pod.Spec.NodeName != r.Opts.Node || pod.Spec.HostNetwork || isFinished(pod) || pod.DeletionTimestamp != nil {
		if err := r.unplumb(key, have); err != nil {
			return reconcile.Result{}, err
		}
		if pod.Spec.NodeName == r.Opts.Node {
			// A namespace may exist with nothing plugged in it (plumbing
			// that failed half-way): it goes too.
			if err := r.removeNetns(NetnsName(r.Opts.NetnsPrefix, pod.UID)); err != nil {
				return reconcile.Result{}, err
			}
		}
		if pod.DeletionTimestamp != nil && pod.Spec.NodeName == r.Opts.Node {
			// No kubelet confirms the containers are gone: the agent does,
			// once the pod's network is.
			return reconcile.Result{}, r.forceDelete(ctx, pod)
		}
		if pod.Spec.HostNetwork && pod.Spec.NodeName == r.Opts.Node {
			return reconcile.Result{}, r.markReady(ctx, pod, nil)
		}
		return reconcile.Result{}, nil
	}
	ifaces, complete, err := r.desired(ctx, pod)
	if err != nil || !complete {
		// Not attached yet (or cannot be): the zone controller and the
		// cluster-manager say why in Events; an annotation change requeues.
		return reconcile.Result{}, nil
	}
	netns := NetnsName(r.Opts.NetnsPrefix, pod.UID)
	start := time.Now()
	changed, err := r.plumb(key, netns, have, ifaces)
	if err != nil {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, ReasonPlumbingFailed, "plumbing the pod's interfaces: %v", err)
		return reconcile.Result{}, err
	}
	if changed > 0 {
		ctrl.LoggerFrom(ctx).Info("plumbed pod", "interfaces", changed, "netns", netns, "took", time.Since(start).String())
		metrics.PlumbSeconds.WithLabelValues(r.Opts.Node).Observe(time.Since(start).Seconds())
	}
	if !PodReady(pod) {
		// Ready means the network works: wait until ovn-controller has
		// installed every port's flows, as a CNI plugin does before it returns.
		installed, err := r.installed(key, len(ifaces))
		if err != nil {
			return reconcile.Result{}, err
		}
		if !installed {
			r.awaitInstalled(pod, ifaces)
			return reconcile.Result{}, nil
		}
	}
	var requeue time.Duration
	if r.workloads != nil {
		// The containers' programs, as a container runtime would run them.
		procs := r.Opts.Workloads.Resolve(pod)
		if len(procs) > 0 && r.apiProxies != nil {
			// The proxy outlives this reconcile: it runs under the manager's context.
			r.mu.Lock()
			life := r.ctx
			r.mu.Unlock()
			if life == nil {
				life = ctx
			}
			if err := r.apiProxies.ensure(life, key, netns); err != nil {
				r.Recorder.Eventf(pod, corev1.EventTypeWarning, ReasonWorkloadFailed, "%v", err)
				return reconcile.Result{}, err
			}
		}
		retry, err := r.workloads.Ensure(key, netns, procs)
		if err != nil {
			r.Recorder.Eventf(pod, corev1.EventTypeWarning, ReasonWorkloadFailed, "running the pod's containers: %v", err)
			return reconcile.Result{}, err
		}
		requeue = retry
	}
	var ips []netip.Addr
	for _, i := range ifaces {
		if i.Name == cni.DefaultInterface {
			for _, p := range i.IPs {
				ips = append(ips, p.Addr())
			}
		}
	}
	wasReady := PodReady(pod)
	if err := r.markReady(ctx, pod, ips); err != nil {
		return reconcile.Result{}, err
	}
	if !wasReady {
		ctrl.LoggerFrom(ctx).Info("pod ready", "sinceCreated", time.Since(pod.CreationTimestamp.Time).String())
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// installTimeout bounds one wait for ovn-controller to install a pod's
// ports; the pod is waited for again after it.
const installTimeout = 2 * time.Minute

// awaitInstalled waits, off the worker, until ovn-controller has marked each
// of the pod's ports installed (ovs-vsctl wait-until: no polling), then
// queues the pod again. One wait per pod at a time.
func (r *PodReconciler) awaitInstalled(pod *corev1.Pod, ifaces []cni.Interface) {
	key := pod.Namespace + "/" + pod.Name
	r.mu.Lock()
	if r.waiting == nil {
		r.waiting = map[string]bool{}
	}
	if r.waiting[key] {
		r.mu.Unlock()
		return
	}
	r.waiting[key] = true
	ctx := r.ctx
	r.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.waiting, key)
			r.mu.Unlock()
			select {
			case r.resync <- event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}}:
			case <-ctx.Done():
			}
		}()
		for _, i := range ifaces {
			if err := r.Opts.Host.WaitInstalled(ctx, i.Port, installTimeout); err != nil {
				return
			}
		}
	}()
}

// installed reports whether ovn-controller has installed the flows of all n
// plumbed ports of a pod.
func (r *PodReconciler) installed(key string, n int) (bool, error) {
	plugged, err := r.Opts.Host.Ports()
	if err != nil {
		return false, err
	}
	ps := plugged[key]
	if len(ps) < n {
		return false, nil
	}
	for _, p := range ps {
		if !p.Installed {
			return false, nil
		}
	}
	return true, nil
}

// PodReady reports whether a pod has the Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// desired returns the pod's interfaces, and whether its annotation holds
// every attachment the pod needs (the zone controller and cluster-manager
// write it in parts).
func (r *PodReconciler) desired(ctx context.Context, pod *corev1.Pod) ([]cni.Interface, bool, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return nil, false, err
	}
	nads, err := podnet.NADsFor(ctx, r.Client, pod)
	if err != nil {
		return nil, false, err
	}
	// The requests first: a refusal (a *podnet.Waiting) shows before the
	// annotation, which a refused pod never gets.
	reqs, err := podnet.Requests(pod, ns, nads, v1.PrimaryNetworkLabel)
	if err != nil {
		return nil, false, err
	}
	nets, err := podnet.ParsePod(pod)
	if err != nil || len(nets) == 0 {
		return nil, false, err
	}
	for _, q := range reqs {
		a, ok := nets[q.Key]
		if !ok || a.MAC == "" {
			return nil, false, nil
		}
		if (q.Conf == nil || q.Conf.Subnets != "") && len(a.IPs) == 0 {
			return nil, false, nil
		}
	}
	ifaces, err := cni.Interfaces(pod, nets, func(key string) int { return r.mtu(nads, key) })
	return ifaces, err == nil, err
}

// mtu is an attachment's MTU: its network's, else the cluster default.
func (r *PodReconciler) mtu(nads map[string]*nadv1.NetworkAttachmentDefinition, key string) int {
	if nad, ok := nads[key]; ok {
		if c, err := netconf.Parse(nad); err == nil && c != nil && c.MTU > 0 {
			return c.MTU
		}
	}
	if r.Opts.Cluster.MTU > 0 {
		return r.Opts.Cluster.MTU
	}
	return 1400
}

// plumb makes the node's plumbing of a pod equal to ifaces in netns:
// interfaces whose configuration changed are re-created, stale ones removed,
// and a pod whose namespace changed (re-created pod) is plumbed afresh.
func (r *PodReconciler) plumb(key, netns string, have []cni.Plugged, ifaces []cni.Interface) (int, error) {
	h := r.Opts.Host
	current := map[string]cni.Plugged{}
	for _, p := range have {
		if p.Netns != netns {
			// Another incarnation of the pod: drop all of it.
			if err := r.unplumb(key, have); err != nil {
				return 0, err
			}
			current = map[string]cni.Plugged{}
			break
		}
		current[p.Port] = p
	}
	var add []cni.Interface
	want := map[string]bool{}
	for _, i := range ifaces {
		want[i.Port] = true
		if p, ok := current[i.Port]; !ok || p.Fingerprint != i.Fingerprint() {
			add = append(add, i)
		}
	}
	var stale []string
	for port := range current {
		if !want[port] {
			stale = append(stale, port)
		}
	}
	if len(add) == 0 && len(stale) == 0 {
		return 0, nil
	}
	if len(stale) > 0 {
		if err := h.Del("", stale); err != nil {
			return 0, err
		}
	}
	err := h.Add(netns, key, add)
	plugged, lerr := h.Ports()
	if lerr == nil {
		r.setPlugged(key, plugged[key])
		if err != nil && len(plugged[key]) == 0 {
			// Nothing of the pod is plugged: leave no namespace behind, nor
			// anything running in it (plumbing it again starts afresh).
			r.stopWorkload(key)
			err = errors.Join(err, r.removeNetns(netns))
		}
	}
	return len(add) + len(stale), errors.Join(err, lerr)
}

// stopWorkload stops a pod's processes and API server proxy, if any.
func (r *PodReconciler) stopWorkload(key string) {
	if r.workloads != nil {
		r.workloads.Stop(key)
	}
	if r.apiProxies != nil {
		r.apiProxies.stop(key)
	}
}

// removeNetns deletes a pod network namespace if it exists (a look at
// /run/netns, where `ip netns` keeps them: no process for the common case of
// a pod that has none).
func (r *PodReconciler) removeNetns(name string) error {
	if r.Opts.NetnsPrefix == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join("/run/netns", name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return r.Opts.Host.Del(name, nil)
}

// unplumb stops a pod's processes and removes its interfaces and network
// namespace.
func (r *PodReconciler) unplumb(key string, have []cni.Plugged) error {
	r.stopWorkload(key)
	if len(have) == 0 {
		return nil
	}
	var ports []string
	spaces := map[string]bool{}
	for _, p := range have {
		ports = append(ports, p.Port)
		spaces[p.Netns] = true
	}
	if err := r.Opts.Host.Del("", ports); err != nil {
		return err
	}
	for n := range spaces {
		if n == "" {
			continue
		}
		if err := r.Opts.Host.Del(n, nil); err != nil {
			return err
		}
	}
	r.setPlugged(key, nil)
	return nil
}

// forceDelete finishes a pod's deletion, as a kubelet does once the pod's
// containers are gone.
func (r *PodReconciler) forceDelete(ctx context.Context, pod *corev1.Pod) error {
	err := r.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if err != nil && !isGone(err) {
		return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// markReady reports the pod Running and Ready with ips as its addresses,
// unless its status says so already.
func (r *PodReconciler) markReady(ctx context.Context, pod *corev1.Pod, ips []netip.Addr) error {
	hostIP := ""
	if len(r.Opts.Info.PrimaryIPs) > 0 {
		hostIP = r.Opts.Info.PrimaryIPs[0].Addr().String()
	}
	if pod.Spec.HostNetwork && hostIP != "" {
		ips = []netip.Addr{netip.MustParseAddr(hostIP)}
	}
	want := ReadyStatus(pod, ips, hostIP, metav1.Now())
	if StatusEqual(pod.Status, want) {
		return nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Status = want
	if err := r.Client.Status().Patch(ctx, pod, patch); err != nil && !isGone(err) {
		return fmt.Errorf("reporting pod %s/%s ready: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}
