package whereused

import (
	"context"
	"errors"
	"slices"
	"strconv"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/activity"
	"github.com/ovn-udn/ovn-udn/internal/contract/connect"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// Indexes the view reads through (Indexes lists them for a cache; the API
// server answers PodNodeField itself).
const (
	// PodNodeField indexes pods by spec.nodeName.
	PodNodeField = "spec.nodeName"
	// EveryNodeServiceField indexes Services activity.NeedsEveryNode holds
	// for, under "true".
	EveryNodeServiceField = "netalloc.everyNode"
)

// Indexes returns the indexes the cache behind a View needs.
func Indexes() []kubeobj.Index {
	return []kubeobj.Index{
		{Object: &corev1.Pod{}, Field: PodNodeField, Extract: func(o client.Object) []string {
			if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				return []string{p.Spec.NodeName}
			}
			return nil
		}},
		{Object: &corev1.Service{}, Field: EveryNodeServiceField, Extract: func(o client.Object) []string {
			if s, ok := o.(*corev1.Service); ok && activity.NeedsEveryNode(s) {
				return []string{"true"}
			}
			return nil
		}},
	}
}

// View answers activity.NetworksOn from Kubernetes objects: pods
// through Pods (the cache, or the API server for a live read), everything
// else through Reader (the cache). Connects count unless NoConnects,
// egress IPs unless NoEgressIPs (the CRD is not installed).
type View struct {
	Ctx         context.Context
	Reader      client.Reader
	Pods        client.Reader
	NoConnects  bool
	NoEgressIPs bool

	// keys are the connect keys of the networks NamespaceNetworks named.
	keys map[string]connect.Key
}

var _ activity.NodeView = (*View)(nil)

// NodePods lists the pods scheduled on node.
func (v *View) NodePods(node string) ([]corev1.Pod, error) {
	var list corev1.PodList
	// Read only (activity.NodeView): the cache's objects, not copies. A
	// deep copy of each of a node's pods, for each pod that starts or
	// stops using the node, was 72% of this read and 22% of
	// BenchmarkPodAdd's process (cluster-manager, zone controller and API
	// client) at 1,000 pods.
	err := v.Pods.List(v.Ctx, &list, client.MatchingFields{PodNodeField: node}, client.UnsafeDisableDeepCopy)
	return list.Items, err
}

// NamespaceNetworks returns the primary networks of the namespace's NADs.
func (v *View) NamespaceNetworks(namespace string) ([]string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := v.Reader.List(v.Ctx, &nads, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []string
	for i := range nads.Items {
		c, err := netconf.Parse(&nads.Items[i])
		if err != nil || c == nil || !c.IsPrimary() {
			continue // malformed, or another plugin's (nil)
		}
		out = append(out, c.Name)
		if id, _, ok, err := netconf.ParseAllocation(nads.Items[i].Annotations); ok && err == nil {
			if v.keys == nil {
				v.keys = map[string]connect.Key{}
			}
			v.keys[c.Name] = connect.Key{Topology: c.Topology, ID: id}
		}
	}
	return out, nil
}

// Connected returns the primary networks an accepted connect joins the
// network to, for pods or for services (as the zone controllers read
// them). NetworksOn asks only for networks NamespaceNetworks named.
func (v *View) Connected(network string) ([]string, error) {
	k, ok := v.keys[network]
	if v.NoConnects || !ok {
		return nil, nil
	}
	var list v1.ClusterNetworkConnectList
	if err := v.Reader.List(v.Ctx, &list); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	peers := map[connect.Key]bool{}
	for _, t := range []v1.ConnectivityType{v1.PodNetwork, v1.ClusterIPServiceNetwork} {
		for _, p := range connect.Peers(list.Items, k, t) {
			peers[p] = true
		}
	}
	if len(peers) == 0 {
		return nil, nil
	}
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := v.Reader.List(v.Ctx, &nads); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for i := range nads.Items {
		id, _, ok, err := netconf.ParseAllocation(nads.Items[i].Annotations)
		if !ok || err != nil {
			continue
		}
		c, err := netconf.Parse(&nads.Items[i])
		if err != nil || c == nil || !c.IsPrimary() || seen[c.Name] || !peers[connect.Key{Topology: c.Topology, ID: id}] {
			continue
		}
		seen[c.Name] = true
		out = append(out, c.Name)
	}
	return out, nil
}

// EveryNode returns the primary networks of namespaces with a Service
// served on every node.
func (v *View) EveryNode() ([]string, error) {
	var svcs corev1.ServiceList
	if err := v.Reader.List(v.Ctx, &svcs, client.MatchingFields{EveryNodeServiceField: strconv.FormatBool(true)}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	var errs []error
	for _, s := range svcs.Items {
		if seen[s.Namespace] {
			continue
		}
		seen[s.Namespace] = true
		nets, err := v.NamespaceNetworks(s.Namespace)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, nets...)
	}
	return out, errors.Join(errs...)
}

// EgressNetworks returns the primary networks of the namespaces selected
// by the EgressIPs holding an egress IP on node, or by any EgressIP when
// node is egress-assignable (activity.EgressNodes; none without the CRD).
func (v *View) EgressNetworks(node string) ([]string, error) {
	if v.NoEgressIPs {
		return nil, nil
	}
	var n corev1.Node
	if err := v.Reader.Get(v.Ctx, client.ObjectKey{Name: node}, &n); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	_, assignable := n.Labels[v1.EgressAssignableLabel]
	var eips v1.EgressIPList
	// Read only, never kept: the cache's objects themselves.
	if err := v.Reader.List(v.Ctx, &eips, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	var relevant []*v1.EgressIP
	for i := range eips.Items {
		e := &eips.Items[i]
		if assignable || slices.ContainsFunc(e.Status.Items, func(it v1.EgressIPStatusItem) bool { return it.Node == node }) {
			relevant = append(relevant, e)
		}
	}
	if len(relevant) == 0 {
		return nil, nil
	}
	// Every namespace once, each object's selector matched in memory.
	var namespaces corev1.NamespaceList
	if err := v.Reader.List(v.Ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for _, ns := range namespaces.Items {
		if !slices.ContainsFunc(relevant, func(e *v1.EgressIP) bool { return kubeobj.Selects(&e.Spec.NamespaceSelector, ns.Labels) }) {
			continue
		}
		nets, err := v.NamespaceNetworks(ns.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, nets...)
	}
	return out, errors.Join(errs...)
}
