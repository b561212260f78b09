package kubeobj

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestSelects agrees with LabelSelectorAsSelector on match labels, match
// expressions and both, and selects nothing for a selector that does not
// parse.
func TestSelects(t *testing.T) {
	sets := []map[string]string{nil, {"a": "1"}, {"a": "2"}, {"a": "1", "b": "x"}, {"b": "x"}}
	sels := []metav1.LabelSelector{
		{},
		{MatchLabels: map[string]string{"a": "1"}},
		{MatchLabels: map[string]string{"a": "1", "b": "x"}},
		{MatchLabels: map[string]string{"a": ""}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "b", Operator: metav1.LabelSelectorOpExists}}},
		{MatchLabels: map[string]string{"a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "b", Operator: metav1.LabelSelectorOpDoesNotExist}}},
	}
	for i := range sels {
		want, err := metav1.LabelSelectorAsSelector(&sels[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, set := range sets {
			if got := Selects(&sels[i], set); got != want.Matches(labels.Set(set)) {
				t.Errorf("Selects(%v, %v) = %v, want %v", sels[i], set, got, !got)
			}
		}
	}
	bad := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}
	if Selects(&bad, map[string]string{"a": "1"}) {
		t.Error("a selector that does not parse selected a set")
	}
}
