// Package egressqoses is the zone feature that applies EgressQoSes (rows
// from internal/rows/egressqos): for each namespace with one, on each of
// its primary networks rendered on the zone's node, a QoS row per rule on
// the switch its pods there plug into, marking the DSCP of what the rule's
// pods send. One key, and one owner, per namespace; its rows are
// contributed to the switches' qos_rules, which the networks own.
//
// Each zone with pods of the namespace says in the object's status whether
// it applies the rules: its own condition, type "Ready-In-Zone-<zone>",
// through server-side apply under its own field manager, so zones never
// undo each other's; cluster-manager merges them into status.status.
//
// The feature is off when the EgressQoS CRD is not installed.
package egressqoses

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/egressqos"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// Name is the one name an EgressQoS may have (the API refuses others).
const Name = "default"

// Feature applies the EgressQoSes in the zone.
type Feature struct {
	host *feature.Host
	// off: the EgressQoS CRD is not installed (set by Watch).
	off bool
}

// New returns the feature on the zone's host (nil: only its declarations
// are read).
func New(h *feature.Host) *Feature { return &Feature{host: h} }

// Name implements feature.Feature.
func (*Feature) Name() string { return "egressqoses" }

// Kinds implements feature.Feature.
func (*Feature) Kinds() []feature.Kind { return []feature.Kind{feature.KindEgressQoS} }

// Shares implements feature.Sharer: QoS rows on the networks' switches.
func (*Feature) Shares() []feature.Share {
	return []feature.Share{{Table: &nbdb.LogicalSwitch{}, Column: "qos_rules"}}
}

// Outcome is a namespace's EgressQoS rows in the zone.
type Outcome struct {
	Rows          []model.Model
	Contributions []ovsdbsync.Contribution
	// Enforcing: the zone has pods of the namespace on a network it
	// renders (it then reports in the status).
	Enforcing bool
	// Problems are why some rule is not applied (a malformed selector).
	Problems []string
	// Object is the namespace's EgressQoS (nil: none).
	Object *v1.EgressQoS
}

// Reconcile implements feature.Feature: a namespace's QoS rows in one
// transaction, then the zone's condition in the object's status.
func (f *Feature) Reconcile(ctx context.Context, key feature.Key) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("egressQoS", key.Namespace, "zone", f.host.Zone)
	out, err := f.Desired(ctx, key.Namespace)
	var held *feature.NotRendered
	if errors.As(err, &held) {
		logger.V(1).Info("egress QoS rows not rendered", "reason", held.Reason)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p, err := f.host.Syncer.Sync(ctx, key.String(), out.Rows, out.Contributions...)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("EgressQoS of namespace %s: %w", key.Namespace, err)
	}
	res := feature.Settled(logger, "egress QoS rows", p, nil)
	if len(p.Missing) > 0 {
		return res, nil // the switch is on its way: report once the rows are in
	}
	return res, f.report(ctx, out)
}

