package netalloc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/netalloc/whereused"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// TestSlicesWhereUsed: with slices only where used (cluster-manager's
// default), a node holds a primary Layer3 network's slice while a pod of
// the network runs there, every node does while a node-port Service of the
// network exists, and a slice is released no sooner than the delay after
// its last use and given back to the same node when it uses the network
// again. The default network and a secondary Layer3 network stay on every
// node; a restarted cluster-manager keeps a slice no longer used for a
// whole delay and writes no Node it need not.
func TestSlicesWhereUsed(t *testing.T) {
	ctx := context.Background()
	c := cmtest.Admin(t, env)
	opts := clustermanager.Options{Cluster: fleetConfig(), InactiveGracePeriod: 2 * time.Second}
	stop := cmtest.StartWith(t, env, opts)
	f := newFleet(t, c)
	sec := f.addNetwork(false)
	primary := func(prefix string) (string, string) {
		ns := cmtest.Namespace(t, c, prefix, map[string]string{v1.PrimaryNetworkLabel: ""})
		u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.60.0.0/16/24"}}}
		if err := c.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		name := netconf.UDNNetworkName(ns, "net")
		f.udns[name] = u // deleted by the fleet's teardown
		cmtest.WaitNetworkCreated(t, c, u)
		return ns, name
	}
	blueNS, blue := primary("blue")
	redNS, red := primary("red")
	nodes := []string{f.addNode(), f.addNode(), f.addNode()}

	// holders returns, per network, the test's nodes holding a slice of
	// it, once every node has its ID, the default network's and the
	// secondary network's slices.
	holders := func() (map[string][]string, nodeinfo.Subnets, error) {
		s, err := observe(t, c)
		if err != nil {
			return nil, nil, err
		}
		out := map[string][]string{}
		for _, n := range nodes {
			if _, ok := s.nodeID[n]; !ok {
				return nil, nil, fmt.Errorf("node %s has no ID yet", n)
			}
			for _, always := range []string{nodeinfo.DefaultNetwork, sec} {
				if len(s.subnets[n][always]) == 0 {
					return nil, nil, fmt.Errorf("node %s has no slice of %s", n, always)
				}
			}
			for _, network := range []string{blue, red} {
				if len(s.subnets[n][network]) > 0 {
					out[network] = append(out[network], n)
				}
			}
		}
		return out, s.subnets[nodes[0]], nil
	}
	var first nodeinfo.Subnets
	expect := func(what string, want map[string][]string) {
		t.Helper()
		cmtest.Eventually(t, time.Minute, func() error {
			got, n0, err := holders()
			if err != nil {
				return err
			}
			for _, network := range []string{blue, red} {
				if !slices.Equal(got[network], want[network]) {
					return fmt.Errorf("%s: %s is held by %v, want %v", what, network, got[network], want[network])
				}
			}
			first = n0
			return nil
		})
	}
	expect("no pods", nil)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: blueNS, Name: "p"},
		Spec: corev1.PodSpec{NodeName: nodes[0], Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	expect("a pod of blue on the first node", map[string][]string{blue: nodes[:1]})
	slice := first[blue]

	delay := whereused.ReleaseDelay(opts.InactiveGracePeriod)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: redNS, Name: "np"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	expect("a node-port Service of red", map[string][]string{blue: nodes[:1], red: nodes})
	gone := time.Now() // before the deletion: the delay cannot start earlier
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	expect("red's Service deleted, after the delay", map[string][]string{blue: nodes[:1]})
	if took := time.Since(gone); took < delay {
		t.Errorf("red's slices were released %s after its Service left, before the delay (%s)", took, delay)
	}

	// blue on the second node too, then no longer on the first: released
	// after the delay, and given back when a pod of blue comes back
	// (next-fit alone would give it the third slice).
	newPod := func(name, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: blueNS, Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	second := newPod("q", nodes[1])
	expect("a pod of blue on the second node", map[string][]string{blue: nodes[:2]})
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	expect("blue's pod left the first node, after the delay", map[string][]string{blue: nodes[1:2]})
	pod = newPod("p", nodes[0])
	expect("blue's pod back on the first node", map[string][]string{blue: nodes[:2]})
	if !slices.Equal(first[blue], slice) {
		t.Errorf("the first node got %v of blue back, want its old slice %v", first[blue], slice)
	}

	// A restarted cluster-manager keeps what is held, a slice no longer
	// used for a whole delay from the restart; the third node, which
	// holds nothing of blue or red, is not written through all this.
	if err := c.Delete(ctx, second, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	stop()
	before := resourceVersions(t, c)
	restart := time.Now()
	cmtest.StartWith(t, env, opts)
	expect("blue's pod left the second node, after the delay from the restart", map[string][]string{blue: nodes[:1]})
	if took := time.Since(restart); took < delay {
		t.Errorf("the second node's slice was released %s after the restart, before the delay (%s)", took, delay)
	}
	after := resourceVersions(t, c)
	if before["node/"+nodes[2]] != after["node/"+nodes[2]] {
		t.Errorf("node %s was written (resource version %s, then %s)", nodes[2], before["node/"+nodes[2]], after["node/"+nodes[2]])
	}
	if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}
