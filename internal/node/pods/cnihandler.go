package pods

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ktypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/metrics"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
)

// cniHandler answers the CNI plugin's calls (cniserver.Handler) with the
// pod reconciler's caches and plumbing: the container runtime creates each
// pod's network namespace and asks for its interfaces.
type cniHandler struct{ r *PodReconciler }

var _ cniserver.Handler = cniHandler{}

// podArgs are the Kubernetes keys of CNI_ARGS (the kubelet's runtime sets
// them); other keys are ignored.
type podArgs struct{ namespace, name, uid string }

func parsePodArgs(args string) podArgs {
	var a podArgs
	for _, kv := range strings.Split(args, ";") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "K8S_POD_NAMESPACE":
			a.namespace = v
		case "K8S_POD_NAME":
			a.name = v
		case "K8S_POD_UID":
			a.uid = v
		}
	}
	return a
}

func (a podArgs) key() string { return a.namespace + "/" + a.name }

// netnsName returns the name `ip netns` knows a runtime's namespace by:
// runtimes (containerd, CRI-O) create them under /run/netns.
func netnsName(path string) (string, error) {
	dir := filepath.Dir(path)
	if dir != "/run/netns" && dir != "/var/run/netns" {
		return "", types.NewError(types.ErrInvalidNetNS, fmt.Sprintf("ovn-udn: network namespace %s is not under /run/netns", path), "")
	}
	return filepath.Base(path), nil
}

// Add plumbs the pod's interfaces into the runtime's namespace once its
// annotation is complete, waits until ovn-controller has installed their
// flows, and returns them as a CNI result.
func (h cniHandler) Add(ctx context.Context, req cniserver.Request) (res types.Result, err error) {
	defer func(start time.Time) {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		metrics.CNIAddSeconds.WithLabelValues(h.r.Opts.Node, outcome).Observe(time.Since(start).Seconds())
	}(time.Now())
	a := parsePodArgs(req.Args)
	if a.namespace == "" || a.name == "" {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "ovn-udn: CNI_ARGS has no K8S_POD_NAMESPACE and K8S_POD_NAME", req.Args)
	}
	netns, err := netnsName(req.Netns)
	if err != nil {
		return nil, err
	}
	key := a.key()
	ifaces, err := h.awaitAttachments(ctx, a)
	if err != nil {
		return nil, err
	}
	hst := h.r.Opts.Host
	start := time.Now()
	if err := hst.Add(netns, key, req.ContainerID, ifaces); err != nil {
		return nil, fmt.Errorf("pod %s: plumbing its interfaces: %w", key, err)
	}
	metrics.PlumbSeconds.WithLabelValues(h.r.Opts.Node).Observe(time.Since(start).Seconds())
	ports := make([]string, len(ifaces))
	for i, f := range ifaces {
		ports[i] = f.Port
	}
	if err := h.awaitInstalled(ctx, ifaces); err != nil {
		_ = hst.Del(ports) // leave nothing half-done: the runtime retries
		return nil, fmt.Errorf("pod %s: %w", key, err)
	}
	h.r.refreshPlugged(key)
	log.FromContext(ctx).Info("plumbed pod", "pod", key, "netns", netns, "interfaces", len(ifaces), "took", time.Since(start).String())
	return result(req.Netns, ifaces), nil
}

// addPollInterval is how often an ADD looks at its pod again when no
// change of the pod woke it (a change does at once).
const addPollInterval = time.Second

