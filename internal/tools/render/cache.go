package render

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// cachedClient serves reads from typed snapshots of the in-memory API, one
// per kind, taken on first read and dropped when anything of that kind is
// written, as an informer cache serves a controller. controller-runtime's
// fake client copies every List through JSON, which made large renders
// spend most of their time decoding (docs/performance.md).
type cachedClient struct {
	client.Client
	indexes map[schema.GroupVersionKind]map[string]client.IndexerFunc

	mu    sync.Mutex
	snaps map[schema.GroupVersionKind]*snapshot
}

type snapshot struct {
	items []client.Object
	byKey map[types.NamespacedName]client.Object
	// index holds, per indexed field in use, the keys of the objects by
	// value; values holds each object's values, to update index on writes.
	index  map[string]map[string]map[types.NamespacedName]bool
	values map[string]map[types.NamespacedName][]string
}

// indexed returns the keys of the objects whose field has value, building
// the field's index on first use.
func (s *snapshot) indexed(field string, extract client.IndexerFunc, value string) map[types.NamespacedName]bool {
	if s.index == nil {
		s.index, s.values = map[string]map[string]map[types.NamespacedName]bool{}, map[string]map[types.NamespacedName][]string{}
	}
	if _, ok := s.index[field]; !ok {
		s.index[field], s.values[field] = map[string]map[types.NamespacedName]bool{}, map[types.NamespacedName][]string{}
		for _, o := range s.items {
			s.indexOne(field, extract, o)
		}
	}
	return s.index[field][value]
}

func (s *snapshot) indexOne(field string, extract client.IndexerFunc, o client.Object) {
	k := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	for _, v := range s.values[field][k] {
		delete(s.index[field][v], k)
	}
	vals := extract(o)
	s.values[field][k] = vals
	for _, v := range vals {
		if s.index[field][v] == nil {
			s.index[field][v] = map[types.NamespacedName]bool{}
		}
		s.index[field][v][k] = true
	}
}

func newCachedClient(c client.Client) *cachedClient {
	cc := &cachedClient{Client: c, indexes: map[schema.GroupVersionKind]map[string]client.IndexerFunc{},
		snaps: map[schema.GroupVersionKind]*snapshot{}}
	for _, i := range indexes() {
		gvk, err := apiutil.GVKForObject(i.Object, c.Scheme())
		if err != nil {
			continue
		}
		if cc.indexes[gvk] == nil {
			cc.indexes[gvk] = map[string]client.IndexerFunc{}
		}
		cc.indexes[gvk][i.Field] = i.Extract
	}
	return cc
}

// snapshotOf returns the kind's snapshot, taking it if needed.
func (c *cachedClient) snapshotOf(ctx context.Context, gvk schema.GroupVersionKind) (*snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.snaps[gvk]; s != nil {
		return s, nil
	}
	listObj, err := c.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	list := listObj.(client.ObjectList)
	if err := c.Client.List(ctx, list); err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	s := &snapshot{byKey: map[types.NamespacedName]client.Object{}}
	for _, o := range objs {
		co := o.(client.Object)
		s.items = append(s.items, co)
		s.byKey[types.NamespacedName{Namespace: co.GetNamespace(), Name: co.GetName()}] = co
	}
	c.snaps[gvk] = s
	return s, nil
}

func (c *cachedClient) invalidate(obj runtime.Object) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.snaps = map[schema.GroupVersionKind]*snapshot{}
		return
	}
	delete(c.snaps, gvk)
}

// Get implements client.Reader.
func (c *cachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*unstructured.Unstructured); ok || len(opts) > 0 {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	s, err := c.snapshotOf(ctx, gvk)
	if err != nil {
		return err
	}
	found, ok := s.byKey[key]
	if !ok {
		return c.Client.Get(ctx, key, obj) // the API's own NotFound
	}
	return copyInto(found, obj)
}

