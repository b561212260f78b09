// Package epslicemirror is cluster-manager's EndpointSlice mirror
// controller: for each Service in a namespace whose primary network is a
// user-defined network it keeps, beside each default slice, the mirrored
// slice package mirror builds (its pods' primary-network addresses), and
// deletes mirrors nothing needs. Readers of the slices (the zones' load
// balancers) import package mirror, never this one.
package epslicemirror

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/mirror"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// Controller keeps the mirrored EndpointSlices of each Service (the key of a
// request is the Service's namespace/name). It is level-driven: every
// reconcile computes the mirrors the Service should have (mirror.Desired) from what
// Client reads, and creates, updates and deletes only the mirrors that differ,
// so a reconcile with nothing changed writes nothing.
//
// A Service gets mirrors when it has a selector and its namespace's primary
// network is a user-defined network; headless Services too. Otherwise (no
// selector, a default-network namespace, a namespace whose user-defined
// network is gone, the Service gone) its mirrors are
// deleted. A namespace with several primary networks gets mirrors on each
// (every pod listed on the network it is placed on). While the namespace's
// primary networks cannot be told (podnet.NamespacePrimaries not ok: none
// allocated yet), its mirrors are left as they are. Slices
// without the mirror.ManagedBy label are never written.
type Controller struct {
	// Client reads, normally from the manager's cache, and writes.
	Client client.Client
}

// Reconcile implements reconcile.Reconciler for one Service.
func (r *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var have discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &have, client.InNamespace(req.Namespace),
		client.MatchingLabels{mirror.LabelServiceName: req.Name, discoveryv1.LabelManagedBy: mirror.ManagedBy}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing mirrored EndpointSlices of service %s: %w", req, err)
	}
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		svc = nil
	}
	want, known, err := r.desired(ctx, svc)
	if err != nil || !known {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.apply(ctx, have.Items, want)
}

// desired returns the mirrors svc (nil when gone) should have; known is false
// when that cannot be told yet and the mirrors are to be left alone.
func (r *Controller) desired(ctx context.Context, svc *corev1.Service) (want []discoveryv1.EndpointSlice, known bool, err error) {
	if svc == nil || svc.DeletionTimestamp != nil || len(svc.Spec.Selector) == 0 {
		return nil, true, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: svc.Namespace}, ns); err != nil {
		return nil, apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	nads, err := podnet.NamespaceNADs(ctx, r.Client, svc.Namespace)
	if err != nil {
		return nil, false, fmt.Errorf("reading the networks of namespace %s: %w", svc.Namespace, err)
	}
	primaries, ok := podnet.NamespacePrimaries(ns, nads, v1.PrimaryNetworkLabel)
	if !ok {
		return nil, false, nil
	}
	if len(primaries) == 0 || primaries[0].IsDefault() {
		return nil, true, nil
	}
	var defaults discoveryv1.EndpointSliceList
	if err := r.Client.List(ctx, &defaults, client.InNamespace(svc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: mirror.DefaultManager}); err != nil {
		return nil, false, fmt.Errorf("listing EndpointSlices of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	pods := map[string]*corev1.Pod{}
	var readErr error
	podOf := func(name string, uid types.UID) *corev1.Pod {
		pod, seen := pods[name]
		if !seen {
			pod = &corev1.Pod{}
			if err := r.Client.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: name}, pod); err != nil {
				if !apierrors.IsNotFound(err) && readErr == nil {
					readErr = fmt.Errorf("reading pod %s/%s: %w", svc.Namespace, name, err)
				}
				pod = nil
			}
			pods[name] = pod
		}
		if pod == nil || (uid != "" && pod.UID != uid) {
			return nil
		}
		return pod
	}
	// One set of mirrors per primary network: a namespace with several
	// (OKEP-5252) lists each pod on the network it is placed on.
	for _, primary := range primaries {
		want = append(want, mirror.Desired(svc, primary.Network, defaults.Items, func(name string, uid types.UID) []netip.Addr {
			if pod := podOf(name, uid); pod != nil {
				return mirror.PrimaryAddrs(pod, primary.Key)
			}
			return nil
		})...)
	}
	if readErr != nil {
		return nil, false, readErr
	}
	return want, true, nil
}

// apply makes the stored mirrors have (all managed here) into want: it
// creates the missing, updates those that differ, recreates those whose
// address type (immutable) differs, and deletes the rest.
func (r *Controller) apply(ctx context.Context, have, want []discoveryv1.EndpointSlice) error {
	logger := log.FromContext(ctx)
	stored := make(map[string]*discoveryv1.EndpointSlice, len(have))
	for i := range have {
		stored[have[i].Name] = &have[i]
	}
	var errs []error
	for i := range want {
		w := &want[i]
		h, ok := stored[w.Name]
		delete(stored, w.Name)
		switch {
		case ok && h.AddressType != w.AddressType:
			if err := r.delete(ctx, h); err != nil {
				errs = append(errs, err)
				continue
			}
			fallthrough
		case !ok:
			if err := r.Client.Create(ctx, w); err != nil {
				errs = append(errs, fmt.Errorf("creating EndpointSlice %s/%s: %w", w.Namespace, w.Name, err))
				continue
			}
			logger.Info("created mirrored EndpointSlice", "slice", w.Name, "network", w.Labels[mirror.LabelNetwork], "endpoints", len(w.Endpoints))
		case !mirror.UpToDate(h, w):
			u := h.DeepCopy()
			for k, v := range w.Labels {
				u.Labels[k] = v
			}
			u.OwnerReferences, u.Ports, u.Endpoints = w.OwnerReferences, w.Ports, w.Endpoints
			if err := r.Client.Update(ctx, u); err != nil {
				errs = append(errs, fmt.Errorf("updating EndpointSlice %s/%s: %w", u.Namespace, u.Name, err))
				continue
			}
			logger.V(1).Info("updated mirrored EndpointSlice", "slice", u.Name, "endpoints", len(u.Endpoints))
		}
	}
	for _, h := range stored {
		if err := r.delete(ctx, h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// delete deletes a mirror (never a slice without the mirror.ManagedBy label).
func (r *Controller) delete(ctx context.Context, s *discoveryv1.EndpointSlice) error {
	if s.Labels[discoveryv1.LabelManagedBy] != mirror.ManagedBy {
		return fmt.Errorf("EndpointSlice %s/%s is not managed by %s; not deleting it", s.Namespace, s.Name, mirror.ManagedBy)
	}
	err := r.Client.Delete(ctx, s, client.Preconditions{UID: &s.UID, ResourceVersion: &s.ResourceVersion})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting EndpointSlice %s/%s: %w", s.Namespace, s.Name, err)
	}
	log.FromContext(ctx).Info("deleted mirrored EndpointSlice", "slice", s.Name, "network", s.Labels[mirror.LabelNetwork])
	return nil
}
