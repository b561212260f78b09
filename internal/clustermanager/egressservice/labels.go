package egressservice

import "k8s.io/apimachinery/pkg/labels"

func labelsOf(m map[string]string) labels.Set { return labels.Set(m) }
