package metrics

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// rendered returns ovn_udn_zone_networks{zone="register-latest",
// rendered="true"} from the registry, and whether it is there.
func rendered(t *testing.T) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "ovn_udn_zone_networks" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["zone"] == "register-latest" && labels["rendered"] == "true" {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// TestRegisterLatest: a zone controller built again in one process (a
// restart) replaces its collectors, so the gauge reads the new one, even
// after the old one's unregister; the new one's unregister removes it.
func TestRegisterLatest(t *testing.T) {
	unregisterOld := RegisterLatest(NetworksRendered("register-latest", func() (int, int) { return 1, 1 }))
	unregister := RegisterLatest(NetworksRendered("register-latest", func() (int, int) { return 7, 0 }))
	defer unregister()
	if got, _ := rendered(t); got != 7 {
		t.Errorf("after the second registration the gauge reads %v, want the new collector's 7", got)
	}
	unregisterOld()
	if got, _ := rendered(t); got != 7 {
		t.Errorf("after the old collector's unregister the gauge reads %v, want 7", got)
	}
	unregister()
	if got, ok := rendered(t); ok {
		t.Errorf("after unregister the gauge is still there (%v)", got)
	}
}
