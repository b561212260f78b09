// Package pods is the node agent's part for pods: ovn-udn's CNI plugin
// served to the node's container runtime (cnihandler.go), its configuration
// installed once it serves (install.go), and a reconciler that follows the
// node's pods for it (reconciler.go). It plumbs with package cni.
package pods

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
)

// PodReconciler follows the node's pods for the CNI server: a change of a
// pod wakes the ADDs waiting for it (pokes), and a pod that is gone,
// finished or moved loses what it still has plugged (a DEL the runtime
// could not deliver). Its key is the pod's namespace/name. It never creates
// or deletes a network namespace: those are the runtime's.
type PodReconciler struct {
	Client client.Client
	// APIReader reads from the API server itself (a CNI ADD tells a pod
	// that is gone from one the cache has not seen yet).
	APIReader client.Reader
	Opts      node.Options

	mu sync.Mutex
	// plugged is what OVS says is plugged, by pod key; loaded from OVS once
	// (so a restarted agent knows what it did) and kept current after.
	plugged map[string][]cni.Plugged
	// resync carries the pod keys OVS remembers at start, which no watch
	// event names (a pod deleted while the agent was down).
	resync chan event.GenericEvent
	// pokes wake CNI ADDs waiting for a pod.
	pokes map[string]chan struct{}
}

// Setup registers the pods part: the reconciler and the CNI server.
func Setup(mgr manager.Manager, opts node.Options) error {
	r := &PodReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Opts: opts}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	return mgr.Add(&cniserver.Server{Socket: opts.CNI.SocketPath(), Handler: cniHandler{r: r}, OnListen: func() error { return install(opts.CNI) }})
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
// interfaces for, so that a pod deleted while the agent was down loses its
// ports.
func (r *PodReconciler) sweep(ctx context.Context) error {
	plugged, err := r.pluggedPorts()
	if err != nil {
		return err
	}
	for key := range plugged {
		ns, name, _ := strings.Cut(key, "/")
		select {
		case r.resync <- event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}:
		case <-ctx.Done():
			return nil
		}
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
	if r.plugged == nil {
		r.plugged = map[string][]cni.Plugged{}
	}
	if len(p) == 0 {
		delete(r.plugged, key)
	} else {
		r.plugged[key] = p
	}
}

// Reconcile wakes the ADDs waiting for the pod, and removes the interfaces
// of a pod that is gone, finished or moved.
func (r *PodReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.Namespace + "/" + req.Name
	r.poke(key)
	if here, err := r.runsHere(ctx, r.Client, req); here || err != nil {
		return reconcile.Result{}, err
	}
	all, err := r.pluggedPorts()
	if err != nil {
		return reconcile.Result{}, err
	}
	have := all[key]
	if len(have) == 0 {
		return reconcile.Result{}, nil
	}
	// The cache may lag: a pod created again under the name, on this node,
	// owns the ports now (its ADD replaced them; its DEL removes them).
	if here, err := r.runsHere(ctx, r.APIReader, req); here || err != nil {
		return reconcile.Result{}, err
	}
	// The ports only: the namespace is the runtime's to delete.
	ports := make([]string, len(have))
	for i, p := range have {
		ports[i] = p.Port
	}
	if err := r.Opts.Host.Del(ports); err != nil {
		return reconcile.Result{}, err
	}
	r.setPlugged(key, nil)
	ctrl.LoggerFrom(ctx).Info("removed the interfaces of a pod that left", "pod", key, "interfaces", len(ports))
	return reconcile.Result{}, nil
}

// runsHere reports whether the pod, as c reads it, exists on this node and
// has not finished (its interfaces are its own then).
func (r *PodReconciler) runsHere(ctx context.Context, c client.Reader, req reconcile.Request) (bool, error) {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, req.NamespacedName, pod); err != nil {
		if isGone(err) {
			return false, nil
		}
		return false, err
	}
	return pod.Spec.NodeName == r.Opts.Node && !isFinished(pod), nil
}

// isGone reports a pod that no longer exists.
func isGone(err error) bool { return apierrors.IsNotFound(err) }

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