// awaitAttachments waits until the pod (with the sandbox's UID) has every
// attachment it needs, and returns its interfaces. A refusal that waiting
// cannot mend (a network the pod may not use) fails at once, naming it.
func (h cniHandler) awaitAttachments(ctx context.Context, a podArgs) ([]cni.Interface, error) {
	key := a.key()
	why := "the pod is not in the agent's cache yet"
	for {
		wake := h.r.pokeChan(key)
		pod := &corev1.Pod{}
		err := h.r.Client.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.name}, pod)
		if apierrors.IsNotFound(err) && h.r.APIReader != nil {
			// Not in the cache: new (the cache lags), or deleted.
			live := &corev1.Pod{}
			if lerr := h.r.APIReader.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.name}, live); apierrors.IsNotFound(lerr) ||
				(lerr == nil && a.uid != "" && live.UID != ktypes.UID(a.uid)) {
				return nil, fmt.Errorf("pod %s (UID %s) no longer exists", key, a.uid)
			}
		}
		switch {
		case err != nil:
			why = fmt.Sprintf("reading the pod: %v", err)
		case a.uid != "" && pod.UID != ktypes.UID(a.uid):
			why = fmt.Sprintf("the agent's cache holds another pod of that name (UID %s, not %s)", pod.UID, a.uid)
		case pod.DeletionTimestamp != nil:
			return nil, fmt.Errorf("pod %s is being deleted", key)
		default:
			ifaces, complete, err := h.r.desired(ctx, pod)
			var w *podnet.Waiting
			if errors.As(err, &w) && w.Reason != podnet.WaitPrimaryNotReady {
				return nil, fmt.Errorf("pod %s: %s: %s", key, w.Reason, w.Message)
			}
			if err == nil && complete {
				return ifaces, nil
			}
			why = "its k8s.ovn.org/pod-networks annotation is not complete yet (the pod's Events say why, if anything is wrong)"
			if err != nil {
				why = err.Error()
			}
		}
		select {
		case <-ctx.Done():
			return nil, types.NewError(types.ErrTryAgainLater, fmt.Sprintf("pod %s: timed out waiting for its network: %s", key, why), "")
		case <-wake:
		case <-time.After(addPollInterval):
		}
	}
}

// awaitInstalled waits until ovn-controller has marked each interface's
// port installed (the pod's network works from then on), within ctx.
func (h cniHandler) awaitInstalled(ctx context.Context, ifaces []cni.Interface) error {
	for _, i := range ifaces {
		timeout := time.Minute
		if d, ok := ctx.Deadline(); ok {
			timeout = time.Until(d)
		}
		if err := h.r.Opts.Host.WaitInstalled(ctx, i.Port, timeout); err != nil {
			return types.NewError(types.ErrTryAgainLater, fmt.Sprintf("ovn-controller did not install port %s in time", i.Port), err.Error())
		}
	}
	return nil
}

// result is the pod's interfaces as a CNI result: each pod-side interface
// with its sandbox, its addresses, gateways and routes.
func result(sandbox string, ifaces []cni.Interface) *types100.Result {
	res := &types100.Result{CNIVersion: cniserver.ResultVersion}
	for _, i := range ifaces {
		idx := len(res.Interfaces)
		res.Interfaces = append(res.Interfaces, &types100.Interface{Name: i.Name, Mac: i.MAC, Mtu: i.MTU, Sandbox: sandbox})
		for _, p := range i.IPs {
			ip := &types100.IPConfig{Interface: types100.Int(idx), Address: ipNet(p)}
			for _, gw := range i.Gateways {
				if gw.Is4() == p.Addr().Is4() {
					ip.Gateway = net.IP(gw.AsSlice())
				}
			}
			res.IPs = append(res.IPs, ip)
		}
		for _, gw := range i.Gateways {
			dst := netip.PrefixFrom(netip.IPv4Unspecified(), 0)
			if gw.Is6() {
				dst = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
			}
			res.Routes = append(res.Routes, &types.Route{Dst: ipNet(dst), GW: net.IP(gw.AsSlice())})
		}
		for _, r := range i.Routes {
			dst, err := netip.ParsePrefix(r.Dest)
			gw, gerr := netip.ParseAddr(r.NextHop)
			if err == nil && gerr == nil {
				res.Routes = append(res.Routes, &types.Route{Dst: ipNet(dst), GW: net.IP(gw.AsSlice())})
			}
		}
	}
	return res
}

