// Package udncontroller holds cluster-manager's controllers for
// UserDefinedNetworks and ClusterUserDefinedNetworks: they render each network
// into NetworkAttachmentDefinitions (through internal/clustermanager/udn), give it a network
// ID (through internal/clustermanager/netalloc), check that the primary networks of a
// namespace fit together (primaries.go), keep networks in use from being deleted, and report all of it in
// the NetworkCreated condition.
package udncontroller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/registry"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/udn"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// Controller holds what both reconcilers share.
type Controller struct {
	// Client reads from the manager's cache and writes to the API server.
	Client   client.Client
	Config   config.Cluster
	Networks *registry.Networks
	// Recovery rebuilds Networks from the API before the first allocation.
	Recovery *registry.Recovery
	Recorder record.EventRecorder
}

// failure is a per-namespace problem that becomes a condition reason.
type failure struct {
	Namespace string
	Reason    string
	Message   string
}

func fail(ns, reason, format string, args ...any) *failure {
	return &failure{Namespace: ns, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func asFailure(ns string, err error) *failure {
	if ce, ok := err.(*udn.ConditionError); ok {
		return &failure{Namespace: ns, Reason: ce.Reason, Message: ce.Message}
	}
	return &failure{Namespace: ns, Reason: v1.ReasonSyncError, Message: err.Error()}
}

// checkNamespace makes the per-namespace checks of a network about to be (or
// already) provided to ns. existing is the network's current NAD there.
func (r *Controller) checkNamespace(ctx context.Context, ns *corev1.Namespace, req udn.Request, existing *nadv1.NetworkAttachmentDefinition) (*failure, error) {
	if ns.DeletionTimestamp != nil {
		return fail(ns.Name, v1.ReasonNamespaceTerminating, "namespace %s is being deleted", ns.Name), nil
	}
	if req.Spec.Role != v1.Primary {
		return nil, nil
	}
	if _, ok := ns.Labels[v1.PrimaryNetworkLabel]; !ok {
		return fail(ns.Name, v1.ReasonNamespaceNotLabeled,
			"namespace %s lacks the label %s required for a primary network", ns.Name, v1.PrimaryNetworkLabel), nil
	}
	verdict, err := r.primaryVerdict(ctx, ns, req.Owner)
	if err != nil {
		return nil, err
	}
	if verdict.reason != "" {
		return fail(ns.Name, verdict.reason, "%s", verdict.message), nil
	}
	if existing == nil && !verdict.additional {
		pods, err := r.podsUsing(ctx, ns.Name, "", "", true)
		if err != nil {
			return nil, err
		}
		if len(pods) > 0 {
			return fail(ns.Name, v1.ReasonPodsExist, "namespace %s already has %d pod(s) (%s); a primary network must be created before any pod",
				ns.Name, len(pods), summarize(pods)), nil
		}
	}
	return nil, nil
}

// podsUsing lists the running pods that use a network in namespace ns: for
// a primary network (its NAD nadName, its network object object) every
// pod-networked pod but those placed on, or asking for, another of the
// namespace's primary networks (podnet.MayUsePrimary), and for a secondary
// one the pods whose networks annotation selects the NAD named nadName.
// With nadName "" (a primary network about to be the namespace's first),
// every pod-networked pod counts.
func (r *Controller) podsUsing(ctx context.Context, ns, nadName, object string, primary bool) ([]string, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods.Items {
		if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if primary {
			if nadName == "" || podnet.MayUsePrimary(&p, nadName, object) {
				out = append(out, p.Name)
			}
			continue
		}
		sels, err := netconf.ParseNetworkSelections(p.Annotations[netconf.NetworksAnnotation], p.Namespace)
		if err != nil {
			continue
		}
		for _, s := range sels {
			if s.Namespace == ns && s.Name == nadName {
				out = append(out, p.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func summarize(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	return strings.Join(names, ", ")
}

// nadOutcome is what ensureNAD found or did.
type nadOutcome int

const (
	nadUnchanged nadOutcome = iota
	nadCreated
	nadRepaired
)

// getNAD returns the NAD ns/name, or nil when it does not exist.
func (r *Controller) getNAD(ctx context.Context, ns, name string) (*nadv1.NetworkAttachmentDefinition, error) {
	nad := &nadv1.NetworkAttachmentDefinition{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return nad, nil
}

// ownedBy reports whether nad belongs to the network object owner: its
// controller reference names owner, or it has none and still carries the
// marks only cluster-manager puts on the NADs it renders for owner (the
// managed label with owner's kind, or the protection finalizer) — an owner
// reference removed by hand is put back, not taken as a foreign NAD.
func ownedBy(nad *nadv1.NetworkAttachmentDefinition, owner udn.Owner) bool {
	if ref := metav1.GetControllerOf(nad); ref != nil {
		return ref.UID == owner.UID
	}
	marked := (netconf.Managed(nad) && nad.Labels[netconf.OwnerKindLabel] == owner.Kind) ||
		controllerutil.ContainsFinalizer(nad, v1.NetworkProtectionFinalizer)
	return marked && nad.DeletionTimestamp == nil
}

// ownerNADName is the name of the NADs a network object renders.
func ownerNADName(owner udn.Owner) string {
	if owner.Kind == netconf.KindCUDN {
		return netconf.CUDNNetworkName(owner.Name)
	}
	return owner.Name
}

// foreign returns a failure when existing is a NAD not owned by owner.
func foreign(existing *nadv1.NetworkAttachmentDefinition, owner udn.Owner) *failure {
	if existing == nil || ownedBy(existing, owner) {
		return nil
	}
	return fail(existing.Namespace, v1.ReasonForeignNAD,
		"NetworkAttachmentDefinition %s/%s exists and is not owned by %s %s; it is left alone",
		existing.Namespace, existing.Name, owner.Kind, owner.Name)
}

// ensureNAD makes the existing NAD (nil if none) equal to desired: it creates
// it, or repairs what drifted (config, finalizer, labels, owner reference,
// allocation annotations), leaving other fields alone. A NAD owned by someone
// else is never touched: that is a failure.
func (r *Controller) ensureNAD(ctx context.Context, existing, desired *nadv1.NetworkAttachmentDefinition, owner udn.Owner) (nadOutcome, *failure, error) {
	if existing == nil {
		if err := r.Client.Create(ctx, desired); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nadUnchanged, nil, fmt.Errorf("NAD %s/%s appeared while creating it: %w", desired.Namespace, desired.Name, err)
			}
			return nadUnchanged, asFailure(desired.Namespace, err), nil
		}
		return nadCreated, nil, nil
	}
	if f := foreign(existing, owner); f != nil {
		return nadUnchanged, f, nil
	}
	updated := existing.DeepCopy()
	if !sameConfig(existing.Spec.Config, desired.Spec.Config) {
		updated.Spec.Config = desired.Spec.Config
	}
	if updated.DeletionTimestamp == nil {
		controllerutil.AddFinalizer(updated, v1.NetworkProtectionFinalizer)
	}
	updated.Labels = mergeMap(updated.Labels, desired.Labels)
	updated.Annotations = mergeMap(updated.Annotations, desired.Annotations)
	if !reflect.DeepEqual(updated.OwnerReferences, desired.OwnerReferences) {
		updated.OwnerReferences = desired.OwnerReferences
	}
	if reflect.DeepEqual(updated, existing) {
		return nadUnchanged, nil, nil
	}
	if err := r.Client.Update(ctx, updated); err != nil {
		return nadUnchanged, asFailure(existing.Namespace, err), nil
	}
	return nadRepaired, nil, nil
}

// sameConfig compares two NAD configs by meaning (parsed), not by bytes.
func sameConfig(a, b string) bool {
	ca, errA := netconf.ParseConfig(a)
	cb, errB := netconf.ParseConfig(b)
	if errA != nil || errB != nil || ca == nil || cb == nil {
		return a == b
	}
	return reflect.DeepEqual(ca, cb)
}

func mergeMap(into, from map[string]string) map[string]string {
	if len(from) == 0 {
		return into
	}
	if into == nil {
		into = map[string]string{}
	}
	for k, v := range from {
		into[k] = v
	}
	return into
}

// deleteNAD releases a NAD's protection finalizer and deletes it.
func (r *Controller) deleteNAD(ctx context.Context, nad *nadv1.NetworkAttachmentDefinition) error {
	if controllerutil.RemoveFinalizer(nad, v1.NetworkProtectionFinalizer) {
		if err := r.Client.Update(ctx, nad); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing NAD %s/%s: %w", nad.Namespace, nad.Name, err)
		}
	}
	if err := r.Client.Delete(ctx, nad); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NAD %s/%s: %w", nad.Namespace, nad.Name, err)
	}
	return nil
}

// allocate returns the network's ID and tunnel keys, allocating them if needed.
func (r *Controller) allocate(req udn.Request) (registry.Network, *failure) {
	c, err := udn.Config(req, r.Config)
	if err != nil {
		return registry.Network{}, asFailure(req.Namespace, err)
	}
	n, err := r.Networks.Allocate(req.NetworkName, registry.TunnelKeysNeeded(c))
	switch {
	case errors.Is(err, registry.ErrTunnelKeys):
		return registry.Network{}, fail(req.Namespace, v1.ReasonTunnelKeysExhausted, "%v", err)
	case err != nil:
		return registry.Network{}, fail(req.Namespace, v1.ReasonNetworkLimit, "%v", err)
	}
	return n, nil
}

// setCondition sets the NetworkCreated condition on conds and reports whether
// anything changed, emitting an Event when the condition changes.
func (r *Controller) setCondition(obj client.Object, conds *[]metav1.Condition, status metav1.ConditionStatus, reason, message string) bool {
	// A copy: SetStatusCondition updates the existing element in place.
	var prev *metav1.Condition
	if p := meta.FindStatusCondition(*conds, v1.ConditionNetworkCreated); p != nil {
		prev = p.DeepCopy()
	}
	changed := meta.SetStatusCondition(conds, metav1.Condition{
		Type: v1.ConditionNetworkCreated, Status: status, Reason: reason, Message: message,
		ObservedGeneration: obj.GetGeneration(),
	})
	if changed && (prev == nil || prev.Reason != reason || prev.Message != message) {
		eventType := corev1.EventTypeNormal
		if status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Event(obj, eventType, reason, message)
	}
	return changed
}

// addFinalizer puts the protection finalizer on a network object.
func (r *Controller) addFinalizer(ctx context.Context, obj client.Object) error {
	if !controllerutil.AddFinalizer(obj, v1.NetworkProtectionFinalizer) {
		return nil
	}
	if err := r.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	return nil
}

// releaseFinalizer removes the protection finalizer from a network object,
// letting its deletion complete.
func (r *Controller) releaseFinalizer(ctx context.Context, obj client.Object) error {
	controllerutil.RemoveFinalizer(obj, v1.NetworkProtectionFinalizer)
	if err := r.Client.Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing finalizer: %w", err)
	}
	return nil
}

// updateStatus writes next as obj's status (cur points into obj) unless
// nothing changed, so a resync with nothing new writes nothing.
func updateStatus[S any](ctx context.Context, c client.Client, obj client.Object, cur, next *S) error {
	if equality.Semantic.DeepEqual(cur, next) {
		return nil
	}
	*cur = *next
	if err := c.Status().Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

// retryAfter is how soon a reconcile that hit a transient failure runs again,
// besides the watches that trigger it.
const retryAfter = 10 * time.Second
