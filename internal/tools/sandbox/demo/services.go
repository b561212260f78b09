package demo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
)

// DemoServiceClients are the pods the demo reaches Services from: one per
// network of the examples that has a Service, and one of another tenant with
// the same subnet.
var DemoServiceClients = []string{"plain/a", "shop/a", "l3-blue/a", "l2-blue/a"}

// DemoServiceRequests is how many requests the demo sends each reachable
// Service (they must all be answered by its backends, and by more than one).
const DemoServiceRequests = 6

// NamespaceNetwork returns the name of a namespace's primary network
// ("default" for the cluster default network, "" when undecided or none).
func NamespaceNetwork(ctx context.Context, c client.Client, namespace string) (string, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return "", err
	}
	nads, err := podnet.NamespaceNADs(ctx, c, namespace)
	if err != nil {
		return "", err
	}
	p, ok := podnet.NamespacePrimary(ns, nads, v1.PrimaryNetworkLabel)
	if !ok {
		return "", nil
	}
	return p.Network, nil
}

// ServiceChecks checks every Service with a selector in namespaces from each
// client pod: a client on the Service's network gets every one of requests
// answers from the Service's Ready pods, and from more than one; a client on
// another network gets no answer. Pods with a primary user-defined network also resolve the
// API server's name through the cluster DNS. Checks run in parallel.
func ServiceChecks(ctx context.Context, dir string, c client.Client, namespaces, clients []string, requests int) ([]AppCheck, error) {
	networks := map[string]string{}
	networkOf := func(ns string) (string, error) {
		if n, ok := networks[ns]; ok {
			return n, nil
		}
		n, err := NamespaceNetwork(ctx, c, ns)
		networks[ns] = n
		return n, err
	}
	var out []AppCheck
	var jobs []func(*AppCheck)
	add := func(a AppCheck, do func(*AppCheck)) {
		out = append(out, a)
		jobs = append(jobs, do)
	}
	for _, ns := range namespaces {
		var svcs corev1.ServiceList
		if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		sort.Slice(svcs.Items, func(i, j int) bool { return svcs.Items[i].Name < svcs.Items[j].Name })
		svcNet, err := networkOf(ns)
		if err != nil {
			return nil, err
		}
		for _, s := range svcs.Items {
			if len(s.Spec.Selector) == 0 || s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
				continue
			}
			backends, err := readyBackends(ctx, c, &s)
			if err != nil {
				return nil, err
			}
			url := fmt.Sprintf("http://%s:%d/hostname", s.Spec.ClusterIP, s.Spec.Ports[0].Port)
			for _, from := range clients {
				fromNS, _, _ := strings.Cut(from, "/")
				clientNet, err := networkOf(fromNS)
				if err != nil {
					return nil, err
				}
				target := fmt.Sprintf("%s/%s %s", ns, s.Name, url)
				if clientNet == svcNet {
					add(AppCheck{Name: "Service, same network (" + svcNet + ")", From: from, Target: target, Want: "its pods, spread"},
						func(a *AppCheck) { a.Got, a.Err = spread(ctx, dir, from, url, backends, requests) })
					continue
				}
				add(AppCheck{Name: "Service of another network (" + svcNet + ")", From: from, Target: target, Want: "no answer"},
					func(a *AppCheck) {
						got, err := Get(ctx, dir, from, url)
						var lookup *LookupError
						switch {
						case errors.As(err, &lookup):
							a.Err = err // no client pod: the check did not run
						case err == nil:
							a.Got = "answered " + strings.TrimSpace(got)
						default:
							a.Got = "no answer"
						}
					})
			}
		}
	}
	kapi := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, kapi); err != nil {
		return nil, err
	}
	for _, from := range clients {
		fromNS, _, _ := strings.Cut(from, "/")
		if n, err := networkOf(fromNS); err != nil || n == "default" {
			continue
		}
		name := "kubernetes.default.svc." + sandbox.DNSDomain
		add(AppCheck{Name: "Cluster DNS from a UDN pod (via eth0)", From: from, Target: name, Want: kapi.Spec.ClusterIP},
			func(a *AppCheck) {
				// A pod just started may lose its first queries (its first
				// packets wait for the datapath's flows): retried briefly,
				// as a resolver would.
				a.Err = proc.WaitFor(10*time.Second, 200*time.Millisecond, func() (bool, error) {
					got, err := run(ctx, dir, from, "getent", "hosts", name)
					if f := strings.Fields(got); err == nil && len(f) > 0 {
						a.Got = f[0]
					}
					return err == nil && a.Got == a.Want, err
				})
			})
	}
	runChecks(out, jobs)
	return out, nil
}

// readyBackends returns the names of a Service's Ready pods.
func readyBackends(ctx context.Context, c client.Client, s *corev1.Service) (map[string]bool, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(s.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(s.Spec.Selector)}); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && kubeobj.PodReady(&p) {
			out[p.Name] = true
		}
	}
	return out, nil
}

// spread asks url requests times from a pod: every answer must come
// from backends, and more than one backend must answer. A Service just
// created may not answer yet: retried briefly.
func spread(ctx context.Context, dir, from, url string, backends map[string]bool, requests int) (string, error) {
	// The client pod's namespace once (a lookup is not an answer).
	c, err := sandbox.Client(dir)
	if err != nil {
		return "", err
	}
	ns, err := sandbox.PodNetns(ctx, dir, c, from)
	if err != nil {
		return "", err
	}
	got := ""
	err = proc.WaitFor(10*time.Second, 200*time.Millisecond, func() (bool, error) {
		seen := map[string]bool{}
		for i := 0; i < requests; i++ {
			body, err := getIn(ctx, ns, url)
			if err != nil {
				got = "no answer"
				return false, err
			}
			body = strings.TrimSpace(body)
			if !backends[body] {
				got = "answered " + body
				return false, fmt.Errorf("%s is not one of its pods", body)
			}
			seen[body] = true
		}
		if len(seen) < 2 {
			got = fmt.Sprintf("only %d of its pods", len(seen))
			return false, fmt.Errorf("%d requests all answered by one pod", requests)
		}
		got = "its pods, spread"
		return true, nil
	})
	if got == "its pods, spread" {
		return got, nil
	}
	return got, err
}

// runChecks runs jobs[i] on out[i], all at once, and waits for them.
func runChecks(out []AppCheck, jobs []func(*AppCheck)) {
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs[i](&out[i])
		}()
	}
	wg.Wait()
}
