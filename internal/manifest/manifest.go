// Package manifest reads Kubernetes objects from YAML and JSON files, as
// kubectl -f does: files, or the manifest files of directories.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Document is one object of a manifest file.
type Document struct {
	// File is the file the object came from, and Index its position there
	// (1 for the first document).
	File   string
	Index  int
	Object *unstructured.Unstructured
}

// Where names the document for messages: "file.yaml#2".
func (d Document) Where() string { return fmt.Sprintf("%s#%d", d.File, d.Index) }

// Read reads every object of the given YAML or JSON files and of the
// .yaml, .yml and .json files of the given directories (sorted by name).
func Read(paths ...string) ([]Document, error) {
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
		d, err := Parse(f, b)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d...)
	}
	return docs, nil
}

// Parse reads the objects of one YAML or JSON file's content; file names the
// documents. Numbers come out as float64, as from any JSON decoding into
// interface values (the API server holds whole numbers as int64; see
// internal/apivalidate).
func Parse(file string, data []byte) ([]Document, error) {
	var docs []Document
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: document %d: %w", file, i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: document %d has no kind or apiVersion", file, i)
		}
		docs = append(docs, Document{File: file, Index: i, Object: u})
	}
	return docs, nil
}
