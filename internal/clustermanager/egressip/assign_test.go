package egressip

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

func TestAssign(t *testing.T) {
	ip := netip.MustParseAddr
	ext := []netip.Prefix{netip.MustParsePrefix("172.18.0.0/16")}
	node := func(name, zone string) Node {
		return Node{Name: name, Ready: true, Assignable: true, FailureDomain: zone, Subnets: ext}
	}
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	obj := func(name string, age int, current map[netip.Addr]string, ips ...string) Object {
		o := Object{Name: name, Created: t0.Add(time.Duration(age) * time.Minute), Current: current}
		for _, s := range ips {
			o.IPs = append(o.IPs, ip(s))
		}
		return o
	}
	item := func(node, addr string) v1.EgressIPStatusItem {
		return v1.EgressIPStatusItem{Node: node, EgressIP: addr}
	}
	for _, tc := range []struct {
		name  string
		objs  []Object
		nodes []Node
		want  map[string]Result
	}{
		{
			name:  "two addresses on distinct nodes",
			objs:  []Object{obj("e", 0, nil, "172.18.0.33", "172.18.0.44")},
			nodes: []Node{node("a", ""), node("b", ""), node("c", "")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("a", "172.18.0.33"), item("b", "172.18.0.44")}}},
		},
		{
			name:  "failure domains first, then load",
			objs:  []Object{obj("e", 0, nil, "172.18.0.33", "172.18.0.44")},
			nodes: []Node{node("a", "z1"), node("b", "z1"), node("c", "z2")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("a", "172.18.0.33"), item("c", "172.18.0.44")}}},
		},
		{
			name:  "balanced over objects: the least loaded node",
			objs:  []Object{obj("old", 0, nil, "172.18.0.1"), obj("new", 1, nil, "172.18.0.2")},
			nodes: []Node{node("a", ""), node("b", "")},
			want: map[string]Result{"old": {Items: []v1.EgressIPStatusItem{item("a", "172.18.0.1")}},
				"new": {Items: []v1.EgressIPStatusItem{item("b", "172.18.0.2")}}},
		},
		{
			name:  "a holding assignment stays, even against the balance",
			objs:  []Object{obj("e", 0, map[netip.Addr]string{ip("172.18.0.33"): "c"}, "172.18.0.33")},
			nodes: []Node{node("a", ""), node("c", "")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("c", "172.18.0.33")}}},
		},
		{
			name:  "a node that is no longer Ready loses it",
			objs:  []Object{obj("e", 0, map[netip.Addr]string{ip("172.18.0.33"): "a"}, "172.18.0.33")},
			nodes: []Node{{Name: "a", Assignable: true, Subnets: ext}, node("b", "")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("b", "172.18.0.33")}}},
		},
		{
			name:  "an unreachable node loses it, though still Ready",
			objs:  []Object{obj("e", 0, map[netip.Addr]string{ip("172.18.0.33"): "a"}, "172.18.0.33")},
			nodes: []Node{{Name: "a", Ready: true, Assignable: true, Unreachable: true, Subnets: ext}, node("b", "")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("b", "172.18.0.33")}}},
		},
		{
			name:  "a node that lost the label loses it",
			objs:  []Object{obj("e", 0, map[netip.Addr]string{ip("172.18.0.33"): "a"}, "172.18.0.33")},
			nodes: []Node{{Name: "a", Ready: true, Subnets: ext}, node("b", "")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("b", "172.18.0.33")}}},
		},
		{
			name:  "a node that left loses it",
			objs:  []Object{obj("e", 0, map[netip.Addr]string{ip("172.18.0.33"): "gone"}, "172.18.0.33")},
			nodes: []Node{node("b", "")},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("b", "172.18.0.33")}}},
		},
		{
			name:  "no node holds the subnet",
			objs:  []Object{obj("e", 0, nil, "10.9.9.9")},
			nodes: []Node{node("a", "")},
			want: map[string]Result{"e": {Problems: []Problem{{IP: ip("10.9.9.9"), Reason: v1.ReasonNoNodeForIP,
				Message: "no Ready, reachable node labelled k8s.ovn.org/egress-assignable has 10.9.9.9 in its subnets"}}}},
		},
		{
			name:  "more addresses than nodes",
			objs:  []Object{obj("e", 0, nil, "172.18.0.33", "172.18.0.44")},
			nodes: []Node{node("a", "")},
			want: map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("a", "172.18.0.33")}, Problems: []Problem{{IP: ip("172.18.0.44"), Reason: v1.ReasonNoNodeForIP,
				Message: "each of the 1 nodes that can hold 172.18.0.44 already holds another address of this EgressIP"}}}},
		},
		{
			name:  "two objects claim one address: the younger is refused",
			objs:  []Object{obj("young", 5, nil, "172.18.0.33"), obj("old", 0, nil, "172.18.0.33")},
			nodes: []Node{node("a", ""), node("b", "")},
			want: map[string]Result{"old": {Items: []v1.EgressIPStatusItem{item("a", "172.18.0.33")}},
				"young": {Problems: []Problem{{IP: ip("172.18.0.33"), Reason: v1.ReasonIPClaimedByOlder, Message: "172.18.0.33 is already EgressIP old's, which is older"}}}},
		},
		{
			name:  "IPv6 on a node's IPv6 subnet",
			objs:  []Object{obj("e", 0, nil, "fd00:18::33")},
			nodes: []Node{node("a", ""), {Name: "b", Ready: true, Assignable: true, Subnets: []netip.Prefix{netip.MustParsePrefix("fd00:18::/64")}}},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("b", "fd00:18::33")}}},
		},
		{
			name:  "a node's own address is nobody's egress IP",
			objs:  []Object{obj("e", 0, nil, "172.18.0.12")},
			nodes: []Node{node("a", ""), {Name: "b", Ready: true, Assignable: true, Subnets: []netip.Prefix{netip.MustParsePrefix("172.18.0.12/16")}}},
			want: map[string]Result{"e": {Problems: []Problem{{IP: ip("172.18.0.12"), Reason: v1.ReasonIPIsNodeAddress,
				Message: "172.18.0.12 is node b's own address"}}}},
		},
		{
			name:  "the subnet's network and broadcast addresses are no host's",
			objs:  []Object{obj("e", 0, nil, "172.18.255.255", "172.18.0.0")},
			nodes: []Node{{Name: "b", Ready: true, Assignable: true, Subnets: []netip.Prefix{netip.MustParsePrefix("172.18.0.12/16")}}},
			want: map[string]Result{"e": {Problems: []Problem{
				{IP: ip("172.18.255.255"), Reason: v1.ReasonNoNodeForIP, Message: "no Ready, reachable node labelled k8s.ovn.org/egress-assignable has 172.18.255.255 in its subnets"},
				{IP: ip("172.18.0.0"), Reason: v1.ReasonNoNodeForIP, Message: "no Ready, reachable node labelled k8s.ovn.org/egress-assignable has 172.18.0.0 in its subnets"}}}},
		},
		{
			name:  "status repeats the spec's spelling",
			objs:  []Object{{Name: "e", IPs: []netip.Addr{ip("fd00:18::33")}, Spelled: map[netip.Addr]string{ip("fd00:18::33"): "fd00:18:0::33"}}},
			nodes: []Node{{Name: "b", Ready: true, Assignable: true, Subnets: []netip.Prefix{netip.MustParsePrefix("fd00:18::2/64")}}},
			want:  map[string]Result{"e": {Items: []v1.EgressIPStatusItem{item("b", "fd00:18:0::33")}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Assign(tc.objs, tc.nodes)
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
				t.Errorf("Assign (-want +got):\n%s", d)
			}
		})
	}
}
