// Package vmmigration is the node agent's part of a VM's live migration
// (package kubevirt): once the zone records that the VM announced itself
// on this node (kubevirt.ActivatedAnnotation names it), the gateway of each
// of the VM's Layer2 networks announces itself to the VM, as seed 002 asks
// ("after live migration succeeds, OVN should send a GARP", and an
// unsolicited router advertisement for IPv6): a gratuitous ARP for each
// IPv4 gateway and a router advertisement from the gateway's link-local
// address, both from the gateway's MAC, put straight into the VM's port
// (ovs-ofctl packet-out on the integration bridge). In the transit-router
// topology the gateway's address and MAC are the same on every node, so
// the VM's neighbour cache stays right either way and the announcements
// refresh it at once; on a node still at the old topology (1.0, during a
// rolling upgrade), the gateway is the node's gateway router, with a MAC
// of its own, which the announcements teach the VM.
// Each pod is announced to once per agent run.
package vmmigration

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ovn-udn/ovn-udn/internal/contract/kubevirt"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/node"
	"github.com/ovn-udn/ovn-udn/internal/node/announce"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// Reconciler announces the gateways to the VMs activated on its node.
type Reconciler struct {
	Client client.Client
	Opts   node.Options

	mu sync.Mutex
	// sent is the pod (by UID) announced to, by pod key: one entry per
	// activated VM pod of the node, gone with the pod.
	sent map[string]types.UID
}

// Setup registers the reconciler.
func Setup(mgr ctrl.Manager, opts node.Options) error {
	r := &Reconciler{Client: mgr.GetClient(), Opts: opts}
	return ctrl.NewControllerManagedBy(mgr).Named("vm-migration").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return r.activatedHere(o.(*corev1.Pod))
		}))).
		Complete(r)
}

// activatedHere reports whether pod runs a VM that was activated on the
// agent's node.
func (r *Reconciler) activatedHere(p *corev1.Pod) bool {
	return p.Spec.NodeName == r.Opts.Node && p.Annotations[kubevirt.ActivatedAnnotation] == r.Opts.Node && len(podnet.VMs(p)) > 0
}

// Reconcile announces the gateways to an activated VM's pod, once.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			delete(r.sent, req.String())
			r.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !r.activatedHere(pod) || kubevirt.Done(pod) {
		return reconcile.Result{}, nil
	}
	r.mu.Lock()
	sent := r.sent[req.String()] == pod.UID
	r.mu.Unlock()
	if sent {
		return reconcile.Result{}, nil
	}
	nets, err := podnet.ParsePod(pod)
	if err != nil {
		return reconcile.Result{}, nil // the zone tells the pod
	}
	keys := make([]string, 0, len(nets))
	for k := range nets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// In the old Layer2 topology each node has a gateway MAC of its own.
	// A Node annotation the agent does not need here (Parse reads what it
	// can) holds nothing up; a 1.0 node without its ID does.
	self := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.Opts.Node}, self); err != nil {
		return reconcile.Result{}, err
	}
	info, perr := nodeinfo.Parse(self.Name, self.Annotations)
	if info.Layer2V1 && info.ID == 0 {
		return reconcile.Result{}, fmt.Errorf("node %s is at the old Layer2 topology without its node ID: %v", self.Name, perr)
	}
	n := 0
	for _, k := range keys {
		a := nets[k]
		port := podnet.PortNameOf(k, pod, a)
		if k == podnet.DefaultKey || len(a.Gateways) == 0 || port == podnet.PortName(k, pod.Namespace, pod.Name) {
			continue // not the VM's shared port on a Layer2 network with a gateway
		}
		var gatewayMAC string
		if info.Layer2V1 {
			var err error
			if gatewayMAC, err = r.layer2V1GatewayMAC(ctx, k, info.ID); err != nil {
				return reconcile.Result{}, err
			}
			if gatewayMAC == "" {
				// The transit router's MAC would be wrong here: better
				// nothing than a neighbour entry nobody answers.
				ctrl.LoggerFrom(ctx).Info("no gateway announcement: the network's definition is gone or not allocated", "pod", req.String(), "attachment", k)
				continue
			}
		}
		frames, err := Frames(a, gatewayMAC)
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("pod %s, attachment %s: %w", req, k, err)
		}
		if err := r.send(cni.HostVeth(port), frames); err != nil {
			return reconcile.Result{}, err
		}
		n += len(frames)
	}
	r.mu.Lock()
	if r.sent == nil {
		r.sent = map[string]types.UID{}
	}
	r.sent[req.String()] = pod.UID
	r.mu.Unlock()
	if n > 0 {
		ctrl.LoggerFrom(ctx).Info("announced the gateways to a migrated VM", "pod", req.String(), "frames", n)
	}
	return reconcile.Result{}, nil
}

