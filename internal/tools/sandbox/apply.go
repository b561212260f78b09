package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/manifest"
	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// kindOrder applies what others depend on first.
var kindOrder = map[string]int{"Namespace": 0, "CustomResourceDefinition": 1, "ClusterUserDefinedNetwork": 2,
	"UserDefinedNetwork": 2, "NetworkAttachmentDefinition": 2, "Pod": 4, "Deployment": 4, "ReplicaSet": 4,
	"StatefulSet": 4, "DaemonSet": 4, "Job": 4}

// makesPods are the kinds that create pods: they go in once the networks
// are decided.
func makesPods(kind string) bool { return kindOrder[kind] == 4 }

// Apply creates or updates every object of the manifests (server-side
// apply), namespaces and networks before what makes pods. A pod's
// spec.nodeName, if set, must name a sandbox node; without it the scheduler
// places the pod. Each object that fails is reported with its file; the
// others are still applied.
func Apply(ctx context.Context, dir string, out io.Writer, paths ...string) error {
	st, c, err := openSandbox(dir)
	if err != nil {
		return err
	}
	docs, err := manifest.Read(paths...)
	if err != nil {
		return err
	}
	var nodes []string
	for _, n := range st.Nodes {
		nodes = append(nodes, n.Name)
	}
	sort.SliceStable(docs, func(i, j int) bool {
		return order(docs[i].Object.GetKind()) < order(docs[j].Object.GetKind())
	})
	var errs []error
	var networks []*unstructured.Unstructured
	waited := false
	for _, d := range docs {
		o := d.Object
		if makesPods(o.GetKind()) && !waited {
			// A primary network refuses a namespace that already has pods:
			// pods go in once the networks have been decided.
			waited = true
			if err := waitNetworksDecided(ctx, c, networks, time.Minute); err != nil {
				errs = append(errs, err)
			}
		}
		ref := strings.ToLower(o.GetKind()) + "/" + o.GetName()
		if o.GetNamespace() != "" {
			ref = strings.ToLower(o.GetKind()) + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		if o.GetKind() == "Pod" {
			node, _, _ := unstructured.NestedString(o.Object, "spec", "nodeName")
			if node != "" && !slices.Contains(nodes, node) {
				errs = append(errs, fmt.Errorf("%s: %s: spec.nodeName %q is not a sandbox node (%s); leave it out to let the scheduler choose",
					d.File, ref, node, strings.Join(nodes, ", ")))
				continue
			}
		}
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		if err := c.Patch(ctx, o, client.Apply, client.FieldOwner("ovn-udn-sandbox"), client.ForceOwnership); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", d.File, ref, err))
			continue
		}
		fmt.Fprintf(out, "%s applied\n", ref)
		if k := o.GetKind(); k == "UserDefinedNetwork" || k == "ClusterUserDefinedNetwork" {
			networks = append(networks, o)
		}
	}
	return errors.Join(errs...)
}

// waitNetworksDecided waits until each network has a NetworkCreated
// condition (True, or False with the reason).
func waitNetworksDecided(ctx context.Context, c client.Client, networks []*unstructured.Unstructured, timeout time.Duration) error {
	var pending []string
	err := proc.WaitFor(timeout, 100*time.Millisecond, func() (bool, error) {
		pending = pending[:0]
		for _, n := range networks {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(n.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(n), u); err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			decided := false
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == v1.ConditionNetworkCreated {
					decided = true
				}
			}
			if !decided {
				pending = append(pending, strings.ToLower(n.GetKind())+"/"+strings.TrimPrefix(n.GetNamespace()+"/"+n.GetName(), "/"))
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("networks not created after %s, pods applied anyway: %s (%v)", timeout, strings.Join(pending, ", "), err)
	}
	return nil
}

func order(kind string) int {
	if o, ok := kindOrder[kind]; ok {
		return o
	}
	return 3
}
