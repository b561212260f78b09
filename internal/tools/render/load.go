// Package render is `ovn-udn render`: it runs the controllers' own code (the
// network-definition and allocation controllers of cluster-manager, the zone
// controllers' pod addressing and topology) over objects read from manifests,
// against an in-memory API instead of a cluster, and reports what they would
// write: NADs with their allocation, Node and Pod annotations, the conditions
// of the networks, and each zone's Northbound rows. Nothing here decides
// anything itself; a difference from a real cluster is a bug.
package render

import (
	"crypto/sha1"
	"fmt"
	"sort"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/apivalidate"
	"github.com/ovn-udn/ovn-udn/internal/manifest"
)

// Problem is an input object that was not rendered, and why.
type Problem struct {
	// Where is "file#n": the n-th document of the file.
	Where     string `json:"where,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Reason    string `json:"reason"`
}

func (p Problem) String() string {
	obj := p.Kind
	if p.Name != "" {
		obj += " " + key(p.Namespace, p.Name)
	}
	if p.Where == "" {
		return fmt.Sprintf("%s: %s", obj, p.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", p.Where, obj, p.Reason)
}

// Input is what render works on: valid objects, and the problems of the
// others.
type Input struct {
	Objects []client.Object
	// Problems are objects left out (Invalid) ...
	Problems []Problem
	// ... and Warnings are objects rendered with something assumed or ignored.
	Warnings []Problem
}

// kind is an object kind render reads.
type kind struct {
	new        func() client.Object
	namespaced bool
}

// kinds are the objects render reads; others are reported and skipped.
var kinds = map[schema.GroupVersionKind]kind{
	corev1.SchemeGroupVersion.WithKind("Namespace"):                  {func() client.Object { return &corev1.Namespace{} }, false},
	corev1.SchemeGroupVersion.WithKind("Node"):                       {func() client.Object { return &corev1.Node{} }, false},
	corev1.SchemeGroupVersion.WithKind("Pod"):                        {func() client.Object { return &corev1.Pod{} }, true},
	corev1.SchemeGroupVersion.WithKind("Service"):                    {func() client.Object { return &corev1.Service{} }, true},
	discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"):         {func() client.Object { return &discoveryv1.EndpointSlice{} }, true},
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):        {func() client.Object { return &networkingv1.NetworkPolicy{} }, true},
	nadv1.SchemeGroupVersion.WithKind("NetworkAttachmentDefinition"): {func() client.Object { return &nadv1.NetworkAttachmentDefinition{} }, true},
	v1.GroupVersion.WithKind("UserDefinedNetwork"):                   {func() client.Object { return &v1.UserDefinedNetwork{} }, true},
	v1.GroupVersion.WithKind("ClusterUserDefinedNetwork"):            {func() client.Object { return &v1.ClusterUserDefinedNetwork{} }, false},
	v1.GroupVersion.WithKind("ClusterNetworkConnect"):                {func() client.Object { return &v1.ClusterNetworkConnect{} }, false},
	v1.GroupVersion.WithKind("EgressIP"):                             {func() client.Object { return &v1.EgressIP{} }, false},
	v1.GroupVersion.WithKind("EgressFirewall"):                       {func() client.Object { return &v1.EgressFirewall{} }, true},
	v1.GroupVersion.WithKind("EgressQoS"):                            {func() client.Object { return &v1.EgressQoS{} }, true},
	v1.GroupVersion.WithKind("EgressService"):                        {func() client.Object { return &v1.EgressService{} }, true},
}

// Load reads the objects of manifest files and directories (see
// manifest.Read) and checks them as the API server would at create: the
// CRDs' schemas and CEL rules for networks, strict decoding (unknown fields
// are errors), names, and that namespaced objects have their namespace among
// the input. Objects that fail are Problems; the rest are returned.
func Load(paths ...string) (*Input, error) {
	docs, err := manifest.Read(paths...)
	if err != nil {
		return nil, err
	}
	return Check(docs)
}

// Check is Load on documents already read.
func Check(docs []manifest.Document) (*Input, error) {
	val, err := apivalidate.Project()
	if err != nil {
		return nil, err
	}
	in := &Input{}
	seen := map[string]string{} // kind/ns/name -> where
	namespaces := map[string]bool{}
	type pending struct {
		doc manifest.Document
		obj client.Object
	}
	var namespaced []pending
	for _, d := range docs {
		u := d.Object
		gvk := u.GroupVersionKind()
		problem := func(format string, args ...any) {
			in.Problems = append(in.Problems, Problem{Where: d.Where(), Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(),
				Reason: fmt.Sprintf(format, args...)})
		}
		k, ok := kinds[gvk]
		if !ok {
			in.Warnings = append(in.Warnings, Problem{Where: d.Where(), Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(),
				Reason: fmt.Sprintf("%s is not rendered; ignored", gvk.GroupVersion().WithKind(gvk.Kind))})
			continue
		}
		if u.GetName() == "" {
			problem("metadata.name: Required value")
			continue
		}
		if errs := validation.IsDNS1123Subdomain(u.GetName()); len(errs) > 0 {
			problem("metadata.name: Invalid value: %q: %s", u.GetName(), strings.Join(errs, "; "))
			continue
		}
		if errs := val.Validate(u); len(errs) > 0 {
			problem("%s", errs.ToAggregate().Error())
			continue
		}
		obj := k.new()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
			problem("%v", err)
			continue
		}
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		if obj.GetDeletionTimestamp() != nil {
			in.Warnings = append(in.Warnings, Problem{Where: d.Where(), Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName(),
				Reason: "is being deleted; rendered as it is until then"})
			obj.SetDeletionTimestamp(nil)
			obj.SetDeletionGracePeriodSeconds(nil)
		}
		clean(obj)
		if ns, ok := obj.(*corev1.Namespace); ok {
			// The API server labels every namespace with its name (selectors,
			// e.g. the seed's CUDN example, rely on it).
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[corev1.LabelMetadataName] = ns.Name
		}
		if !k.namespaced {
			obj.SetNamespace("")
		} else if obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		id := gvk.Kind + "/" + key(obj.GetNamespace(), obj.GetName())
		if first, dup := seen[id]; dup {
			problem("already defined at %s", first)
			continue
		}
		seen[id] = d.Where()
		if ns, ok := obj.(*corev1.Namespace); ok {
			namespaces[ns.Name] = true
		}
		if k.namespaced {
			namespaced = append(namespaced, pending{d, obj})
			continue
		}
		in.Objects = append(in.Objects, obj)
	}
	for _, p := range namespaced {
		if !namespaces[p.obj.GetNamespace()] {
			in.Problems = append(in.Problems, Problem{Where: p.doc.Where(), Kind: p.doc.Object.GetKind(), Namespace: p.obj.GetNamespace(),
				Name: p.obj.GetName(), Reason: fmt.Sprintf("namespaces %q not found (add the Namespace to the input)", p.obj.GetNamespace())})
			continue
		}
		in.Objects = append(in.Objects, p.obj)
	}
	return in, nil
}

// clean drops what the API server sets itself, so objects read back from a
// cluster load like fresh ones, and gives objects without a UID a stable one.
func clean(obj client.Object) {
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	obj.SetGeneration(0)
	if obj.GetUID() == "" {
		sum := sha1.Sum([]byte(obj.GetObjectKind().GroupVersionKind().Kind + "/" + key(obj.GetNamespace(), obj.GetName())))
		obj.SetUID(types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])))
	}
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// sortObjects orders objects by kind, namespace and name.
func sortObjects(objs []client.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		ka, kb := a.GetObjectKind().GroupVersionKind().Kind, b.GetObjectKind().GroupVersionKind().Kind
		if ka != kb {
			return ka < kb
		}
		return key(a.GetNamespace(), a.GetName()) < key(b.GetNamespace(), b.GetName())
	})
}