// Desired returns a namespace's QoS rows in the zone: none when the
// feature is off, the namespace has no EgressQoS, or none of its networks
// is rendered here with pods of it.
func (f *Feature) Desired(ctx context.Context, namespace string) (Outcome, error) {
	if f.off {
		return Outcome{}, nil
	}
	var q v1.EgressQoS
	if err := f.host.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: Name}, &q); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return Outcome{}, nil
		}
		return Outcome{}, err
	}
	out := Outcome{Object: &q}
	sc, ok, err := f.host.Networks.Scope(ctx, namespace)
	if err != nil || !ok {
		return out, err
	}
	var pods corev1.PodList
	if err := f.host.Client.List(ctx, &pods, client.InNamespace(namespace), client.MatchingFields{feature.PodNodeIndex: sc.Local.Name}); err != nil {
		return out, err
	}
	sels := make([]labels.Selector, len(q.Spec.Egress))
	for i, r := range q.Spec.Egress {
		sel, err := kubeobj.Selector(&r.PodSelector) // empty: every pod
		if err != nil {
			out.Problems = append(out.Problems, fmt.Sprintf("rule %d: podSelector: %v", i, err))
			sel = labels.Nothing()
		}
		sels[i] = sel
	}
	for i, net := range sc.Nets {
		here, err := f.host.Networks.UsedOn(ctx, net.Network, sc.Local.Name)
		if err != nil {
			return out, err
		}
		if !here {
			continue
		}
		in := egressqos.Input{Namespace: namespace, Network: net.Network, Node: sc.Local.Name}
		if i > 0 {
			in.IDPrefix = net.Network.Name + "/"
		}
		selected := false
		for ri, r := range q.Spec.Egress {
			rule := egressqos.Rule{DSCP: r.DSCP}
			if r.DstCIDR != nil {
				pfx, err := netip.ParsePrefix(*r.DstCIDR)
				if err != nil { // the API refuses it: an object from before its rule
					if i == 0 {
						out.Problems = append(out.Problems, fmt.Sprintf("rule %d: dstCIDR %q is not a CIDR", ri, *r.DstCIDR))
					}
					in.Rules = append(in.Rules, egressqos.Rule{}) // no source: no row, the next rules keep their index
					continue
				}
				rule.CIDR = pfx
			}
			for pi := range pods.Items {
				p := &pods.Items[pi]
				if feature.PodDone(p) || !sels[ri].Matches(labels.Set(p.Labels)) {
					continue
				}
				nets, err := podnet.ParsePod(p)
				if err != nil {
					continue
				}
				a, ok := nets[net.Primary.Key]
				if !ok {
					continue
				}
				prefixes, err := a.Prefixes()
				if err != nil {
					continue
				}
				for _, pr := range prefixes {
					rule.Sources = append(rule.Sources, pr.Addr())
				}
				selected = true
			}
			in.Rules = append(in.Rules, rule)
		}
		// A zone with pods of the namespace on the network reports, whether
		// or not a rule selects them.
		out.Enforcing = out.Enforcing || f.hasPods(pods.Items, net.Primary.Key)
		if !selected {
			continue
		}
		res := egressqos.Render(in)
		out.Rows = append(out.Rows, res.Rows...)
		out.Contributions = append(out.Contributions, res.Contributions...)
	}
	return out, nil
}

// hasPods reports whether any running pod of pods is attached to the
// network of attachment key.
func (f *Feature) hasPods(pods []corev1.Pod, key string) bool {
	for i := range pods {
		if feature.PodDone(&pods[i]) {
			continue
		}
		if nets, err := podnet.ParsePod(&pods[i]); err == nil {
			if _, ok := nets[key]; ok {
				return true
			}
		}
	}
	return false
}

// Keys implements feature.Keyer: every namespace with an EgressQoS, and
// those only the zone's Northbound still remembers.
func (f *Feature) Keys(ctx context.Context) ([]feature.Key, error) {
	keys, err := f.objectKeys(ctx)
	if err != nil {
		return nil, err
	}
	return f.host.WithOwners(keys, feature.KindEgressQoS)
}

func (f *Feature) objectKeys(ctx context.Context) ([]feature.Key, error) {
	if f.off {
		return nil, nil
	}
	var list v1.EgressQoSList
	if err := f.host.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, err
	}
	out := make([]feature.Key, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, feature.EgressQoSKey(list.Items[i].Namespace))
	}
	return out, nil
}

// Watch implements feature.Feature: an EgressQoS is its namespace's key; a
// pod of the zone's node (its attachments, its labels) and a NAD their
// namespace's, when it has one.
func (f *Feature) Watch(b *builder.TypedBuilder[feature.Key]) {
	if !kubeobj.Installed(f.host.Client.RESTMapper(), v1.GroupVersion.WithKind("EgressQoS")) {
		f.off = true
		return
	}
	feature.WatchPerNamespace(b, f.host, feature.PerNamespace{New: func() client.Object { return &v1.EgressQoS{} }, Name: Name,
		Key: feature.EgressQoSKey, Pods: feature.PodChanges})
}

// NetworkChanged implements feature.NetworkDependent: the rows go on the
// network's switches, which may have just been made, or gone.
func (f *Feature) NetworkChanged(_ context.Context, c feature.NetworkChange) {
	if f.off || !(c.RowsChanged || c.Moved || !c.Exists || !c.Known) {
		return
	}
	f.host.Queue.Later(func(ctx context.Context) []feature.Key {
		keys, _ := f.objectKeys(ctx)
		return keys
	})
}
