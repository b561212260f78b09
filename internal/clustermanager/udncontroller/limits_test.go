package udncontroller

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

func TestAdmitted(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	u := func(name string, age int, deleting bool) v1.UserDefinedNetwork {
		o := v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))}}
		if deleting {
			now := metav1.NewTime(t0)
			o.DeletionTimestamp = &now
		}
		return o
	}
	for _, tc := range []struct {
		name    string
		udns    []v1.UserDefinedNetwork
		created []string
		max     int
		want    []string
	}{
		{name: "no limit", udns: []v1.UserDefinedNetwork{u("a", 1, false), u("b", 2, false)}, max: 0, want: []string{"a", "b"}},
		{name: "under the limit", udns: []v1.UserDefinedNetwork{u("a", 1, false), u("b", 2, false)}, max: 3, want: []string{"a", "b"}},
		{name: "oldest waiting first", udns: []v1.UserDefinedNetwork{u("c", 1, false), u("a", 3, false), u("b", 2, false)}, max: 2, want: []string{"b", "c"}},
		{name: "same age: by name", udns: []v1.UserDefinedNetwork{u("b", 1, false), u("a", 1, false), u("c", 1, false)}, max: 2, want: []string{"a", "b"}},
		{name: "created ones hold their room before older waiting ones",
			udns: []v1.UserDefinedNetwork{u("old", 1, false), u("new", 5, false), u("newer", 6, false)}, created: []string{"new"}, max: 2, want: []string{"new", "old"}},
		{name: "a lowered limit keeps every created network and admits no more",
			udns: []v1.UserDefinedNetwork{u("a", 1, false), u("b", 2, false), u("c", 3, false), u("d", 4, false)}, created: []string{"a", "b", "c"}, max: 2, want: []string{"a", "b", "c"}},
		{name: "a network being deleted without a NAD takes no room",
			udns: []v1.UserDefinedNetwork{u("gone", 1, true), u("a", 2, false)}, max: 1, want: []string{"a"}},
		{name: "a network being deleted with its NAD still holds room",
			udns: []v1.UserDefinedNetwork{u("going", 1, true), u("a", 2, false)}, created: []string{"going"}, max: 1, want: []string{"going"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created := map[types.UID]bool{}
			for _, n := range tc.created {
				created[types.UID(n)] = true
			}
			var got []string
			for uid := range admitted(tc.udns, created, tc.max) {
				got = append(got, string(uid))
			}
			slices.Sort(got)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("admitted (-want +got):\n%s", d)
			}
		})
	}
}
