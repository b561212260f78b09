package kubeobj

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Selects reports whether a label selector selects a set of labels, as
// metav1.LabelSelectorAsSelector's selector would, without building one
// for the common selector of match labels only (building one validates
// every key and value with regular expressions: most of the cost of
// matching hundreds of objects' selectors in a loop): match labels are
// compared as they are, valid or not. The empty selector selects
// everything; a selector with expressions that do not parse selects
// nothing.
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

// Selector is metav1.LabelSelectorAsSelector, for reading caches: a
// selector of match labels only is built by labels.ValidatedSelectorFromSet
// (an invalid key or value is an error, as there).
func Selector(sel *metav1.LabelSelector) (labels.Selector, error) {
	if len(sel.MatchExpressions) == 0 {
		return labels.ValidatedSelectorFromSet(sel.MatchLabels)
	}
	return metav1.LabelSelectorAsSelector(sel)
}
