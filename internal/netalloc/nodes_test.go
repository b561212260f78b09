package netalloc

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/netconf"
)

// TestUnsplittableNetwork: a Layer3 network whose host prefix leaves no room
// for pods (a NAD written by hand, or a network stored before the API
// rejected it) gives no node a slice and says why, instead of handing out
// slices the zone controllers cannot render; the other networks are not
// affected.
func TestUnsplittableNetwork(t *testing.T) {
	parse := func(s string) netconf.Subnet {
		sn, err := netconf.ParseSubnet(s, true)
		if err != nil {
			t.Fatal(err)
		}
		return sn
	}
	nodes := NewNodes(100)
	_, err := nodes.SetNetworks([]Layer3Network{
		{Name: "ns.tiny", Subnets: []netconf.Subnet{parse("10.10.0.0/16/31")}},
		WithDefaultHostPrefixes("ns.small", []netconf.Subnet{parse("10.20.0.0/30")}),
		WithDefaultHostPrefixes("ns.ok", []netconf.Subnet{parse("10.30.0.0/28")}),
	})
	if err == nil || !strings.Contains(err.Error(), "network ns.tiny: host prefix /31 of 10.10.0.0/16 leaves no room") ||
		!strings.Contains(err.Error(), "network ns.small: host prefix /29 does not split 10.20.0.0/30") {
		t.Fatalf("SetNetworks: err = %v, want both networks refused", err)
	}
	a := nodes.Node("n1")
	if got := a.Subnets["ns.ok"]; len(got) != 1 || got[0].String() != "10.30.0.0/29" {
		t.Errorf("ns.ok slice %v, want 10.30.0.0/29 (default host prefix capped at /29)", got)
	}
	for _, name := range []string{"ns.tiny", "ns.small"} {
		if _, ok := a.Subnets[name]; ok {
			t.Errorf("%s: node got a slice %v", name, a.Subnets[name])
		}
		if a.Failed[name] == nil || nodes.Unsplittable(name) == nil {
			t.Errorf("%s: failed %v, unsplittable %v; want both", name, a.Failed[name], nodes.Unsplittable(name))
		}
		if diff := cmp.Diff([]string{"n1"}, nodes.Lacking(name)); diff != "" {
			t.Errorf("%s lacking (-want +got):\n%s", name, diff)
		}
	}
	if nodes.Unsplittable("ns.ok") != nil {
		t.Errorf("ns.ok: %v", nodes.Unsplittable("ns.ok"))
	}
}
