package render

import (
	"fmt"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// recorder collects the Events controllers emit, once each.
type recorder struct {
	mu     sync.Mutex
	events map[Event]bool
}

func (r *recorder) Event(obj runtime.Object, eventType, reason, message string) {
	what := obj.GetObjectKind().GroupVersionKind().Kind
	if what == "" {
		what = typeName(obj)
	}
	if m, err := meta.Accessor(obj); err == nil {
		what += " " + key(m.GetNamespace(), m.GetName())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.events == nil {
		r.events = map[Event]bool{}
	}
	r.events[Event{Object: what, Type: eventType, Reason: reason, Message: message}] = true
}

func (r *recorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	r.Eventf(obj, eventType, reason, format, args...)
}

// list returns the events sorted by object, reason and message.
func (r *recorder) list() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.events))
	for e := range r.events {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Object != b.Object {
			return a.Object < b.Object
		}
		if a.Reason != b.Reason {
			return a.Reason < b.Reason
		}
		return a.Message < b.Message
	})
	return out
}

// typeName is the Go type name of obj without package ("Pod").
func typeName(obj runtime.Object) string {
	s := fmt.Sprintf("%T", obj)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return s[i+1:]
		}
	}
	return s
}
