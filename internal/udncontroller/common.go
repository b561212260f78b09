// Package udncontroller holds cluster-manager's controllers for
// UserDefinedNetworks and ClusterUserDefinedNetworks: they render each network
// into NetworkAttachmentDefinitions (through internal/udn), give it a network
// ID (through internal/netalloc), guard namespaces against a second primary
// network, keep networks in use from being deleted, and report all of it in
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/netalloc"
	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/udn"
)

// Controller holds what both reconcilers share.
type Controller struct {
	// Client reads from the manager's cache and writes to the API server.
	Client   client.Client
	Config   config.Cluster
	Networks *netalloc.Networks
	// Recovery rebuilds Networks from the API before the first allocation.
	Recovery *netalloc.Recovery
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

// claimant is a network that wants to be the primary network of a namespace.
type claimant struct {
	kind, name string
	uid        types.UID
	created    metav1.Time
	nad        *nadv1.NetworkAttachmentDefinition // its NAD in the namespace, if any
}

func (c claimant) String() string {
	if c.kind == "" {
		return fmt.Sprintf("NetworkAttachmentDefinition %s/%s", c.nad.Namespace, c.nad.Name)
	}
	return c.kind + " " + c.name
}

// before orders claimants: those that already have their NAD first (oldest
// NAD first), then by the network object's age, then by kind and name.
func (c claimant) before(o claimant) bool {
	if (c.nad != nil) != (o.nad != nil) {
		return c.nad != nil
	}
	if c.nad != nil && !c.nad.CreationTimestamp.Equal(&o.nad.CreationTimestamp) {
		return c.nad.CreationTimestamp.Before(&o.nad.CreationTimestamp)
	}
	if !c.created.Equal(&o.created) {
		return c.created.Before(&o.created)
	}
	if c.kind != o.kind {
		return c.kind < o.kind
	}
	return c.name < o.name
}

// primaryConflict returns who already holds, or has the prior claim on, ns's
// primary network, when it is not owner. Hand-made primary NADs (owned by no
// network object) always conflict.
func (r *Controller) primaryConflict(ctx context.Context, ns *corev1.Namespace, owner udn.Owner) (string, error) {
	var nads nadv1.NetworkAttachmentDefinitionList
	if err := r.Client.List(ctx, &nads, client.InNamespace(ns.Name)); err != nil {
		return "", err
	}
	nadOf := map[types.UID]*nadv1.NetworkAttachmentDefinition{}
	var foreign []string
	for i := range nads.Items {
		n := &nads.Items[i]
		c, err := netconf.Parse(n)
		if err != nil || c == nil || !c.IsPrimary() {
			continue
		}
		if ref := metav1.GetControllerOf(n); ref != nil && ref.APIVersion == v1.GroupVersion.String() {
			nadOf[ref.UID] = n
			continue
		}
		if ownedBy(n, owner) && n.Name == ownerNADName(owner) {
			nadOf[owner.UID] = n // its owner reference is about to be put back
			continue
		}
		if netconf.Managed(n) {
			continue // another network's NAD whose owner reference is being put back
		}
		foreign = append(foreign, n.Name)
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return fmt.Sprintf("NetworkAttachmentDefinition %s/%s", ns.Name, foreign[0]), nil
	}

	var claims []claimant
	var udns v1.UserDefinedNetworkList
	if err := r.Client.List(ctx, &udns, client.InNamespace(ns.Name)); err != nil {
		return "", err
	}
	for _, u := range udns.Items {
		if u.Spec.Role == v1.Primary && (u.DeletionTimestamp == nil || nadOf[u.UID] != nil) {
			claims = append(claims, claimant{"UserDefinedNetwork", u.Namespace + "/" + u.Name, u.UID, u.CreationTimestamp, nadOf[u.UID]})
		}
	}
	var cudns v1.ClusterUserDefinedNetworkList
	if err := r.Client.List(ctx, &cudns); err != nil {
		return "", err
	}
	for _, c := range cudns.Items {
		if c.Spec.Template.Role != v1.Primary {
			continue
		}
		if (selects(&c, ns.Labels) && c.DeletionTimestamp == nil) || nadOf[c.UID] != nil {
			claims = append(claims, claimant{"ClusterUserDefinedNetwork", c.Name, c.UID, c.CreationTimestamp, nadOf[c.UID]})
		}
	}
	sort.Slice(claims, func(i, j int) bool { return claims[i].before(claims[j]) })
	for _, c := range claims {
		if c.uid == owner.UID {
			return "", nil
		}
		return c.String(), nil
	}
	return "", nil
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
	holder, err := r.primaryConflict(ctx, ns, req.Owner)
	if err != nil {
		return nil, err
	}
	if holder != "" {
		return fail(ns.Name, v1.ReasonPrimaryConflict, "namespace %s already has a primary network: %s", ns.Name, holder), nil
	}
	if existing == nil {
		pods, err := r.podsUsing(ctx, ns.Name, "", true)
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

// podsUsing lists the running pods that use a network in namespace ns: every
// pod-networked pod for a primary network, and for a secondary one the pods
// whose networks annotation selects the NAD named nadName.
func (r *Controller) podsUsing(ctx context.Context, ns, nadName string, primary bool) ([]string, error) {
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
			out = append(out, p.Name)
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
func (r *Controller) allocate(req udn.Request) (netalloc.Network, *failure) {
	c, err := udn.Config(req, r.Config)
	if err != nil {
		return netalloc.Network{}, asFailure(req.Namespace, err)
	}
	n, err := r.Networks.Allocate(req.NetworkName, netalloc.TunnelKeysNeeded(c))
	switch {
	case errors.Is(err, netalloc.ErrTunnelKeys):
		return netalloc.Network{}, fail(req.Namespace, v1.ReasonTunnelKeysExhausted, "%v", err)
	case err != nil:
		return netalloc.Network{}, fail(req.Namespace, v1.ReasonNetworkLimit, "%v", err)
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
