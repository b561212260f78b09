package registry

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/allocator"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
)

func TestNetworksAllocate(t *testing.T) {
	n := NewNetworks(2)
	a, err := n.Allocate("a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != 1 || len(a.TunnelKeys) != 1 || a.TunnelKeys[0] != allocator.FirstAllocatedKey {
		t.Fatalf("a = %+v", a)
	}
	again, _ := n.Allocate("a", 1)
	if diff := cmp.Diff(a, again); diff != "" {
		t.Fatalf("second Allocate changed the allocation: %s", diff)
	}
	if _, err := n.Allocate("b", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Allocate("c", 0); !errors.Is(err, ErrLimit) {
		t.Fatalf("third network: err = %v, want ErrLimit", err)
	}
	n.Release("a")
	c, err := n.Allocate("c", 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID == 2 || c.TunnelKeys[0] == allocator.FirstAllocatedKey {
		t.Fatalf("c = %+v reuses b's ID or a's key right away", c)
	}
}

func TestRecoverNetworks(t *testing.T) {
	nad := func(ns, name, config string, created int64, ann map[string]string) nadv1.NetworkAttachmentDefinition {
		return nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann, CreationTimestamp: metav1.Unix(created, 0)},
			Spec:       nadv1.NetworkAttachmentDefinitionSpec{Config: config},
		}
	}
	cfg := func(name string) string {
		return `{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"` + name + `","topology":"layer2","role":"primary","subnets":"10.0.0.0/24","netAttachDefName":"x/y"}`
	}
	nads := []nadv1.NetworkAttachmentDefinition{
		nad("a", "cluster.udn.shared", cfg("cluster.udn.shared"), 10, map[string]string{"k8s.ovn.org/network-id": "5", "k8s.ovn.org/tunnel-keys": "[16715777]"}),
		nad("b", "cluster.udn.shared", cfg("cluster.udn.shared"), 11, map[string]string{"k8s.ovn.org/network-id": "5", "k8s.ovn.org/tunnel-keys": "[16715777]"}),
		nad("c", "older", cfg("c.older"), 1, map[string]string{"k8s.ovn.org/network-id": "9"}),
		nad("d", "dup", cfg("d.dup"), 20, map[string]string{"k8s.ovn.org/network-id": "9"}), // collides: younger loses
		nad("e", "bridge", `{"type":"bridge","name":"e"}`, 1, map[string]string{"k8s.ovn.org/network-id": "3"}),
		nad("f", "noid", cfg("f.noid"), 1, nil),
		nad("g", "bad", cfg("g.bad"), 1, map[string]string{"k8s.ovn.org/network-id": "x"}),
	}
	n := NewNetworks(0)
	count, errs := RecoverNetworks(n, nads)
	if count != 2 || len(errs) != 2 {
		t.Fatalf("recovered %d networks with errors %v; want 2 networks, 2 errors (collision, bad annotation)", count, errs)
	}
	want := map[string]Network{"cluster.udn.shared": {ID: 5, TunnelKeys: []int{16715777}}, "c.older": {ID: 9, TunnelKeys: []int{}}}
	got := n.All()
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b []int) bool { return len(a) == len(b) && (len(a) == 0 || a[0] == b[0]) })); diff != "" {
		t.Fatalf("recovered (-want +got):\n%s", diff)
	}
	fresh, err := n.Allocate("d.dup", 0)
	if err != nil || fresh.ID == 9 || fresh.ID == 5 {
		t.Fatalf("d.dup allocated afresh = %+v, %v; must not reuse a recovered ID", fresh, err)
	}
}

// TestWholeIDSpace: with the default limit, 4095 networks get the IDs 1..4095
// (0 is the default network's); the 4096th user-defined network is refused
// with ErrLimit naming it, and takes the first ID released, which is
// announced on Released.
func TestWholeIDSpace(t *testing.T) {
	n := NewNetworks(config.MaxNetworkID)
	released := n.Released()
	seen := map[int]bool{}
	for i := 0; i < config.MaxNetworkID; i++ {
		got, err := n.Allocate(fmt.Sprintf("ns%d.net", i), 0)
		if err != nil {
			t.Fatalf("network %d: %v", i, err)
		}
		if got.ID < 1 || got.ID > config.MaxNetworkID || seen[got.ID] {
			t.Fatalf("network %d got ID %d (out of range or repeated)", i, got.ID)
		}
		seen[got.ID] = true
	}
	_, err := n.Allocate("late.net", 0)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "late.net") {
		t.Fatalf("network 4096: err = %v, want ErrLimit naming it", err)
	}
	select {
	case <-released:
		t.Fatal("release announced before any release")
	default:
	}
	freed, _ := n.Get("ns17.net")
	n.Release("ns17.net")
	n.Release("ns17.net") // a second release of nothing announces nothing more
	<-released
	select {
	case <-released:
		t.Fatal("releasing a network that holds nothing was announced")
	default:
	}
	got, err := n.Allocate("late.net", 0)
	if err != nil || got.ID != freed.ID {
		t.Fatalf("after a release: %+v, %v; want ID %d", got, err, freed.ID)
	}
}
