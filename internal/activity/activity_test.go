package activity

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
)

// view is a cluster for Of: networks' namespaces, connects, pods and
// services by namespace.
type view struct {
	namespaces map[string][]string
	connected  map[string][]string
	pods       map[string][]corev1.Pod
	services   map[string][]corev1.Service
	egress     map[string][]string // namespace → nodes holding its egress IPs
	fail       string              // a namespace whose pods cannot be listed
}

func (v view) NetworkNamespaces(n string) ([]string, error) { return v.namespaces[n], nil }
func (v view) Connected(n string) ([]string, error)         { return v.connected[n], nil }
func (v view) NamespacePods(ns string) ([]corev1.Pod, error) {
	if ns == v.fail {
		return nil, errors.New("cache not synced")
	}
	return v.pods[ns], nil
}
func (v view) NamespaceServices(ns string) ([]corev1.Service, error) { return v.services[ns], nil }
func (v view) NamespaceEgressNodes(ns string) ([]string, error)      { return v.egress[ns], nil }

func pod(node string, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func service(t corev1.ServiceType, externalIPs ...string) corev1.Service {
	return corev1.Service{Spec: corev1.ServiceSpec{Type: t, ExternalIPs: externalIPs}}
}

func TestOf(t *testing.T) {
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	host := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	pending := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	deleting := func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	for _, tc := range []struct {
		name    string
		view    view
		network string
		want    string // Nodes.String()
		wantErr bool
	}{
		{name: "no namespace: nowhere", view: view{}, network: "blue", want: "no node"},
		{name: "namespace without pods: nowhere", view: view{namespaces: map[string][]string{"blue": {"a"}}}, network: "blue", want: "no node"},
		{name: "pods' nodes", network: "blue", want: "n1,n3", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1"), pod("n3"), pod("n1")}}}},
		{name: "unscheduled, finished, failed and host-network pods do not count", network: "blue", want: "n4", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			pods:       map[string][]corev1.Pod{"a": {pod(""), pod("n1", finished), pod("n2", failed), pod("n3", host), pod("n4", pending)}}}},
		{name: "a pod being deleted still counts", network: "blue", want: "n2", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n2", deleting)}}}},
		{name: "a CUDN: every namespace's pods", network: "shared", want: "n1,n2", view: view{
			namespaces: map[string][]string{"shared": {"a", "b"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}, "b": {pod("n2")}, "c": {pod("n3")}}}},
		{name: "a node-port service: every node", network: "blue", want: "every node", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}},
			services:   map[string][]corev1.Service{"a": {service(corev1.ServiceTypeClusterIP), service(corev1.ServiceTypeNodePort)}}}},
		{name: "a load balancer service: every node", network: "blue", want: "every node", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			services:   map[string][]corev1.Service{"a": {service(corev1.ServiceTypeLoadBalancer)}}}},
		{name: "external IPs: every node", network: "blue", want: "every node", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			services:   map[string][]corev1.Service{"a": {service(corev1.ServiceTypeClusterIP, "192.0.2.10")}}}},
		{name: "cluster IP services only: pods' nodes", network: "blue", want: "n1", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}},
			services:   map[string][]corev1.Service{"a": {service(corev1.ServiceTypeClusterIP), service("")}}}},
		{name: "connected networks' pods count, not their node ports, and not transitively", network: "blue", want: "n1,n2", view: view{
			namespaces: map[string][]string{"blue": {"a"}, "red": {"b"}, "green": {"c"}},
			connected:  map[string][]string{"blue": {"red", "blue"}, "red": {"blue", "green"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}, "b": {pod("n2")}, "c": {pod("n3")}},
			services:   map[string][]corev1.Service{"b": {service(corev1.ServiceTypeNodePort)}}}},
		{name: "a connected network's node ports make it everywhere, not its peer", network: "red", want: "every node", view: view{
			namespaces: map[string][]string{"blue": {"a"}, "red": {"b"}},
			connected:  map[string][]string{"red": {"blue"}},
			services:   map[string][]corev1.Service{"b": {service(corev1.ServiceTypeNodePort)}}}},
		{name: "egress nodes of its namespaces, not of a connected peer's", network: "blue", want: "n1,n2", view: view{
			namespaces: map[string][]string{"blue": {"a"}, "red": {"b"}},
			connected:  map[string][]string{"blue": {"red"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}},
			egress:     map[string][]string{"a": {"n2"}, "b": {"n3"}}}},
		{name: "a namespace that cannot be read is an error", network: "blue", wantErr: true, view: view{
			namespaces: map[string][]string{"blue": {"a", "b"}}, fail: "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Of(tc.view, tc.network)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got.String()); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodes(t *testing.T) {
	var zero Nodes
	if !zero.All() || !zero.Has("anything") || zero.Names() != nil {
		t.Errorf("the zero value must be every node: %v", zero)
	}
	none := On()
	if none.All() || none.Has("n1") || none.String() != "no node" {
		t.Errorf("On() must be no node: %v", none)
	}
	a, b := On("n2", "n1"), On("n3")
	if diff := cmp.Diff([]string{"n1", "n2", "n3"}, a.Union(b).Names()); diff != "" {
		t.Errorf("Union (-want +got):\n%s", diff)
	}
	if a.Union(b).Len() != 3 || !a.Union(Everywhere()).All() || !Everywhere().Union(a).All() {
		t.Error("Union with every node must be every node")
	}
	if !a.Equal(On("n1", "n2")) || a.Equal(b) || a.Equal(Everywhere()) || !Everywhere().Equal(zero) {
		t.Error("Equal")
	}
	if a.Union(b); a.Len() != 2 {
		t.Error("Union must not change its receiver")
	}
}

func TestGrace(t *testing.T) {
	g := &Grace{Period: time.Minute}
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	type step struct {
		at       time.Duration
		cur      Nodes
		want     string
		wantNext time.Duration
	}
	for i, s := range []step{
		{at: 0, cur: On("n1", "n2"), want: "n1,n2"},
		{at: 10 * time.Second, cur: On("n1"), want: "n1,n2", wantNext: time.Minute}, // n2's last pod left: kept a minute from now
		{at: 30 * time.Second, cur: On("n1", "n2"), want: "n1,n2"},                  // a pod came back: no teardown
		{at: 40 * time.Second, cur: On("n1"), want: "n1,n2", wantNext: time.Minute}, // it left again: a new period
		{at: 90 * time.Second, cur: On("n1"), want: "n1,n2", wantNext: 10 * time.Second},
		{at: 100 * time.Second, cur: On("n1"), want: "n1"}, // a minute after it left: gone
		{at: 110 * time.Second, cur: On(), want: "n1", wantNext: time.Minute},
		{at: 120 * time.Second, cur: Everywhere(), want: "every node"},
		{at: 130 * time.Second, cur: On("n3"), want: "every node", wantNext: time.Minute}, // no longer everywhere: every node kept a minute
		{at: 150 * time.Second, cur: Everywhere(), want: "every node"},                    // everywhere again: no teardown
		{at: 160 * time.Second, cur: On("n3"), want: "every node", wantNext: time.Minute}, // a new period
		{at: 200 * time.Second, cur: On("n3"), want: "every node", wantNext: 20 * time.Second},
		{at: 220 * time.Second, cur: On("n3"), want: "n3"}, // a minute later: only where used (every node is not remembered node by node)
	} {
		got, next := g.Apply("blue", s.cur, t0.Add(s.at))
		if got.String() != s.want || next != s.wantNext {
			t.Errorf("step %d at %v: got %v (next %v), want %s (next %v)", i, s.at, got, next, s.want, s.wantNext)
		}
	}
	// A node seen long ago and not since (no Apply meanwhile) still gets
	// its whole period from the Apply that finds it gone.
	g.Apply("green", On("n1", "n2"), t0)
	if got, next := g.Apply("green", On("n1"), t0.Add(time.Hour)); got.String() != "n1,n2" || next != time.Minute {
		t.Errorf("a node that left an hour after it was last seen: %v (next %v), want kept a minute", got, next)
	}
	// Networks are remembered apart, and a forgotten one starts afresh.
	g.Apply("red", On("n9"), t0)
	if got, _ := g.Apply("blue", On(), t0.Add(221*time.Second)); got.String() != "n3" {
		t.Errorf("blue after red: %v", got)
	}
	g.Forget("red")
	if got, _ := g.Apply("red", On(), t0.Add(time.Second)); got.String() != "no node" {
		t.Errorf("red after Forget: %v", got)
	}
	// No period: nothing is kept.
	z := &Grace{}
	z.Apply("blue", On("n1"), t0)
	if got, next := z.Apply("blue", On(), t0); got.String() != "no node" || next != 0 {
		t.Errorf("zero period: %v %v", got, next)
	}
	z.Apply("blue", Everywhere(), t0)
	if got, next := z.Apply("blue", On("n1"), t0); got.String() != "n1" || next != 0 {
		t.Errorf("zero period, no longer everywhere: %v %v", got, next)
	}
}

func TestEgressNodes(t *testing.T) {
	eip := func(name string, sel map[string]string, nodes ...string) v1.EgressIP {
		e := v1.EgressIP{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.EgressIPSpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: sel}}}
		for i, n := range nodes {
			e.Status.Items = append(e.Status.Items, v1.EgressIPStatusItem{Node: n, EgressIP: fmt.Sprintf("192.0.2.%d", i+1)})
		}
		return e
	}
	eips := []v1.EgressIP{
		eip("a", map[string]string{"team": "blue"}, "n1", "n2"),
		eip("b", map[string]string{"team": "blue"}, "n2", "n3"),
		eip("c", map[string]string{"team": "red"}, "n4"),
		eip("unassigned", map[string]string{"team": "green"}),
	}
	assignable := []string{"n2", "n5"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"selected by two objects: their holders once, and the assignable nodes", map[string]string{"team": "blue", "x": "y"}, []string{"n1", "n2", "n3", "n5"}},
		{"selected by one", map[string]string{"team": "red"}, []string{"n4", "n2", "n5"}},
		{"selected by an object that holds nothing yet: the assignable nodes", map[string]string{"team": "green"}, []string{"n2", "n5"}},
		{"selected by none: nowhere", map[string]string{"team": "pink"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, EgressNodes(eips, tc.labels, assignable)); d != "" {
				t.Errorf("EgressNodes (-want +got):\n%s", d)
			}
		})
	}
	moved := eip("a", map[string]string{"team": "blue"}, "n1", "n3")
	reselected := eip("a", map[string]string{"team": "red"}, "n1", "n2")
	reordered := eip("a", map[string]string{"team": "blue"}, "n2", "n1")
	for _, tc := range []struct {
		name          string
		before, after *v1.EgressIP
		nodes         []string
		assignable    bool
	}{
		{"created unassigned", nil, ptr(eip("x", nil)), nil, true},
		{"created assigned", nil, &eips[0], []string{"n1", "n2"}, true},
		{"deleted assigned", &eips[0], nil, []string{"n1", "n2"}, true},
		{"a node replaced", &eips[0], &moved, []string{"n2", "n3"}, false},
		{"its selector changed", &eips[0], &reselected, nil, true},
		{"the same nodes in another order", &eips[0], &reordered, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, assignable := EgressChange(tc.before, tc.after)
			if d := cmp.Diff(tc.nodes, nodes); d != "" || assignable != tc.assignable {
				t.Errorf("EgressChange: assignable %v, want %v; nodes (-want +got):\n%s", assignable, tc.assignable, d)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
