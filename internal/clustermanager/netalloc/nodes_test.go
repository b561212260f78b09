package netalloc

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// TestUnsplittableNetwork: a Layer3 network whose host prefix leaves no room
// for pods (a NAD written by hand, or a network stored before the API
// rejected it) gives no node a slice and says why, instead of handing out
// slices the zone controllers cannot render; the other networks are not
// affected.
func TestUnsplittableNetwork(t *testing.T) {
	parse := func(s string) netconf.Subnet { return subnet(t, s) }
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
		if !a.Subnets.Lacks(name) {
			t.Errorf("%s: node got a slice %v, want the network listed with none", name, a.Subnets[name])
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

// TestNodeUsing walks nodes through using and no longer using networks of
// a small pool: a node holds slices only of what it uses, a released slice
// goes back to its node when still free, goes to another node when the
// pool needs it, and a lacking node gets one once a slice is released.
func TestNodeUsing(t *testing.T) {
	parse := func(s string) netconf.Subnet { return subnet(t, s) }
	nodes := NewNodes(100)
	if _, err := nodes.SetNetworks([]Layer3Network{
		{Name: "blue", Subnets: []netconf.Subnet{parse("10.1.0.0/23/24")}}, // two slices
		{Name: "red", Subnets: []netconf.Subnet{parse("10.2.0.0/16/24"), parse("fd00:2::/48/64")}},
	}); err != nil {
		t.Fatal(err)
	}
	uses := func(nets ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(nets, n) }
	}
	type step struct {
		node, uses   string // uses: comma-separated networks ("" none, "*" every one)
		want         string // the node's subnets annotation
		wantReleased []string
		wantLacking  []string // of blue, after the step
	}
	for i, s := range []step{
		{node: "n1", uses: "", want: "{}"},
		{node: "n1", uses: "blue", want: `{"blue":["10.1.0.0/24"]}`},
		{node: "n2", uses: "*", want: `{"blue":["10.1.1.0/24"],"red":["10.2.0.0/24","fd00:2::/64"]}`},
		{node: "n3", uses: "blue", want: `{"blue":[]}`, wantLacking: []string{"n3"}},                                                              // blue is full
		{node: "n1", uses: "red", want: `{"red":["10.2.1.0/24","fd00:2:0:1::/64"]}`, wantReleased: []string{"blue"}, wantLacking: []string{"n3"}}, // n3 lacks until it tries again
		{node: "n3", uses: "blue", want: `{"blue":["10.1.0.0/24"]}`},                                                                              // n1's old slice, now free
		{node: "n2", uses: "red", want: `{"red":["10.2.0.0/24","fd00:2::/64"]}`, wantReleased: []string{"blue"}},
		{node: "n1", uses: "blue,red", want: `{"blue":["10.1.1.0/24"],"red":["10.2.1.0/24","fd00:2:0:1::/64"]}`}, // its old one is n3's
		{node: "n2", uses: "", want: "{}", wantReleased: []string{"red"}},
		{node: "n2", uses: "red", want: `{"red":["10.2.0.0/24","fd00:2::/64"]}`}, // back to its own
		{node: "n3", uses: "*", want: `{"blue":["10.1.0.0/24"],"red":["10.2.2.0/24","fd00:2:0:2::/64"]}`},
	} {
		var use func(string) bool
		switch s.uses {
		case "*":
		case "":
			use = uses()
		default:
			use = uses(strings.Split(s.uses, ",")...)
		}
		a := nodes.NodeUsing(s.node, use)
		if got := a.Subnets.String(); got != s.want {
			t.Errorf("step %d (%s uses %q): subnets %s, want %s", i, s.node, s.uses, got, s.want)
		}
		if diff := cmp.Diff(s.wantReleased, a.Released); diff != "" {
			t.Errorf("step %d: released (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(s.wantLacking, nodes.Lacking("blue"), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d: blue lacking (-want +got):\n%s", i, diff)
		}
		var held []string // what it uses, but blue where it lacks a slice
		for _, n := range strings.Split(strings.ReplaceAll(s.uses, "*", "blue,red"), ",") {
			if n != "" && (n != "blue" || !slices.Contains(s.wantLacking, s.node)) {
				held = append(held, n)
			}
		}
		if diff := cmp.Diff(held, nodes.Held(s.node), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("step %d: held (-want +got):\n%s", i, diff)
		}
	}
}

// subnet parses a CIDR with its host prefix ("10.1.0.0/16/24").
func subnet(t *testing.T, s string) netconf.Subnet {
	t.Helper()
	sn, err := netconf.ParseSubnet(s, true)
	if err != nil {
		t.Fatal(err)
	}
	return sn
}
