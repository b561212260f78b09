package fairqueue

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func TestStorageOrder(t *testing.T) {
	tests := []struct {
		name string
		push []reconcile.Request
		want []string
	}{
		{"one tenant: FIFO", []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3")}, []string{"a/1", "a/2", "a/3"}},
		{"a burst does not starve a later tenant",
			[]reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3"), req("a", "4"), req("b", "1"), req("c", "1")},
			[]string{"a/1", "b/1", "c/1", "a/2", "a/3", "a/4"}},
		{"turns rotate", []reconcile.Request{req("a", "1"), req("b", "1"), req("a", "2"), req("b", "2"), req("", "x")},
			[]string{"a/1", "b/1", "/x", "a/2", "b/2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New(ByNamespace)
			for _, r := range tc.push {
				s.Push(r)
			}
			var got []string
			for s.Len() > 0 {
				got = append(got, s.Pop().String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueueFairness drives the real workqueue over Storage: a tenant's burst
// of 300 objects queued first delays another tenant's one object by one item,
// and de-duplication still holds.
func TestQueueFairness(t *testing.T) {
	q := NewQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := 0; i < 300; i++ {
		q.Add(req("burst", fmt.Sprint(i)))
	}
	q.Add(req("burst", "0")) // already queued: not twice
	q.Add(req("quiet", "net"))
	if q.Len() != 301 {
		t.Fatalf("Len = %d, want 301", q.Len())
	}
	for i := 0; ; i++ {
		item, _ := q.Get()
		q.Done(item)
		if item.Namespace == "quiet" {
			if i != 1 {
				t.Fatalf("the quiet tenant's object came out %d-th, want second", i+1)
			}
			return
		}
	}
}

// BenchmarkStorage measures a push and a pop against client-go's FIFO storage
// (the floor): go test ./internal/fairqueue -bench . -benchmem
func BenchmarkStorage(b *testing.B) {
	items := make([]reconcile.Request, 1000)
	for i := range items {
		items[i] = req(fmt.Sprint("ns", i%50), fmt.Sprint(i))
	}
	for _, tc := range []struct {
		name string
		new  func() workqueue.Queue[reconcile.Request]
	}{
		{"fair", func() workqueue.Queue[reconcile.Request] { return New(ByNamespace) }},
		{"fifo", workqueue.DefaultQueue[reconcile.Request]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := tc.new()
			for i := 0; i < b.N; i++ {
				s.Push(items[i%len(items)])
				if s.Len() > 500 {
					s.Pop()
				}
			}
		})
	}
}
