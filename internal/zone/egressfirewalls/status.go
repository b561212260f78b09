package egressfirewalls

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

// FieldManager is the zone's field manager for its status messages.
func FieldManager(zone string) string { return "ovn-udn-zone-" + zone }

// report writes the zone's message in the object's status: its own, when
// it enforces the object; none, when it has no pods of the namespace.
// Nothing is written when the status already says it.
func (f *Feature) report(ctx context.Context, out Outcome) error {
	ef := out.Object
	if ef == nil || f.host.Client == nil {
		return nil
	}
	prefix := f.host.Zone + ": "
	var mine []string
	for _, m := range ef.Status.Messages {
		if strings.HasPrefix(m, prefix) {
			mine = append(mine, m)
		}
	}
	var want []string
	if out.Enforcing {
		want = []string{Message(f.host.Zone, out.Problems)}
	}
	if slices.Equal(mine, want) {
		return nil
	}
	// Server-side apply of this zone's messages alone: the other zones'
	// (other field managers) stay, and a message this zone applied before
	// and no longer does goes.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1.GroupVersion.WithKind("EgressFirewall"))
	u.SetNamespace(ef.Namespace)
	u.SetName(ef.Name)
	status := map[string]any{}
	if len(want) > 0 {
		status["messages"] = []any{want[0]}
	}
	u.Object["status"] = status
	err := f.host.Client.Status().Patch(ctx, u, client.Apply, client.FieldOwner(FieldManager(f.host.Zone)), client.ForceOwnership)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("EgressFirewall %s/%s status: %w", ef.Namespace, ef.Name, err)
	}
	return nil
}
