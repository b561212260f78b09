package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
)

// Document is one object of a manifest file.
type Document struct {
	File   string
	Object *unstructured.Unstructured
}

// ReadManifests reads every object of the given YAML or JSON files and of the
// .yaml, .yml and .json files of the given directories (sorted by name).
func ReadManifests(paths ...string) ([]Document, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	var docs []Document
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for i := 1; ; i++ {
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: document %d: %w", f, i, err)
			}
			if len(obj) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if u.GetKind() == "" || u.GetAPIVersion() == "" {
				return nil, fmt.Errorf("%s: document %d has no kind or apiVersion", f, i)
			}
			docs = append(docs, Document{File: f, Object: u})
		}
	}
	return docs, nil
}

// kindOrder applies what others depend on first.
var kindOrder = map[string]int{"Namespace": 0, "CustomResourceDefinition": 1, "ClusterUserDefinedNetwork": 2,
	"UserDefinedNetwork": 2, "NetworkAttachmentDefinition": 2, "Pod": 4}

// Apply creates or updates every object of the manifests (server-side
// apply), namespaces and networks before pods. A pod must name one of the
// sandbox's nodes (there is no scheduler). Each object that fails is reported
// with its file; the others are still applied.
func Apply(ctx context.Context, dir string, out io.Writer, paths ...string) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	st, err := ReadState(l)
	if err != nil {
		return err
	}
	docs, err := ReadManifests(paths...)
	if err != nil {
		return err
	}
	cfg, err := restConfigFor(st.Kubeconfig)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: clustermanager.Scheme()})
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
	for _, d := range docs {
		o := d.Object
		ref := strings.ToLower(o.GetKind()) + "/" + o.GetName()
		if o.GetNamespace() != "" {
			ref = strings.ToLower(o.GetKind()) + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		if o.GetKind() == "Pod" {
			node, _, _ := unstructured.NestedString(o.Object, "spec", "nodeName")
			if !slices.Contains(nodes, node) {
				errs = append(errs, fmt.Errorf("%s: %s: spec.nodeName %q is not a sandbox node (%s); the sandbox has no scheduler",
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
	}
	return errors.Join(errs...)
}

func order(kind string) int {
	if o, ok := kindOrder[kind]; ok {
		return o
	}
	return 3
}
