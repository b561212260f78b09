package zone_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/kubevirt"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/testing/clustertest"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// vmPod is a virt-launcher pod of VM vm1.
func vmPod(ns, name, node string) *corev1.Pod {
	p := newPod(ns, name, node, map[string]string{kubevirt.DomainAnnotation: "vm1", kubevirt.AllowLiveMigrationAnnotation: ""})
	p.Labels = map[string]string{kubevirt.AppLabel: kubevirt.VirtLauncher, kubevirt.VMNameLabel: "vm1"}
	return p
}

// TestVMPorts: a VM's pods share one port on a Layer2 network and its
// address, MAC and key, which outlive the migration's source pod. While a
// target exists, the source's and the target's zones bind the port to both
// chassis with activation-strategy=rarp, and a third zone to the source's;
// when the target's Southbound says the port was activated there (what
// ovn-controller writes on the VM's RARP, played here with ovn-sbctl), the
// target's zone records it on the target pod and every zone binds the
// port to the target alone. No zone has a port of the pods' own.
func TestVMPorts(t *testing.T) {
	c := clustertest.Start(t, env, config.Default(), "node-a", "node-b", "node-c")
	ctx := context.Background()
	// A /29: four assignable addresses (.3 to .6).
	ns, _ := udnIn(t, c.Admin, "vm", v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"203.203.0.0/29"}})
	key := podnet.Key(ns, "net")
	port := podnet.VMPortName(key, ns, "vm1")
	source := createPod(t, c.Admin, vmPod(ns, "virt-launcher-vm1-a", "node-a"))
	src := waitAnnotated(t, c.Admin, source, "default", key)[key]
	target := createPod(t, c.Admin, vmPod(ns, "virt-launcher-vm1-b", "node-b"))
	dst := waitAnnotated(t, c.Admin, target, "default", key)[key]
	if dst.IPs[0] != src.IPs[0] || dst.MAC != src.MAC || dst.TunnelID != src.TunnelID {
		t.Fatalf("the target's attachment %+v, want the source's %+v", dst, src)
	}
	options := func(node string) string {
		return c.Zones[node].MustNBCtl("--bare", "--columns=type,options", "find", "Logical_Switch_Port", "name="+port)
	}
	expect := func(node string, want ...string) {
		t.Helper()
		cmtest.Eventually(t, time.Minute, func() error {
			got := options(node)
			for _, w := range want {
				if !strings.Contains(got, w) {
					return fmt.Errorf("zone %s: port %s is %q, want %v", node, port, got, want)
				}
			}
			return nil
		})
	}
	both := "requested-chassis=chassis-node-a,chassis-node-b"
	expect("node-a", both, "activation-strategy=rarp")
	expect("node-b", both, "activation-strategy=rarp")
	expect("node-c", "remote", "requested-chassis=chassis-node-a")
	for _, node := range c.Nodes {
		for _, p := range []*corev1.Pod{source, target} {
			if out := c.Zones[node].MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+podnet.PortName(key, ns, p.Name)); strings.TrimSpace(out) != "" {
				t.Errorf("zone %s has a port of pod %s's own", node, p.Name)
			}
		}
	}

	// ovn-controller on node-b saw the VM's RARP (once northd has made the
	// port's binding).
	c.Zones["node-b"].MustSync()
	c.Zones["node-b"].MustSBCtl("set", "Port_Binding", port, "options:additional-chassis-activated=chassis-node-b")
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(target), target); err != nil {
			return err
		}
		if got := target.Annotations[kubevirt.ActivatedAnnotation]; got != "node-b" {
			return fmt.Errorf("target's %s is %q, want node-b", kubevirt.ActivatedAnnotation, got)
		}
		return nil
	})
	expect("node-a", "remote", "requested-chassis=chassis-node-b")
	expect("node-b", "requested-chassis=chassis-node-b")
	expect("node-c", "remote", "requested-chassis=chassis-node-b")
	if got := options("node-b"); strings.Contains(got, "activation-strategy") || strings.Contains(got, "remote") {
		t.Errorf("zone node-b: %q, want a local port bound to node-b alone", got)
	}

	// The source pod ends: the VM keeps its address. Three more pods take
	// the /29's other addresses, and a fourth finds none left.
	if err := c.Admin.Delete(ctx, source, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	cmtest.Eventually(t, time.Minute, func() error {
		if err := c.Admin.Get(ctx, client.ObjectKeyFromObject(source), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the source pod is still there (%v)", err)
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		p := createPod(t, c.Admin, newPod(ns, fmt.Sprintf("fill-%d", i), "node-c", nil))
		if got := waitAnnotated(t, c.Admin, p, "default", key)[key].IPs[0]; got == src.IPs[0] {
			t.Fatalf("pod %s got the VM's address %s", p.Name, got)
		}
	}
	last := createPod(t, c.Admin, newPod(ns, "fill-3", "node-c", nil))
	if msg := cmtest.WaitEvent(t, c.Admin, last, "Pod", "AddressAllocationFailed"); !strings.Contains(msg, "no address left") {
		t.Errorf("the fourth pod: %q, want no address left", msg)
	}
	expect("node-b", "requested-chassis=chassis-node-b")

	// The VM's last pod goes: its port goes, in every zone.
	if err := c.Admin.Delete(ctx, target, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for _, node := range c.Nodes {
		cmtest.Eventually(t, time.Minute, func() error {
			if got := options(node); got != "" {
				return fmt.Errorf("zone %s still has port %s: %q", node, port, got)
			}
			return nil
		})
	}
}