func ipNet(p netip.Prefix) net.IPNet {
	return net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// Del removes what the sandbox's ADD plumbed. It succeeds when there is
// nothing (an unknown pod, a DEL repeated).
func (h cniHandler) Del(ctx context.Context, req cniserver.Request) error {
	plugged, err := h.r.Opts.Host.Ports()
	if err != nil {
		return err
	}
	for k, ps := range plugged {
		var ports []string
		for _, p := range ps {
			if p.Sandbox != "" && p.Sandbox == req.ContainerID {
				ports = append(ports, p.Port)
			}
		}
		if len(ports) == 0 {
			continue
		}
		if err := h.r.Opts.Host.Del(ports); err != nil {
			return fmt.Errorf("pod %s: removing its interfaces: %w", k, err)
		}
		h.r.refreshPlugged(k)
		log.FromContext(ctx).Info("unplumbed pod", "pod", k, "interfaces", len(ports))
	}
	return nil
}

// Check reports whether the sandbox's interfaces are all plumbed as the
// pod's annotation says and installed.
func (h cniHandler) Check(ctx context.Context, req cniserver.Request) error {
	a := parsePodArgs(req.Args)
	pod := &corev1.Pod{}
	if err := h.r.Client.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.name}, pod); err != nil {
		return fmt.Errorf("pod %s: %w", a.key(), err)
	}
	ifaces, complete, err := h.r.desired(ctx, pod)
	if err != nil || !complete {
		return fmt.Errorf("pod %s: its attachments are not complete (%v)", a.key(), err)
	}
	plugged, err := h.r.Opts.Host.Ports()
	if err != nil {
		return err
	}
	have := map[string]cni.Plugged{}
	for _, p := range plugged[a.key()] {
		if p.Sandbox == req.ContainerID {
			have[p.Port] = p
		}
	}
	for _, i := range ifaces {
		p, ok := have[i.Port]
		switch {
		case !ok:
			return fmt.Errorf("pod %s: interface %s (port %s) is not plumbed", a.key(), i.Name, i.Port)
		case p.Fingerprint != i.Fingerprint():
			return fmt.Errorf("pod %s: interface %s is plumbed with another configuration than its annotation's", a.key(), i.Name)
		case !p.Installed:
			return fmt.Errorf("pod %s: port %s is not installed by ovn-controller", a.key(), i.Port)
		}
	}
	return nil
}

// Status is ready when the node's Open vSwitch answers (the caches are
// synced before the server listens).
func (h cniHandler) Status(ctx context.Context, _ cniserver.Request) error {
	if _, err := h.r.Opts.Host.Ports(); err != nil {
		return types.NewError(cniserver.ErrPluginNotAvailable, "ovn-udn: the node's Open vSwitch does not answer", err.Error())
	}
	return nil
}

// GC removes the interfaces of sandboxes the runtime no longer lists
// (cni.dev/valid-attachments), of those plumbed through the plugin only.
func (h cniHandler) GC(ctx context.Context, req cniserver.Request) error {
	var conf types.PluginConf
	if err := json.Unmarshal(req.Config, &conf); err != nil {
		return types.NewError(types.ErrDecodingFailure, "ovn-udn: GC configuration", err.Error())
	}
	valid := map[string]bool{}
	for _, a := range conf.ValidAttachments {
		valid[a.ContainerID] = true
	}
	plugged, err := h.r.Opts.Host.Ports()
	if err != nil {
		return err
	}
	var errs []error
	for k, ps := range plugged {
		var stale []string
		for _, p := range ps {
			if p.Sandbox != "" && !valid[p.Sandbox] {
				stale = append(stale, p.Port)
			}
		}
		if len(stale) > 0 {
			log.FromContext(ctx).Info("removing interfaces of a sandbox the runtime no longer has", "pod", k, "ports", stale)
			errs = append(errs, h.r.Opts.Host.Del(stale))
			h.r.refreshPlugged(k)
		}
	}
	return errors.Join(errs...)
}
