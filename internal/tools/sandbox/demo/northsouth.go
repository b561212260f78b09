package demo

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// DemoEgressClients are the pods the demo sends to the outside world from:
// the default network, a Layer3 UDN, a Layer2 UDN and a CUDN.
var DemoEgressClients = []string{"plain/a", "l3-blue/a", "l2-blue/a", "shared-a/a"}

// DemoSameAddressPair are two pods of two Layer2 tenants with the same
// subnet, on the same node, with the same address: they egress at once from
// the same source port.
var DemoSameAddressPair = []string{"l2-blue/a", "l2-red/a"}

// DemoSecondaryEgress is a pod whose default route is a secondary network
// with an egress gateway (examples/secondary-egress.yaml), and the gateway
// its route to the outside must take.
var DemoSecondaryEgress = struct{ Pod, Via string }{"egress-sec/a", "10.163.0.1 dev net1"}

// demoSourcePort is the source port both pods of DemoSameAddressPair use.
const demoSourcePort = 41000

// NorthSouthChecks checks, with real packets, what the outside world sees:
// each DemoEgressClients pod's connection arrives from its node's address;
// DemoSameAddressPair connect at once from the same address and port and
// both get through; every NodePort Service of the cluster answers from
// outside on every node's address with one of its own namespace's pods; and
// a datagram from outside too large for a network gets "fragmentation
// needed" with the network's MTU (pathMTUCheck).
// Rows whose pods do not exist are left out. Each check retries for 30 s
// (the first packet of a path may wait for address resolution; a loaded
// machine, the deploy test's, has needed more than 10 s).
func NorthSouthChecks(ctx context.Context, dir, binary string, c client.Client, nodes int) ([]AppCheck, error) {
	l, err := sandbox.NewLayout(dir)
	if err != nil {
		return nil, err
	}
	server := fmt.Sprintf("%s:%d", sandbox.ExternalServerIP, sandbox.ExternalPort)
	var out []AppCheck
	var jobs []func(*AppCheck)
	retry := func(a *AppCheck, ask func() (string, error)) {
		a.Err = proc.WaitFor(30*time.Second, 200*time.Millisecond, func() (bool, error) {
			got, err := ask()
			a.Got = got
			return err == nil && got == a.Want, err
		})
		if a.Got == a.Want {
			a.Err = nil
		}
	}
	podNode := func(ref string) (string, bool) {
		ns, name, _ := strings.Cut(ref, "/")
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil || p.Spec.NodeName == "" {
			return "", false
		}
		return p.Spec.NodeName, true
	}
	for _, ref := range DemoEgressClients {
		node, ok := podNode(ref)
		if !ok {
			continue
		}
		out = append(out, AppCheck{Name: "egress, the outside sees the node", From: ref, Target: server, Want: sandbox.NodeAddr(node)})
		jobs = append(jobs, func(a *AppCheck) {
			retry(a, func() (string, error) {
				s, err := run(ctx, dir, ref, binary, "sandbox", "probe", server)
				return asNodeAddr(node, strings.TrimSpace(s)), err
			})
		})
	}
	if node, ok := podNode(DemoSecondaryEgress.Pod); ok {
		ref := DemoSecondaryEgress.Pod
		out = append(out,
			AppCheck{Name: "egress through a secondary network (default-route): its route", From: ref, Target: sandbox.ExternalServerIP, Want: "via " + DemoSecondaryEgress.Via},
			AppCheck{Name: "egress through a secondary network (default-route), the outside sees the node", From: ref, Target: server, Want: sandbox.NodeAddr(node)})
		jobs = append(jobs, func(a *AppCheck) {
			retry(a, func() (string, error) {
				s, err := run(ctx, dir, ref, "ip", "-4", "route", "get", sandbox.ExternalServerIP)
				return routeVia(s), err
			})
		}, func(a *AppCheck) {
			retry(a, func() (string, error) {
				s, err := run(ctx, dir, ref, binary, "sandbox", "probe", server)
				return asNodeAddr(node, strings.TrimSpace(s)), err
			})
		})
		// Egress is an administrator's (a ClusterUserDefinedNetwork's): the
		// namespace's own network asking for it is refused (a dry run).
		ns, _, _ := strings.Cut(ref, "/")
		out = append(out, AppCheck{Name: "egress on a namespace's own network (UserDefinedNetwork)", From: ns, Target: "the API server", Want: "refused"})
		jobs = append(jobs, func(a *AppCheck) {
			udn := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-way-out"},
				Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.164.0.0/24"}, Egress: v1.EgressGateway}}
			switch err := c.Create(ctx, udn, client.DryRunAll); {
			case err == nil:
				a.Got = "accepted"
			case apierrors.IsInvalid(err) && strings.Contains(err.Error(), "egress is allowed only in a ClusterUserDefinedNetwork"):
				a.Got = "refused"
			default:
				a.Err = err
			}
		})
	}
	// The pair runs as one job: both at once, then both rows filled.
	if len(DemoSameAddressPair) == 2 {
		nodeA, okA := podNode(DemoSameAddressPair[0])
		nodeB, okB := podNode(DemoSameAddressPair[1])
		if okA && okB && nodeA == nodeB {
			first := len(out)
			for _, ref := range DemoSameAddressPair {
				out = append(out, AppCheck{Name: "same address and source port, two tenants at once", From: ref,
					Target: server + " from port " + strconv.Itoa(demoSourcePort), Want: sandbox.NodeAddr(nodeA)})
			}
			jobs = append(jobs, func(*AppCheck) {
				pair := []func(*AppCheck){}
				for _, ref := range DemoSameAddressPair {
					pair = append(pair, func(a *AppCheck) {
						retry(a, func() (string, error) {
							s, err := run(ctx, dir, ref, binary, "sandbox", "probe", "--local-port", strconv.Itoa(demoSourcePort), server)
							return asNodeAddr(nodeA, strings.TrimSpace(s)), err
						})
					})
				}
				runChecks(out[first:first+2], pair)
			}, func(*AppCheck) {})
		}
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs); err != nil {
		return nil, err
	}
	for _, s := range svcs.Items {
		if s.Spec.Type != corev1.ServiceTypeNodePort || len(s.Spec.Ports) == 0 {
			continue
		}
		np := s.Spec.Ports[0].NodePort
		for i := 1; i <= nodes; i++ {
			target := fmt.Sprintf("%s:%d", sandbox.NodeAddr(sandbox.NodeName(i)), np)
			out = append(out, AppCheck{Name: "NodePort from outside (" + s.Namespace + "/" + s.Name + ")", From: "outside",
				Target: target, Want: "a " + s.Namespace + " pod"})
			ns := s.Namespace
			jobs = append(jobs, func(a *AppCheck) {
				retry(a, func() (string, error) {
					cmd := sandbox.Command(ctx, l.ExternalNetns(), []string{binary, "sandbox", "probe", target})
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					b, err := cmd.Output()
					got := strings.TrimSpace(string(b))
					if err != nil {
						// What failed (refused, timed out) is the answer shown.
						got = strings.TrimSpace(stderr.String())
					} else if strings.HasPrefix(got, ns+"/") {
						got = "a " + ns + " pod"
					}
					return got, err
				})
			})
		}
	}
	// Path MTU discovery through a gateway router (gateway_mtu on its port
	// towards the network): a datagram from outside too large for the
	// network is answered with "fragmentation needed", for the first
	// NodePort Service's pods, through a UDP twin of it made for the check.
	for _, s := range svcs.Items {
		if s.Spec.Type != corev1.ServiceTypeNodePort || len(s.Spec.Selector) == 0 {
			continue
		}
		mtu := config.Default().MTU
		out = append(out, AppCheck{Name: "path MTU from outside, a UDP node port (" + s.Namespace + ")", From: "outside",
			Target: sandbox.NodeAddr(sandbox.NodeName(1)) + ", 1500-byte datagrams, DF", Want: strconv.Itoa(mtu)})
		jobs = append(jobs, func(a *AppCheck) { a.Got, a.Err = pathMTUCheck(ctx, dir, c, s) })
		break
	}
	runChecks(out, jobs)
	return out, nil
}

