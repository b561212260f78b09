package kubeobj

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selects reports whether a label selector selects a set of labels, as
// metav1.LabelSelectorAsSelector's selector would, without building one
// for the common selector of match labels only (building one validates
// every key and value with regular expressions: most of the cost of
// matching hundreds of objects' selectors in a loop). The empty selector
// selects everything; a selector that does not parse selects nothing.
func Selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if len(sel.MatchExpressions) == 0 {
		for k, v := range sel.MatchLabels {
			if got, ok := set[k]; !ok || got != v {
				return false
			}
		}
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}

// Selector is metav1.LabelSelectorAsSelector, without validating a
// selector of match labels only (the API validated it when it took the
// object).
func Selector(sel *metav1.LabelSelector) (labels.Selector, error) {
	if len(sel.MatchExpressions) == 0 {
		return labels.SelectorFromValidatedSet(sel.MatchLabels), nil
	}
	return metav1.LabelSelectorAsSelector(sel)
}
