package udncontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udn"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// CUDNReconciler renders a ClusterUserDefinedNetwork into a NAD in every
// namespace its selector picks, best effort per namespace.
type CUDNReconciler struct {
	*Controller
}

// Reconcile implements reconcile.Reconciler for ClusterUserDefinedNetworks.
func (r *CUDNReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := r.Recovery.Ensure(ctx); err != nil {
		return ctrl.Result{}, err
	}
	c := &v1.ClusterUserDefinedNetwork{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owned, err := r.ownedNADs(ctx, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	if c.DeletionTimestamp != nil {
		return r.finalize(ctx, c, owned)
	}
	if err := r.addFinalizer(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	res, err := r.sync(ctx, c, owned)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := c.Status.DeepCopy()
	status.ActiveNamespaces = res.active
	if len(res.failures) == 0 {
		msg := res.successMessage()
		if conf, err := udn.Config(udn.ForCUDN(c, "", ""), r.Config); err == nil {
			if note := udn.TransitNote(conf, r.Config); note != "" {
				msg += "; " + note
			}
		}
		r.setCondition(c, &status.Conditions, metav1.ConditionTrue, v1.ReasonNADCreated, msg)
	} else {
		reason, msg := res.failureCondition()
		log.FromContext(ctx).V(1).Info("network not created everywhere", "reason", reason, "message", msg)
		r.setCondition(c, &status.Conditions, metav1.ConditionFalse, reason, msg)
	}
	if err := updateStatus(ctx, r.Client, c, &c.Status, status); err != nil {
		return ctrl.Result{}, err
	}
	for _, f := range res.failures {
		if f.Reason == v1.ReasonSyncError {
			return ctrl.Result{RequeueAfter: retryAfter}, nil
		}
	}
	return ctrl.Result{}, nil
}

// cudnResult is the outcome of one sync.
type cudnResult struct {
	active   []string
	kept     []string // no longer selected, kept while in use
	failures []*failure
}

func (res cudnResult) successMessage() string {
	msg := fmt.Sprintf("NetworkAttachmentDefinitions are created in %d namespace(s)", len(res.active))
	if len(res.active) == 0 {
		msg = "no namespace is selected"
	}
	if len(res.kept) > 0 {
		msg += "; kept while in use in namespaces no longer selected: " + strings.Join(res.kept, ", ")
	}
	return msg
}

// failureCondition aggregates per-namespace failures into one reason and a
// message naming every failed namespace and why.
func (res cudnResult) failureCondition() (string, string) {
	reasons := map[string]bool{}
	var parts []string
	for _, f := range res.failures {
		reasons[f.Reason] = true
		if f.Namespace == "" {
			parts = append(parts, f.Message)
		} else {
			parts = append(parts, fmt.Sprintf("namespace %s: %s: %s", f.Namespace, f.Reason, f.Message))
		}
	}
	reason := v1.ReasonMultipleFailures
	if len(reasons) == 1 {
		reason = res.failures[0].Reason
	}
	return reason, "not every selected namespace has the network: " + strings.Join(parts, "; ")
}

func (r *CUDNReconciler) sync(ctx context.Context, c *v1.ClusterUserDefinedNetwork, owned map[string]*nadv1.NetworkAttachmentDefinition) (cudnResult, error) {
	var res cudnResult
	whole := func(reason, format string, args ...any) (cudnResult, error) {
		res.failures = append(res.failures, fail("", reason, format, args...))
		return res, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&c.Spec.NamespaceSelector)
	if err != nil {
		return whole(v1.ReasonInvalidSpec, "invalid namespace selector: %v", err)
	}
	if err := udn.CheckSubnets(c.Spec.FlatTemplate(), r.Config); err != nil {
		f := asFailure("", err)
		return whole(f.Reason, "%s", f.Message)
	}
	var nsList corev1.NamespaceList
	if err := r.Client.List(ctx, &nsList, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return res, err
	}
	selected := map[string]*corev1.Namespace{}
	for i := range nsList.Items {
		selected[nsList.Items[i].Name] = &nsList.Items[i]
	}

	name := netconf.CUDNNetworkName(c.Name)
	if len(selected) > 0 {
		req := udn.ForCUDN(c, "", "")
		n, f := r.allocate(req)
		if f != nil {
			return whole(f.Reason, "%s", f.Message)
		}
		vrf := udn.VRFName(c, n.ID)
		holder, err := r.vrfHolder(ctx, c, vrf)
		if err != nil {
			return res, err
		}
		if holder != "" {
			if len(owned) == 0 {
				r.Networks.Release(name)
			}
			return whole(v1.ReasonVRFConflict, "VRF %s is already used by ClusterUserDefinedNetwork %s", vrf, holder)
		}
		for _, ns := range sortedKeys(selected) {
			if selected[ns].DeletionTimestamp != nil {
				f, err := r.leaveTerminating(ctx, c, selected[ns], owned[ns])
				if err != nil {
					return res, err
				}
				if f != nil {
					res.failures = append(res.failures, f)
				}
				continue
			}
			req := udn.ForCUDN(c, ns, vrf)
			req.NetworkID, req.TunnelKeys = n.ID, n.TunnelKeys
			f, err := r.syncNamespace(ctx, selected[ns], req, owned[ns])
			if err != nil {
				return res, err
			}
			if f != nil {
				res.failures = append(res.failures, f)
				continue
			}
			res.active = append(res.active, ns)
		}
	}

	// NADs in namespaces no longer selected go, unless pods still use them.
	remaining := len(res.active)
	for _, ns := range sortedKeys(owned) {
		if _, ok := selected[ns]; ok {
			continue
		}
		pods, err := r.podsUsing(ctx, ns, name, c.Name, c.Spec.FlatTemplate().Role == v1.Primary)
		if err != nil {
			return res, err
		}
		if len(pods) > 0 {
			res.kept = append(res.kept, fmt.Sprintf("%s (%d pod(s))", ns, len(pods)))
			remaining++
			continue
		}
		if err := r.deleteNAD(ctx, owned[ns]); err != nil {
			return res, err
		}
		log.FromContext(ctx).Info("deleted NAD of a namespace no longer selected", "nad", ns+"/"+name)
	}
	for _, f := range res.failures {
		if owned[f.Namespace] != nil {
			remaining++
		}
	}
	if remaining == 0 {
		r.Networks.Release(name)
	}
	return res, nil
}

// leaveTerminating withdraws the network from a namespace being deleted: its
// NAD (mine, nil if none) goes as soon as no pod there uses the network, so
// the namespace's deletion can finish; until then the namespace is reported.
func (r *CUDNReconciler) leaveTerminating(ctx context.Context, c *v1.ClusterUserDefinedNetwork, ns *corev1.Namespace, mine *nadv1.NetworkAttachmentDefinition) (*failure, error) {
	if mine == nil {
		return nil, nil
	}
	pods, err := r.podsUsing(ctx, ns.Name, mine.Name, c.Name, c.Spec.FlatTemplate().Role == v1.Primary)
	if err != nil {
		return nil, err
	}
	if len(pods) > 0 {
		return fail(ns.Name, v1.ReasonNamespaceTerminating, "namespace %s is being deleted; its NetworkAttachmentDefinition is kept while %d pod(s) use it (%s)",
			ns.Name, len(pods), summarize(pods)), nil
	}
	if err := r.deleteNAD(ctx, mine); err != nil {
		return nil, err
	}
	log.FromContext(ctx).Info("deleted NAD of a namespace being deleted", "nad", ns.Name+"/"+mine.Name)
	return nil, nil
}

// syncNamespace provides the network to one namespace.
func (r *CUDNReconciler) syncNamespace(ctx context.Context, ns *corev1.Namespace, req udn.Request, mine *nadv1.NetworkAttachmentDefinition) (*failure, error) {
	existing := mine
	if existing == nil {
		var err error
		if existing, err = r.getNAD(ctx, ns.Name, req.Name); err != nil {
			return nil, err
		}
	}
	if f := foreign(existing, req.Owner); f != nil {
		return f, nil
	}
	if f, err := r.checkNamespace(ctx, ns, req, existing); f != nil || err != nil {
		return f, err
	}
	desired, err := udn.NAD(req, r.Config)
	if err != nil {
		return asFailure(ns.Name, err), nil
	}
	outcome, f, err := r.ensureNAD(ctx, existing, desired, req.Owner)
	if f != nil || err != nil {
		return f, err
	}
	switch outcome {
	case nadCreated:
		log.FromContext(ctx).Info("created NAD", "nad", ns.Name+"/"+req.Name, "network", req.NetworkName, "networkID", req.NetworkID)
	case nadRepaired:
		log.FromContext(ctx).Info("repaired drifted NAD", "nad", ns.Name+"/"+req.Name)
	}
	return nil, nil
}

// vrfHolder returns the older ClusterUserDefinedNetwork already using vrf.
func (r *CUDNReconciler) vrfHolder(ctx context.Context, c *v1.ClusterUserDefinedNetwork, vrf string) (string, error) {
	var all v1.ClusterUserDefinedNetworkList
	if err := r.Client.List(ctx, &all); err != nil {
		return "", err
	}
	var holders []v1.ClusterUserDefinedNetwork
	for _, o := range all.Items {
		if o.UID == c.UID || o.DeletionTimestamp != nil {
			continue
		}
		id := 0
		if n, ok := r.Networks.Get(netconf.CUDNNetworkName(o.Name)); ok {
			id = n.ID
		}
		if udn.VRFName(&o, id) != vrf {
			continue
		}
		if o.CreationTimestamp.Before(&c.CreationTimestamp) || (o.CreationTimestamp.Equal(&c.CreationTimestamp) && o.Name < c.Name) {
			holders = append(holders, o)
		}
	}
	if len(holders) == 0 {
		return "", nil
	}
	sort.Slice(holders, func(i, j int) bool { return holders[i].Name < holders[j].Name })
	return holders[0].Name, nil
}

// ownedNADs returns the CUDN's NADs by namespace.
func (r *CUDNReconciler) ownedNADs(ctx context.Context, c *v1.ClusterUserDefinedNetwork) (map[string]*nadv1.NetworkAttachmentDefinition, error) {
	var list nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{netconf.OwnerKindLabel: "ClusterUserDefinedNetwork"}); err != nil {
		return nil, err
	}
	out := map[string]*nadv1.NetworkAttachmentDefinition{}
	for i := range list.Items {
		n := &list.Items[i]
		if n.Name == netconf.CUDNNetworkName(c.Name) && ownedBy(n, udn.ForCUDN(c, "", "").Owner) {
			out[n.Namespace] = n
		}
	}
	return out, nil
}

// finalize deletes every NAD of the network once no pod uses any of them.
func (r *CUDNReconciler) finalize(ctx context.Context, c *v1.ClusterUserDefinedNetwork, owned map[string]*nadv1.NetworkAttachmentDefinition) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, v1.NetworkProtectionFinalizer) {
		return ctrl.Result{}, nil
	}
	name := netconf.CUDNNetworkName(c.Name)
	var inUse []string
	for _, ns := range sortedKeys(owned) {
		pods, err := r.podsUsing(ctx, ns, name, c.Name, c.Spec.FlatTemplate().Role == v1.Primary)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(pods) > 0 {
			inUse = append(inUse, fmt.Sprintf("%s: %s", ns, summarize(pods)))
		}
	}
	if len(inUse) > 0 {
		status := c.Status.DeepCopy()
		r.setCondition(c, &status.Conditions, metav1.ConditionFalse, v1.ReasonNetworkInUse,
			"the network is being deleted and is still in use by pods in "+strings.Join(inUse, "; "))
		return ctrl.Result{}, updateStatus(ctx, r.Client, c, &c.Status, status)
	}
	for _, ns := range sortedKeys(owned) {
		if err := r.deleteNAD(ctx, owned[ns]); err != nil {
			return ctrl.Result{}, err
		}
	}
	r.Networks.Release(name)
	return ctrl.Result{}, r.releaseFinalizer(ctx, c)
}

// selects reports whether c's selector picks a namespace with these labels.
func selects(c *v1.ClusterUserDefinedNetwork, nsLabels map[string]string) bool {
	sel, err := metav1.LabelSelectorAsSelector(&c.Spec.NamespaceSelector)
	return err == nil && sel.Matches(labels.Set(nsLabels))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