// pathMTUCheck makes a UDP NodePort twin of svc, measures the path MTU from
// outside to it on node1 (PathMTU), and deletes the twin.
func pathMTUCheck(ctx context.Context, dir string, c client.Client, svc corev1.Service) (string, error) {
	twin := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-mtu"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: svc.Spec.Selector,
			Ports: []corev1.ServicePort{{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 9, TargetPort: intstr.FromInt32(9)}}}}
	if err := c.Create(ctx, twin); err != nil {
		return "", err
	}
	defer func() { _ = c.Delete(context.Background(), twin) }()
	target := fmt.Sprintf("%s:%d", sandbox.NodeAddr(sandbox.NodeName(1)), twin.Spec.Ports[0].NodePort)
	mtu, err := PathMTU(ctx, dir, target, 20*time.Second)
	return strconv.Itoa(mtu), err
}

// asNodeAddr returns the node's address (nodeAddr) when got is the node's
// address on any uplink (egress through a router behind a bridge of its
// own leaves from the node's address on that segment), else got.
func asNodeAddr(node, got string) string {
	i, _ := strconv.Atoi(strings.TrimPrefix(node, "node"))
	for k := 2; k <= sandbox.MaxUplinks; k++ {
		if got == sandbox.UplinkNodeAddr(k, i) {
			return sandbox.NodeAddr(node)
		}
	}
	return got
}

// routeVia is "via GATEWAY dev INTERFACE" of an `ip route get` answer, or
// the answer itself when it has no gateway.
func routeVia(answer string) string {
	f := strings.Fields(answer)
	var via, dev string
	for i := 0; i+1 < len(f); i++ {
		switch f[i] {
		case "via":
			via = f[i+1]
		case "dev":
			dev = f[i+1]
		}
	}
	if via == "" {
		return strings.TrimSpace(answer)
	}
	return "via " + via + " dev " + dev
}
