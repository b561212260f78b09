package sandbox

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNorthdWarnings(t *testing.T) {
	got := NorthdWarnings([]Process{
		{Name: "ovn-northd/node1", Restarts: 0, Log: "/x/zones/node1/northd.log"},
		{Name: "ovn-northd/node2", Restarts: 2, Log: "/x/zones/node2/northd.log"},
		{Name: "zone-controller/node2", Restarts: 3},
	})
	want := []string{`WARNING: ovn-northd/node2 restarted 2 time(s): it crashed or was killed; look for "assertion" or "EMER" in /x/zones/node2/northd.log`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NorthdWarnings (-want +got):\n%s", diff)
	}
}