// List implements client.Reader, with namespaces, label selectors and
// exact-match field selectors on the zone's indexes; anything else goes to
// the fake client.
func (c *cachedClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if _, ok := list.(*unstructured.UnstructuredList); ok || lo.Limit > 0 || lo.Continue != "" {
		return c.Client.List(ctx, list, opts...)
	}
	listGVK, err := apiutil.GVKForObject(list, c.Scheme())
	if err != nil || len(listGVK.Kind) <= 4 || listGVK.Kind[len(listGVK.Kind)-4:] != "List" {
		return c.Client.List(ctx, list, opts...)
	}
	gvk := listGVK.GroupVersion().WithKind(listGVK.Kind[:len(listGVK.Kind)-4])
	type match struct {
		field   string
		extract client.IndexerFunc
		value   string
	}
	var fieldMatches []match
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		for _, r := range lo.FieldSelector.Requirements() {
			extract := c.indexes[gvk][r.Field]
			if extract == nil || (r.Operator != selection.Equals && r.Operator != selection.DoubleEquals) {
				return c.Client.List(ctx, list, opts...)
			}
			fieldMatches = append(fieldMatches, match{r.Field, extract, r.Value})
		}
	}
	s, err := c.snapshotOf(ctx, gvk)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []runtime.Object
	for _, o := range s.items {
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		ok := true
		for _, m := range fieldMatches {
			ok = ok && s.indexed(m.field, m.extract, m.value)[types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}]
		}
		if ok {
			out = append(out, o.DeepCopyObject())
		}
	}
	return meta.SetList(list, out)
}

// copyInto copies a snapshot object into the caller's object of the same type.
func copyInto(src, dst client.Object) error {
	sv, dv := reflect.ValueOf(src.DeepCopyObject()), reflect.ValueOf(dst)
	if sv.Type() != dv.Type() {
		return fmt.Errorf("render cache: %T is not a %T", dst, src)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// stored records a write's result (the client leaves the stored object in
// obj) in the kind's snapshot, or drops the snapshot when it cannot.
func (c *cachedClient) stored(obj client.Object, err error) error {
	if err != nil {
		c.invalidate(obj)
		return err
	}
	gvk, gerr := apiutil.GVKForObject(obj, c.Scheme())
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.snaps[gvk]
	if gerr != nil || s == nil {
		return nil
	}
	if _, ok := obj.(*unstructured.Unstructured); ok {
		delete(c.snaps, gvk)
		return nil
	}
	cp := obj.DeepCopyObject().(client.Object)
	k := types.NamespacedName{Namespace: cp.GetNamespace(), Name: cp.GetName()}
	if old, ok := s.byKey[k]; ok {
		for i := range s.items {
			if s.items[i] == old {
				s.items[i] = cp
			}
		}
	} else {
		// Keep the fake client's order: by namespace and name.
		i := sort.Search(len(s.items), func(i int) bool {
			o := s.items[i]
			return o.GetNamespace() > k.Namespace || (o.GetNamespace() == k.Namespace && o.GetName() > k.Name)
		})
		s.items = append(s.items[:i], append([]client.Object{cp}, s.items[i:]...)...)
	}
	s.byKey[k] = cp
	for field := range s.index {
		s.indexOne(field, c.indexes[gvk][field], cp)
	}
	return nil
}

// Create, Update and Patch write through and record the result; Delete and
// DeleteAllOf drop the kind's snapshot (a delete may only mark the object).
func (c *cachedClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.stored(obj, c.Client.Create(ctx, obj, opts...))
}

func (c *cachedClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.stored(obj, c.Client.Update(ctx, obj, opts...))
}

func (c *cachedClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.stored(obj, c.Client.Patch(ctx, obj, patch, opts...))
}

func (c *cachedClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	defer c.invalidate(obj)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *cachedClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	defer c.invalidate(obj)
	return c.Client.DeleteAllOf(ctx, obj, opts...)
}

func (c *cachedClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *cachedClient) SubResource(name string) client.SubResourceClient {
	return &cachedSubResource{SubResourceClient: c.Client.SubResource(name), c: c}
}

type cachedSubResource struct {
	client.SubResourceClient
	c *cachedClient
}

func (s *cachedSubResource) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	defer s.c.invalidate(obj)
	return s.SubResourceClient.Create(ctx, obj, sub, opts...)
}

func (s *cachedSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.c.stored(obj, s.SubResourceClient.Update(ctx, obj, opts...))
}

func (s *cachedSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.c.stored(obj, s.SubResourceClient.Patch(ctx, obj, patch, opts...))
}

// indexes are the cache indexes the controllers render runs list with:
// the zone controllers' and cluster-manager's slices-where-used view's,
// each field once (both index pods by spec.nodeName).
func indexes() []kubeobj.Index {
	var out []kubeobj.Index
	seen := map[string]bool{}
	for _, i := range append(zone.Indexes(), whereused.Indexes()...) {
		if k := fmt.Sprintf("%T/%s", i.Object, i.Field); !seen[k] {
			seen[k] = true
			out = append(out, i)
		}
	}
	return out
}
