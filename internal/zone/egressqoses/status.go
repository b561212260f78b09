package egressqoses

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

// Condition reasons, as ovn-kubernetes spells them.
const (
	ReasonSucceeded = "SetupSucceeded"
	ReasonFailed    = "SetupFailed"
)

// FieldManager is the zone's field manager for its status condition.
func FieldManager(zone string) string { return "ovn-udn-zone-" + zone }

// report writes the zone's condition in the object's status: its own,
// when it applies the object; none, when it has no pods of the namespace.
// Nothing is written when the status already says it.
func (f *Feature) report(ctx context.Context, out Outcome) error {
	q := out.Object
	if q == nil {
		return nil
	}
	typ := v1.EgressQoSReadyInZone + f.host.Zone
	cur := meta.FindStatusCondition(q.Status.Conditions, typ)
	status, reason, msg := metav1.ConditionTrue, ReasonSucceeded, v1.EgressQoSApplied
	if len(out.Problems) > 0 {
		status, reason, msg = metav1.ConditionFalse, ReasonFailed, v1.EgressQoSNotApplied+": "+strings.Join(out.Problems, "; ")
	}
	switch {
	case !out.Enforcing && cur == nil:
		return nil
	case out.Enforcing && cur != nil && cur.Status == status && cur.Reason == reason && cur.Message == msg:
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1.GroupVersion.WithKind("EgressQoS"))
	u.SetNamespace(q.Namespace)
	u.SetName(q.Name)
	st := map[string]any{}
	if out.Enforcing {
		st["conditions"] = []any{map[string]any{"type": typ, "status": string(status), "reason": reason, "message": msg,
			"lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z")}}
	}
	u.Object["status"] = st
	err := f.host.Client.Status().Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager(f.host.Zone)), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("EgressQoS %s/%s status: %w", q.Namespace, q.Name, err)
	}
	return nil
}
