package udncontroller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udn"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// UDNReconciler renders a UserDefinedNetwork into the NAD of the same name.
type UDNReconciler struct {
	*Controller
}

// Reconcile implements reconcile.Reconciler for UserDefinedNetworks.
func (r *UDNReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := r.Recovery.Ensure(ctx); err != nil {
		return ctrl.Result{}, err
	}
	logger := log.FromContext(ctx).WithValues("udn", req.NamespacedName)
	u := &v1.UserDefinedNetwork{}
	if err := r.Client.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if u.DeletionTimestamp != nil {
		return r.finalize(ctx, u)
	}
	if err := r.addFinalizer(ctx, u); err != nil {
		return ctrl.Result{}, err
	}

	f, err := r.sync(ctx, u)
	if err != nil {
		return ctrl.Result{}, err
	}
	status := u.Status.DeepCopy()
	if f != nil {
		logger.V(1).Info("network not created", "reason", f.Reason, "message", f.Message)
		r.setCondition(u, &status.Conditions, metav1.ConditionFalse, f.Reason, f.Message)
	} else {
		msg := fmt.Sprintf("NetworkAttachmentDefinition %s/%s is created", u.Namespace, u.Name)
		if c, err := udn.Config(udn.ForUDN(u), r.Config); err == nil {
			if note := udn.TransitNote(c, r.Config); note != "" {
				msg += "; " + note
			}
		}
		r.setCondition(u, &status.Conditions, metav1.ConditionTrue, v1.ReasonNADCreated, msg)
	}
	if err := updateStatus(ctx, r.Client, u, &u.Status, status); err != nil {
		return ctrl.Result{}, err
	}
	if f != nil && f.Reason == v1.ReasonSyncError {
		return ctrl.Result{RequeueAfter: retryAfter}, nil
	}
	return ctrl.Result{}, nil
}

// sync makes the NAD match the UDN, or returns why it cannot.
func (r *UDNReconciler) sync(ctx context.Context, u *v1.UserDefinedNetwork) (*failure, error) {
	req := udn.ForUDN(u)
	if strings.HasPrefix(req.NetworkName, netconf.CUDNPrefix) {
		return fail(u.Namespace, v1.ReasonInvalidSpec,
			"network name %s would collide with the names of ClusterUserDefinedNetworks; rename the UserDefinedNetwork", req.NetworkName), nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: u.Namespace}, ns); err != nil {
		return nil, err
	}
	existing, err := r.getNAD(ctx, u.Namespace, u.Name)
	if err != nil {
		return nil, err
	}
	if f := foreign(existing, req.Owner); f != nil {
		return f, nil
	}
	if err := udn.CheckSubnets(u.Spec.Flat(), r.Config); err != nil {
		return asFailure(u.Namespace, err), nil
	}
	if f, err := r.checkNamespace(ctx, ns, req, existing); f != nil || err != nil {
		return f, err
	}
	if existing == nil {
		if f, err := r.namespaceLimit(ctx, u); f != nil || err != nil {
			return f, err
		}
	}
	n, f := r.allocate(req)
	if f != nil {
		return f, nil
	}
	req.NetworkID, req.TunnelKeys = n.ID, n.TunnelKeys
	desired, err := udn.NAD(req, r.Config)
	if err != nil {
		return asFailure(u.Namespace, err), nil
	}
	outcome, f, err := r.ensureNAD(ctx, existing, desired, req.Owner)
	if f != nil || err != nil {
		return f, err
	}
	switch outcome {
	case nadCreated:
		log.FromContext(ctx).Info("created NAD", "nad", u.Namespace+"/"+u.Name, "network", req.NetworkName, "networkID", n.ID)
	case nadRepaired:
		log.FromContext(ctx).Info("repaired drifted NAD", "nad", u.Namespace+"/"+u.Name)
	}
	return nil, nil
}

// finalize deletes the UDN's NAD once no pod uses the network, then releases
// the network ID and the UDN's finalizer.
func (r *UDNReconciler) finalize(ctx context.Context, u *v1.UserDefinedNetwork) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(u, v1.NetworkProtectionFinalizer) {
		return ctrl.Result{}, nil
	}
	nad, err := r.getNAD(ctx, u.Namespace, u.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if nad != nil && ownedBy(nad, udn.ForUDN(u).Owner) {
		pods, err := r.podsUsing(ctx, u.Namespace, u.Name, u.Name, u.Spec.Flat().Role == v1.Primary)
		if err != nil {
			return ctrl.Result{}, err
		}
		if len(pods) > 0 {
			status := u.Status.DeepCopy()
			r.setCondition(u, &status.Conditions, metav1.ConditionFalse, v1.ReasonNetworkInUse,
				fmt.Sprintf("the network is being deleted and is still in use by %d pod(s): %s", len(pods), summarize(pods)))
			return ctrl.Result{}, updateStatus(ctx, r.Client, u, &u.Status, status)
		}
		if err := r.deleteNAD(ctx, nad); err != nil {
			return ctrl.Result{}, err
		}
		log.FromContext(ctx).Info("deleted NAD", "nad", u.Namespace+"/"+u.Name)
	}
	r.Networks.Release(udn.ForUDN(u).NetworkName)
	return ctrl.Result{}, r.releaseFinalizer(ctx, u)
}