// layer2V1GatewayMAC is the gateway MAC of node id's pods on the network
// of attachment key (namespace/NAD) in the old Layer2 topology; "" when
// that is not a Layer2 primary network.
func (r *Reconciler) layer2V1GatewayMAC(ctx context.Context, key string, id int) (string, error) {
	ns, name, _ := strings.Cut(key, "/")
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	// Only a Layer2 primary network's gateway is announced: any other
	// attachment (its NAD not parsing included) is passed over, not
	// retried, so that it holds up none of the pod's announcements.
	if c, err := netconf.Parse(nad); err != nil || c == nil || !c.IsPrimary() || c.Topology != netconf.TopologyLayer2 {
		return "", nil
	}
	n, ok, err := topology.FromNAD(nad, r.Opts.Cluster)
	if err != nil || !ok {
		return "", err
	}
	return n.Layer2V1GatewayMAC(id), nil
}

// Frames are the announcements of an attachment's gateways to its
// workload: a gratuitous ARP per IPv4 gateway, a router advertisement for
// IPv6, all from the gateway MAC: gatewayMAC when given (the node's
// gateway router's, in the old Layer2 topology), else the transit router
// port's MAC derived from the gateways; none for an attachment without
// gateways.
func Frames(a podnet.Attachment, gatewayMAC string) ([][]byte, error) {
	var gws []netip.Prefix
	for _, g := range a.Gateways {
		addr, err := netip.ParseAddr(g)
		if err != nil {
			return nil, fmt.Errorf("gateway %q is not an address", g)
		}
		gws = append(gws, netip.PrefixFrom(addr, addr.BitLen()))
	}
	if len(gws) == 0 {
		return nil, nil
	}
	if gatewayMAC == "" {
		gatewayMAC = topology.PortMAC(gws)
	}
	gwMAC, err := net.ParseMAC(gatewayMAC)
	if err != nil {
		return nil, err
	}
	vmMAC, err := net.ParseMAC(a.MAC)
	if err != nil {
		return nil, fmt.Errorf("MAC %q: %w", a.MAC, err)
	}
	var out [][]byte
	v6 := false
	for _, g := range gws {
		if g.Addr().Is4() {
			out = append(out, announce.GARP(gwMAC, g.Addr()))
		} else {
			v6 = true
		}
	}
	if v6 {
		out = append(out, announce.RouterAdvertisement(gwMAC, announce.LinkLocal(gwMAC), vmMAC))
	}
	return out, nil
}

// send puts frames into the OVS interface veth (the VM pod's end on the
// integration bridge) with packet-outs: they reach the VM only.
func (r *Reconciler) send(veth string, frames [][]byte) error {
	h := r.Opts.Host
	out, err := h.Command("ovs-vsctl", "--db="+h.OVSDB, "--timeout=10", "get", "Interface", veth, "ofport").Output()
	if err != nil {
		return fmt.Errorf("the OpenFlow port of %s: %w", veth, err)
	}
	ofport := strings.TrimSpace(string(out))
	mgmt := "unix:" + filepath.Join(filepath.Dir(strings.TrimPrefix(h.OVSDB, "unix:")), h.Bridge+".mgmt")
	for _, f := range frames {
		action := fmt.Sprintf("in_port=controller,packet=%s,actions=output:%s", hex.EncodeToString(f), ofport)
		if b, err := h.Command("ovs-ofctl", "-O", "OpenFlow15", "packet-out", mgmt, action).CombinedOutput(); err != nil {
			return fmt.Errorf("packet-out to %s: %v: %s", veth, err, strings.TrimSpace(string(b)))
		}
	}
	return nil
}
