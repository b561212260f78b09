package explain

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// source resolves the source pod's attachment: the one asked for, else the
// one the pod's routes send dst through (an address target), else its
// primary one.
func (e *Explainer) source(ctx context.Context, ref, key string, dst netip.Addr) (Endpoint, error) {
	pod, nets, err := e.pod(ctx, ref)
	if err != nil {
		return Endpoint{}, err
	}
	if key == "" {
		key = routeAttachment(nets, dst)
		if key == "" {
			return Endpoint{}, fmt.Errorf("pod %s has no primary attachment (has %s)", ref, strings.Join(slices.Sorted(maps.Keys(nets)), ", "))
		}
	}
	a, ok := nets[key]
	if !ok {
		return Endpoint{}, fmt.Errorf("pod %s has no attachment %q (has %s)", ref, key, strings.Join(slices.Sorted(maps.Keys(nets)), ", "))
	}
	return e.endpoint(ctx, pod, key, a, netip.Addr{})
}

// routeAttachment picks the attachment a pod sends dst through, as its
// routing table would: the one whose on-link prefix or route covers dst
// most specifically; the primary one when none does (its default route),
// and for an invalid dst.
func routeAttachment(nets podnet.Networks, dst netip.Addr) string {
	best, bits := "", -1
	for _, k := range slices.Sorted(maps.Keys(nets)) {
		a := nets[k]
		if a.Role == podnet.RolePrimary && best == "" {
			best = k
		}
		if !dst.IsValid() {
			continue
		}
		var covering []netip.Prefix
		prefixes, _ := a.Prefixes()
		for _, p := range prefixes {
			covering = append(covering, p.Masked())
		}
		for _, r := range a.Routes {
			if p, err := netip.ParsePrefix(r.Dest); err == nil {
				covering = append(covering, p)
			}
		}
		for _, p := range covering {
			if p.Contains(dst) && p.Bits() > bits {
				best, bits = k, p.Bits()
			}
		}
	}
	return best
}

// destination resolves the target: an address as it is; a pod by its
// attachment on the source's network if it has one, else its primary one,
// at an address of the source's family.
func (e *Explainer) destination(ctx context.Context, t target, src Endpoint) (Endpoint, error) {
	if t.pod == "" {
		if t.addr.Is4() != src.Addr.Is4() {
			return Endpoint{}, fmt.Errorf("destination %s is not of the family of the source's address %s", t.addr, src.Addr)
		}
		return Endpoint{Addr: t.addr}, nil
	}
	pod, nets, err := e.pod(ctx, t.pod)
	if err != nil {
		return Endpoint{}, err
	}
	z, err := e.zone(ctx, pod.Spec.NodeName)
	if err != nil {
		return Endpoint{}, err
	}
	var same, primary string
	for _, k := range slices.Sorted(maps.Keys(nets)) {
		p, _, err := z.port(ctx, podnet.PortNameOf(k, pod, nets[k]))
		if err != nil {
			return Endpoint{}, err
		}
		if p != nil && networkOf(p) == src.Network {
			same = k
		}
		if nets[k].Role == podnet.RolePrimary {
			primary = k
		}
	}
	key := same
	if key == "" {
		key = primary
	}
	if key == "" {
		return Endpoint{}, fmt.Errorf("pod %s has no attachment on network %s and no primary one", t.pod, src.Network)
	}
	return e.endpoint(ctx, pod, key, nets[key], src.Addr)
}

// pod reads a pod and its attachments.
func (e *Explainer) pod(ctx context.Context, ref string) (*corev1.Pod, podnet.Networks, error) {
	ns, name, err := splitRef(ref)
	if err != nil {
		return nil, nil, err
	}
	pod := &corev1.Pod{}
	if err := e.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return nil, nil, fmt.Errorf("reading pod %s: %w", ref, err)
	}
	if pod.Spec.NodeName == "" {
		return nil, nil, fmt.Errorf("pod %s is not scheduled to a node yet", ref)
	}
	nets, err := podnet.Parse(pod.Annotations)
	if err != nil {
		return nil, nil, fmt.Errorf("pod %s: %w", ref, err)
	}
	if len(nets) == 0 {
		return nil, nil, fmt.Errorf("pod %s has no %s annotation yet: it is not wired", ref, podnet.Annotation)
	}
	return pod, nets, nil
}

