package v1test

import "testing"

// TestRandomDecodes: every generated document is one object.
func TestRandomDecodes(t *testing.T) {
	for _, tc := range Random(1, 300) {
		if _, err := Object(tc.Doc); err != nil {
			t.Fatalf("%s: %v\n%s", tc.Name, err, tc.Doc)
		}
	}
}
