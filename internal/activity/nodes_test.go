package activity

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// The fixture view answers NetworksOn too, from the same maps.

func (v view) NodePods(node string) ([]corev1.Pod, error) {
	if v.fail != "" {
		return nil, errors.New("cache not synced")
	}
	var out []corev1.Pod
	for _, ns := range slices.Sorted(maps.Keys(v.pods)) {
		for _, p := range v.pods[ns] {
			if p.Spec.NodeName == node {
				p.Namespace = ns
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func (v view) NamespaceNetworks(ns string) ([]string, error) {
	var out []string
	for n, list := range v.namespaces {
		if slices.Contains(list, ns) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (v view) EveryNode() ([]string, error) {
	var out []string
	for n, list := range v.namespaces {
		for _, ns := range list {
			if slices.ContainsFunc(v.services[ns], func(s corev1.Service) bool { return NeedsEveryNode(&s) }) {
				out = append(out, n)
				break
			}
		}
	}
	return out, nil
}

func (v view) EgressNetworks(node string) ([]string, error) {
	var out []string
	for n, list := range v.namespaces {
		for _, ns := range list {
			if slices.Contains(v.egress[ns], node) {
				out = append(out, n)
				break
			}
		}
	}
	return out, nil
}

func TestNetworksOn(t *testing.T) {
	finished := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	host := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	for _, tc := range []struct {
		name    string
		view    view
		node    string
		want    []string
		wantErr bool
	}{
		{name: "no pods: none", node: "n1", view: view{namespaces: map[string][]string{"blue": {"a"}}}},
		{name: "its pods' networks, a CUDN's through any of its namespaces", node: "n1", want: []string{"blue", "shared"}, view: view{
			namespaces: map[string][]string{"blue": {"a"}, "shared": {"b", "c"}, "red": {"d"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1"), pod("n1")}, "c": {pod("n1")}, "d": {pod("n2")}}}},
		{name: "finished and host-network pods do not count", node: "n1", view: view{
			namespaces: map[string][]string{"blue": {"a"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1", finished), pod("n1", host)}}}},
		{name: "a node-port service's network is everywhere", node: "n9", want: []string{"red"}, view: view{
			namespaces: map[string][]string{"blue": {"a"}, "red": {"b"}},
			services:   map[string][]corev1.Service{"b": {service(corev1.ServiceTypeNodePort)}}}},
		{name: "peers of networks with pods here, not transitively", node: "n1", want: []string{"blue", "red"}, view: view{
			namespaces: map[string][]string{"blue": {"a"}, "red": {"b"}, "green": {"c"}},
			connected:  map[string][]string{"blue": {"red"}, "red": {"blue", "green"}, "green": {"red"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}}}},
		{name: "networks of the namespaces it holds egress IPs for", node: "n2", want: []string{"blue"}, view: view{
			namespaces: map[string][]string{"blue": {"a"}, "red": {"b"}},
			connected:  map[string][]string{"blue": {"red"}},
			pods:       map[string][]corev1.Pod{"a": {pod("n1")}},
			egress:     map[string][]string{"a": {"n2"}}}},
		{name: "pods that cannot be read are an error", node: "n1", wantErr: true, view: view{
			namespaces: map[string][]string{"blue": {"a"}}, fail: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NetworksOn(tc.view, tc.node)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, slices.Sorted(maps.Keys(got))); err == nil && diff != "" {
				t.Errorf("NetworksOn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNetworksOnAgreesWithOf asks random clusters both ways: a network is
// in NetworksOn(node) exactly when Of(network) has the node.
func TestNetworksOnAgreesWithOf(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		v := view{namespaces: map[string][]string{}, connected: map[string][]string{}, pods: map[string][]corev1.Pod{}, services: map[string][]corev1.Service{}, egress: map[string][]string{}}
		var networks []string
		for i := range 5 {
			n := fmt.Sprintf("net%d", i)
			networks = append(networks, n)
			for ns := range 6 {
				if rng.IntN(4) == 0 {
					v.namespaces[n] = append(v.namespaces[n], fmt.Sprintf("ns%d", ns))
				}
			}
		}
		for _, a := range networks { // connects are symmetric
			for _, b := range networks {
				if a < b && rng.IntN(5) == 0 {
					v.connected[a] = append(v.connected[a], b)
					v.connected[b] = append(v.connected[b], a)
				}
			}
		}
		for ns := range 6 {
			name := fmt.Sprintf("ns%d", ns)
			for range rng.IntN(3) {
				p := pod(nodes[rng.IntN(len(nodes))])
				if rng.IntN(5) == 0 {
					p.Status.Phase = corev1.PodSucceeded
				}
				v.pods[name] = append(v.pods[name], p)
			}
			if rng.IntN(12) == 0 {
				v.services[name] = append(v.services[name], service(corev1.ServiceTypeNodePort))
			}
			if rng.IntN(4) == 0 {
				v.egress[name] = append(v.egress[name], nodes[rng.IntN(len(nodes))])
			}
		}
		on := map[string]map[string]bool{}
		for _, node := range nodes {
			got, err := NetworksOn(v, node)
			if err != nil {
				t.Fatal(err)
			}
			on[node] = got
		}
		for _, n := range networks {
			of, err := Of(v, n)
			if err != nil {
				t.Fatal(err)
			}
			for _, node := range nodes {
				if of.Has(node) != on[node][n] {
					t.Fatalf("seed %d: network %s on node %s: Of says %v (%v), NetworksOn says %v\nview: %+v",
						seed, n, node, of.Has(node), of, on[node][n], v)
				}
			}
		}
	}
}
