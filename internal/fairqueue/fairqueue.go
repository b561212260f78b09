// Package fairqueue is work-queue storage that is fair across tenants: items
// are grouped by a key (a namespace) and handed out round-robin across the
// groups, first in first out within each. A tenant who queues hundreds of
// objects at once then delays another tenant's object by at most one item per
// busy tenant, not by the whole burst. It plugs into client-go's workqueue
// (which keeps its de-duplication, processing and delay semantics) and so into
// controller-runtime controllers through controller.Options.NewQueue.
package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Storage is a workqueue.Queue that pops round-robin across groups. Like any
// workqueue.Queue it is used from one goroutine at a time (the workqueue
// holds its lock), so it has no lock of its own.
type Storage[T comparable] struct {
	group  func(T) string
	items  map[string][]T
	order  []string // groups with items, in turn order
	length int
}

// New returns empty storage grouping items by group.
func New[T comparable](group func(T) string) *Storage[T] {
	return &Storage[T]{group: group, items: map[string][]T{}}
}

// Touch implements workqueue.Queue: an item queued again keeps its place.
func (s *Storage[T]) Touch(T) {}

// Push implements workqueue.Queue.
func (s *Storage[T]) Push(item T) {
	g := s.group(item)
	if len(s.items[g]) == 0 {
		s.order = append(s.order, g)
	}
	s.items[g] = append(s.items[g], item)
	s.length++
}

// Len implements workqueue.Queue.
func (s *Storage[T]) Len() int { return s.length }

// Pop implements workqueue.Queue: the oldest item of the group whose turn it
// is; the group then goes to the back of the turn order if it has more.
func (s *Storage[T]) Pop() T {
	g := s.order[0]
	s.order = s.order[1:]
	q := s.items[g]
	item := q[0]
	var zero T
	q[0] = zero
	if q = q[1:]; len(q) == 0 {
		delete(s.items, g)
	} else {
		s.items[g] = q
		s.order = append(s.order, g)
	}
	s.length--
	return item
}

// ByNamespace groups reconcile requests by namespace (cluster-scoped objects
// form one group).
func ByNamespace(r reconcile.Request) string { return r.Namespace }

// NewQueue is a controller.Options.NewQueue: client-go's rate-limiting
// workqueue over Storage grouped by namespace.
func NewQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{Name: name, Queue: New(ByNamespace)})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{Name: name, Queue: base})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name, DelayingQueue: delaying})
}