// endpoint resolves one attachment of a pod, at an address of like's family
// (any when like is invalid).
func (e *Explainer) endpoint(ctx context.Context, pod *corev1.Pod, key string, a podnet.Attachment, like netip.Addr) (Endpoint, error) {
	ref := pod.Namespace + "/" + pod.Name
	prefixes, err := a.Prefixes()
	if err != nil {
		return Endpoint{}, fmt.Errorf("pod %s attachment %s: %w", ref, key, err)
	}
	var addr netip.Prefix
	for _, p := range prefixes {
		if !like.IsValid() || p.Addr().Is4() == like.Is4() {
			addr = p
			break
		}
	}
	if !addr.IsValid() {
		return Endpoint{}, fmt.Errorf("pod %s attachment %s has no address of the family of %s", ref, key, like)
	}
	ep := Endpoint{Pod: ref, Node: pod.Spec.NodeName, Port: podnet.PortNameOf(key, pod, a), MAC: a.MAC, Addr: addr.Addr(), onLink: addr.Masked()}
	ep.gateway = gatewayOf(a, addr)
	z, err := e.zone(ctx, ep.Node)
	if err != nil {
		return Endpoint{}, err
	}
	p, sw, err := z.port(ctx, ep.Port)
	if err != nil {
		return Endpoint{}, err
	}
	if p == nil || sw == nil {
		return Endpoint{}, fmt.Errorf("pod %s: no port %s on a switch in the zone of node %s (not wired yet?)", ref, ep.Port, ep.Node)
	}
	ep.Network, ep.sw = networkOf(p), sw
	return ep, nil
}

// gatewayOf returns an attachment's gateway for addr's family: its gateway
// address, else the next hop of its routes, else the on-link prefix's first
// address (the default network's convention).
func gatewayOf(a podnet.Attachment, addr netip.Prefix) netip.Addr {
	for _, s := range a.Gateways {
		if g, err := netip.ParseAddr(s); err == nil && g.Is4() == addr.Addr().Is4() {
			return g
		}
	}
	for _, r := range a.Routes {
		if g, err := netip.ParseAddr(r.NextHop); err == nil && addr.Contains(g) {
			return g
		}
	}
	g, _ := allocator.NthAddress(addr.Masked(), 1)
	return g
}

func networkOf(p *nbdb.LogicalSwitchPort) string {
	if n := p.ExternalIDs[topology.NetworkKey]; n != "" {
		return n
	}
	return nodeinfo.DefaultNetwork
}

// nextHopMAC is the destination MAC the source pod would use: the port of
// the destination's address on its own switch when on-link, else its
// gateway's router port.
func (e *Explainer) nextHopMAC(ctx context.Context, z *zoneReader, sw *nbdb.LogicalSwitch, src Endpoint, dst netip.Addr) (string, error) {
	ports, err := z.switchPorts(ctx, sw)
	if err != nil {
		return "", err
	}
	if src.onLink.Contains(dst) {
		for _, p := range ports {
			for _, a := range p.Addresses {
				f := strings.Fields(a)
				for _, ip := range f[min(1, len(f)):] {
					if ip == dst.String() {
						return f[0], nil
					}
				}
			}
		}
	}
	for _, p := range ports {
		if p.Type != "router" {
			continue
		}
		rp, err := z.routerPort(ctx, p.Options["router-port"])
		if err != nil {
			return "", err
		}
		if rp == nil {
			continue
		}
		for _, n := range rp.Networks {
			if pfx, err := netip.ParsePrefix(n); err == nil && pfx.Addr() == src.gateway {
				return rp.MAC, nil
			}
		}
	}
	return "", fmt.Errorf("switch %s has no router port with %s's gateway %s", sw.Name, src.Pod, src.gateway)
}
